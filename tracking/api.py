"""HTTP for listing, tracking, cancellation and the sandbox test driver."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.settings import api_settings

from accounts.permissions import SandboxKeyOnly
from core.api import ApiError, envelope, json_body
from core.cursors import InvalidCursor
from core.serializers import QUERY_NOT_VALID, parse_query
from tracking.inputs import AdvanceRequest, IdentifiersRequest, OrdersQuery
from tracking.listing import DropFilters, list_drops
from tracking.schema import ADVANCE, CANCEL, ORDERS, TRACKING
from tracking.selectors import track_drops
from tracking.services import advance_sandbox_orders, cancel_orders


class OrderListViewSet(viewsets.ViewSet):
    @ORDERS
    def list(self, request):
        query = parse_query(request, OrdersQuery)
        filters = DropFilters(
            statuses=query.get("status", ()),
            batch_id=query.get("batch_id"),
            created_since=query.get("created_since"),
            updated_since=query.get("updated_since"),
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
