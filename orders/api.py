"""HTTP for GET /batches: translate a request into a service call and back, nothing else.

A batch is made by POST /orders/bulk, whose view is tracking's with every /orders route
(tracking/api.py, docs/decisions.md "One owner of /orders"); the batch service is here.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from rest_framework import viewsets

from core.api import ApiError, envelope
from core.cursors import InvalidCursor
from core.serializers import QUERY_NOT_VALID, parse_query
from orders.inputs import BatchesQuery
from orders.schema import BATCH, BATCHES
from orders.selectors import batch_detail, list_batches


def base_url_of(request) -> str:
    return settings.BASE_URL or f"{request.scheme}://{request.get_host()}"


class BatchViewSet(viewsets.ViewSet):
    lookup_url_kwarg = "batch_id"
    lookup_value_regex = "[^/]+"

    @BATCHES
    def list(self, request):
        query = parse_query(request, BatchesQuery)
        try:
            page = list_batches(
                business=request.auth.business,
                environment=request.auth.environment,
                limit=query["limit"],
                cursor=query.get("cursor"),
                base_url=base_url_of(request),
            )
        except InvalidCursor as exc:
            detail = {"field": "cursor", "message": str(exc)}
            raise ApiError(400, "VALIDATION_ERROR", QUERY_NOT_VALID, [detail]) from exc
        return envelope(
            {"batches": page.batches, "has_more": page.has_more, "next_cursor": page.next_cursor}
        )

    @BATCH
    def retrieve(self, request, batch_id=None):
        try:
            batch_id = uuid.UUID(batch_id)
        except ValueError as exc:
            raise ApiError(404, "NOT_FOUND", "No such batch.") from exc
        data = batch_detail(
            business=request.auth.business, environment=request.auth.environment, batch_id=batch_id
        )
        if data is None:
            raise ApiError(404, "NOT_FOUND", "No such batch.")
        return envelope(data)
