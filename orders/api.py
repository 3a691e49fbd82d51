"""HTTP for batches: translate a request into a service call and back, nothing else."""

from __future__ import annotations

import uuid

from django.conf import settings
from rest_framework import viewsets
from rest_framework.decorators import action

from core.api import ApiError, envelope, json_body, json_response
from orders.errors import BatchRefused
from orders.inputs import idempotency_key_from, parse_batch
from orders.schema import BATCH, BULK
from orders.selectors import batch_detail
from orders.services import create_batch


def base_url_of(request) -> str:
    return settings.BASE_URL or f"{request.scheme}://{request.get_host()}"


class OrderViewSet(viewsets.ViewSet):
    throttle_scope = "default"  # the bulk action counts under its own scope

    @BULK
    # Counted apart from other calls, under RATE_LIMIT_BULK (core/throttling.py).
    @action(detail=False, methods=["post"], url_path="bulk", throttle_scope="bulk")
    def bulk(self, request):
        key = idempotency_key_from(request)
        batch_in = parse_batch(json_body(request))
        try:
            result = create_batch(
                business=request.auth.business,
                environment=request.auth.environment,
                idempotency_key=key,
                batch=batch_in,
                base_url=base_url_of(request),
            )
        except BatchRefused as refused:
            raise ApiError(409, refused.code, refused.message) from refused
        headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
        return json_response(result.body, 200, headers)


class BatchViewSet(viewsets.ViewSet):
    lookup_url_kwarg = "batch_id"
    lookup_value_regex = "[^/]+"

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
