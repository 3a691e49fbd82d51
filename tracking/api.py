"""HTTP for tracking, cancellation and the sandbox test driver, by the caller's identifiers."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.settings import api_settings

from accounts.permissions import SandboxKeyOnly
from core.api import envelope, json_body
from tracking.inputs import AdvanceRequest, IdentifiersRequest
from tracking.schema import ADVANCE, CANCEL, TRACKING
from tracking.selectors import track_drops
from tracking.services import advance_sandbox_orders, cancel_orders


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
