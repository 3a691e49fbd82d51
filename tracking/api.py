"""HTTP for every /orders route (bulk and quote, listing, tracking, cancellation, edits) and
for the sandbox test driver: translate a request into a service call and back, nothing else.

The /orders resource has this one owner (docs/decisions.md, "One owner of /orders"): tracking
sits above orders and can call both apps' services; the batch service itself stays in orders.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.http import HttpResponse
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.settings import api_settings

from accounts.permissions import SandboxKeyOnly
from core.api import ApiError, envelope, json_body, json_response
from core.cursors import InvalidCursor
from core.formats import iso_z, money
from core.replica import reads_may_lag
from core.serializers import QUERY_NOT_VALID, parse_query
from orders.api import base_url_of
from orders.errors import BatchRefused, QuoteNotFound
from orders.inputs import batch_of, bulk_request
from orders.schema import BULK, QUOTE
from orders.services import QuoteResult, create_batch, price_breakdown, quote_batch
from tracking.edit_inputs import parse_drop_change
from tracking.edits import EditRefused, EditRejected, NotEditable, edit_drop
from tracking.inputs import AdvanceRequest, IdentifiersRequest, OrdersQuery
from tracking.labels import drop_labels, labels_pdf
from tracking.listing import DropFilters, list_drops
from tracking.schema import ADVANCE, CANCEL, EDIT, LABEL, ORDERS, TRACKING
from tracking.selectors import track_drops
from tracking.services import advance_sandbox_orders, cancel_orders

# The HTTP status of each refusal of the batch service: a conflict with what was sent before,
# but a quote that does not exist (docs/api.md, Errors).
REFUSAL_STATUS: dict[type[BatchRefused], int] = {QuoteNotFound: 404}


def refusal_status(refused: type[BatchRefused]) -> int:
    return REFUSAL_STATUS.get(refused, 409)


class OrderBulkViewSet(viewsets.ViewSet):
    """POST /orders/bulk and POST /orders/quote: calls of the batch service (orders/services.py)."""

    throttle_scope = "default"  # the bulk action counts under its own scope

    @BULK
    # Counted apart from other calls, under RATE_LIMIT_BULK (core/throttling.py).
    @action(detail=False, methods=["post"], url_path="bulk", throttle_scope="bulk")
    def bulk(self, request):
        key, batch_in = bulk_request(request)
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


class OrderListViewSet(viewsets.ViewSet):
    @ORDERS
    @reads_may_lag
    def list(self, request):
        query = parse_query(request, OrdersQuery)
        filters = DropFilters(
            statuses=query.get("status", ()),
            batch_id=query.get("batch_id"),
            created_since=query.get("created_since"),
            updated_since=query.get("updated_since"),
            window_statuses=query.get("window_status", ()),
        )
        try:
            page = list_drops(
                business=request.auth.business,
                environments=[request.auth.environment],
                filters=filters,
                limit=query["limit"],
                cursor=query.get("cursor"),
            )
        except InvalidCursor as exc:
            detail = {"field": "cursor", "message": str(exc)}
            raise ApiError(400, "VALIDATION_ERROR", QUERY_NOT_VALID, [detail]) from exc
        return envelope(
            {"orders": page.orders, "has_more": page.has_more, "next_cursor": page.next_cursor}
        )


class TrackingViewSet(viewsets.ViewSet):
    @TRACKING
    @action(detail=False, methods=["post"])
    @reads_may_lag
    def tracking(self, request):
        identifiers = IdentifiersRequest.parse(json_body(request))["identifiers"]
        orders = track_drops(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
        )
        return envelope({"orders": orders})

    @CANCEL
    @action(detail=False, methods=["post"])
    def cancel(self, request):
        identifiers = IdentifiersRequest.parse(json_body(request))["identifiers"]
        orders = cancel_orders(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
            actor=f"api key {request.auth.key.hint}",
        )
        return envelope({"orders": orders})


# Only a UUID is a drop's address: any other /orders/<word> stays an unknown path (a 404 in
# the envelope for every method), not a 405 of a drop's route.
DROP_ID_PATTERN = "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"


def drop_uuid_of(drop_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(drop_id)
    except ValueError as exc:  # not a UUID: no such drop, as any unknown id
        raise ApiError(404, "NOT_FOUND", "No such order.") from exc


class OrderEditViewSet(viewsets.ViewSet):
    """PATCH /orders/<drop_id> (docs/contract.md §17)."""

    lookup_url_kwarg = "drop_id"
    lookup_value_regex = DROP_ID_PATTERN

    @EDIT
    def partial_update(self, request, drop_id=None):
        change = parse_drop_change(json_body(request))
        drop_uuid = drop_uuid_of(drop_id)
        try:
            entry = edit_drop(
                business=request.auth.business,
                environment=request.auth.environment,
                drop_id=drop_uuid,
                change=change,
            )
        except EditRefused as refused:
            raise edit_refusal(refused) from refused
        return envelope(entry)


class OrderLabelViewSet(viewsets.ViewSet):
    """GET /orders/<drop_id>/label.pdf (docs/contract.md §24): the drop's parcel label."""

    lookup_url_kwarg = "drop_id"
    lookup_value_regex = DROP_ID_PATTERN

    @LABEL
    @action(detail=True, methods=["get"], url_path="label.pdf")
    @reads_may_lag
    def label(self, request, drop_id=None):
        # The PDF whatever the Accept header asks for, as every answer here is JSON whatever
        # it asks for (core.api): a label is what this address is.
        labels = drop_labels(
            business=request.auth.business,
            environments=[request.auth.environment],
            drop_ids=[drop_uuid_of(drop_id)],
        )
        if not labels:
            raise ApiError(404, "NOT_FOUND", "No such order.")
        response = HttpResponse(labels_pdf(labels), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="label-{labels[0].short_code}.pdf"'
        return response


def edit_refusal(refused: EditRefused) -> ApiError:
    """An edit's refusal in the error envelope: the fields it names as details."""
    details = [{"field": name, "message": refused.message} for name in refused.fields]
    if isinstance(refused, EditRejected):
        return ApiError(
            422,
            "EDIT_REJECTED",
            refused.message,
            details,
            extra={"failure_reason": refused.reason.name},
        )
    if isinstance(refused, NotEditable):
        return ApiError(409, "NOT_EDITABLE", refused.message, details)
    return ApiError(404, "NOT_FOUND", refused.message)  # DropNotFound


class SandboxViewSet(viewsets.ViewSet):
    permission_classes = [*api_settings.DEFAULT_PERMISSION_CLASSES, SandboxKeyOnly]

    @ADVANCE
    @action(detail=False, methods=["post"])
    def advance(self, request):
        body = AdvanceRequest.parse(json_body(request))
        orders = advance_sandbox_orders(
            business=request.auth.business, identifiers=body["identifiers"], to=body.get("to")
        )
        return envelope({"orders": orders})


# Every /orders route, as the /api/v1 router registers them under "orders" (config/api_urls.py),
# each (viewset, basename), in the order they are tried: /orders/<drop_id> last, so that it
# never shadows /orders/bulk and the others.
ORDERS_ROUTES = (
    (OrderBulkViewSet, "orders"),
    (TrackingViewSet, "tracking"),
    (OrderListViewSet, "order-list"),
    (OrderLabelViewSet, "order-label"),
    (OrderEditViewSet, "order-edit"),
)
