"""HTTP for listing, tracking, cancellation, edits and the sandbox test driver."""

from __future__ import annotations

import uuid

import orjson
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.settings import api_settings

from accounts.permissions import SandboxKeyOnly
from core.api import ApiError, envelope, json_body
from core.cursors import InvalidCursor
from core.replica import configured as replica_configured
from core.replica import reads_may_lag
from core.serializers import QUERY_NOT_VALID, parse_query
from tracking.edit_inputs import parse_drop_change
from tracking.edits import EditRefused, EditRejected, NotEditable, edit_drop
from tracking.inputs import AdvanceRequest, IdentifiersRequest, OrdersQuery
from tracking.listing import DropFilters, list_drops
from tracking.schema import ADVANCE, CANCEL, EDIT, ORDERS, TRACKING
from tracking.selectors import beside_key, track_drops
from tracking.services import advance_sandbox_orders, cancel_orders


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
    asked: list[str] | None = None  # the identifiers whose drops were read beside the key

    def read_beside_key(self, request, environment: str):
        """Tracking's first read, made by the key's statement (accounts.auth.BesideKey), when
        the body is a valid request and no replica takes the call's reads (core/replica.py)."""
        if self.action != "tracking" or replica_configured():
            return None
        try:  # the raw body: DRF's parse is the view's, with its errors (415, 400)
            self.asked = IdentifiersRequest.parse(orjson.loads(request.body))["identifiers"]
        except (orjson.JSONDecodeError, ApiError):
            return None
        return beside_key(environment, self.asked)

    @TRACKING
    @action(detail=False, methods=["post"])
    @reads_may_lag
    def tracking(self, request):
        identifiers = IdentifiersRequest.parse(json_body(request))["identifiers"]
        read = request.auth.beside is not None and identifiers == self.asked
        orders = track_drops(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
            active=request.auth.beside if read else None,
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


class OrderEditViewSet(viewsets.ViewSet):
    """PATCH /orders/<drop_id> (docs/contract.md §17)."""

    lookup_url_kwarg = "drop_id"
    # Only a UUID is a drop's address: any other /orders/<word> stays an unknown path (a 404
    # in the envelope for every method), not a 405 of this route.
    lookup_value_regex = (
        "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
    )

    @EDIT
    def partial_update(self, request, drop_id=None):
        change = parse_drop_change(json_body(request))
        try:
            drop_uuid = uuid.UUID(drop_id)
        except ValueError as exc:  # not a UUID: no such drop, as any unknown id
            raise ApiError(404, "NOT_FOUND", "No such order.") from exc
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
