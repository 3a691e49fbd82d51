"""HTTP for batches: translate a request into a service call and back, nothing else."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from rest_framework import viewsets
from rest_framework.decorators import action

from accounts.models import Environment
from core.api import ApiError, envelope, json_body, json_response, validation_error
from core.cursors import InvalidCursor
from core.formats import iso_z, money
from core.serializers import QUERY_NOT_VALID, parse_query
from orders.errors import BatchRefused, QuoteNotFound
from orders.inputs import BatchesQuery, BatchIn, idempotency_key_from, parse_batch
from orders.schema import BATCH, BATCHES, BULK, QUOTE
from orders.selectors import batch_detail, list_batches
from orders.services import QuoteResult, create_batch, price_breakdown, quote_batch

# The HTTP status of each refusal of the batch service: a conflict with what was sent before,
# but a quote that does not exist (docs/api.md, Errors).
REFUSAL_STATUS: dict[type[BatchRefused], int] = {QuoteNotFound: 404}


def refusal_status(refused: type[BatchRefused]) -> int:
    return REFUSAL_STATUS.get(refused, 409)


def base_url_of(request) -> str:
    return settings.BASE_URL or f"{request.scheme}://{request.get_host()}"


def batch_of(request) -> BatchIn:
    """The body of a bulk or quote call, checked; a live key may not send sandbox scenarios."""
    batch = parse_batch(json_body(request))
    if request.auth.environment == Environment.LIVE and batch.scenario_fields:
        message = "sandbox_scenario is for sandbox keys only."
        raise validation_error([{"field": f, "message": message} for f in batch.scenario_fields])
    return batch


class OrderViewSet(viewsets.ViewSet):
    throttle_scope = "default"  # the bulk action counts under its own scope

    @BULK
    # Counted apart from other calls, under RATE_LIMIT_BULK (core/throttling.py).
    @action(detail=False, methods=["post"], url_path="bulk", throttle_scope="bulk")
    def bulk(self, request):
        key = idempotency_key_from(request)
        batch_in = batch_of(request)
        try:
            result = create_batch(
                business=request.auth.business,
                environment=request.auth.environment,
                idempotency_key=key,
                batch=batch_in,
                base_url=base_url_of(request),
            )
        except BatchRefused as refused:
            raise ApiError(
                refusal_status(type(refused)), refused.code, refused.message
            ) from refused
        headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
        return json_response(result.body, 200, headers)

    @QUOTE
    @action(detail=False, methods=["post"], url_path="quote", throttle_scope="bulk")
    def quote(self, request):
        result = quote_batch(
            business=request.auth.business,
            environment=request.auth.environment,
            batch=batch_of(request),
        )
        return envelope(quote_data(result))


def quote_data(result: QuoteResult) -> dict:
    """The answer of POST /orders/quote (docs/contract.md §12)."""
    quote, orders = result.quote, []
    for decision in result.decisions.drops:
        drop = decision.drop
        entry = {"client_order_id": drop.client_order_id, "external_waybill": drop.external_waybill}
        if decision.accepted:
            entry |= {
                "status": "quotable",
                "price": money(decision.price),
                "price_breakdown": price_breakdown(decision),
            }
            entry |= decision.resolved_pins()
        else:
            entry |= {
                "status": "rejected",
                "failure_reason": decision.reason.name,
                "message": decision.message,
            }
        orders.append(entry)
    quotable = result.decisions.accepted
    return {
        "quote_id": str(quote.pk),
        "expires_at": iso_z(quote.expires_at),
        "environment": quote.environment,
        "currency": settings.CURRENCY,
        "total_price": money(sum((d.price for d in quotable), Decimal("0.00"))),
        "counts": {
            "total": len(orders),
            "quotable": len(quotable),
            "rejected": len(orders) - len(quotable),
        },
        "orders": orders,
    }


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
