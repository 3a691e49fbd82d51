"""HTTP for tracking, cancellation and the sandbox test driver, by the caller's identifiers."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.decorators import action

from accounts.models import Environment
from config.openapi import ADVANCE, CANCEL, TRACKING
from core.api import ApiError, envelope, json_body, validation_error
from tracking.inputs import parse_identifiers
from tracking.lifecycle import ADVANCE_TARGETS
from tracking.selectors import track_drops
from tracking.services import advance_sandbox_orders, cancel_orders


class TrackingViewSet(viewsets.ViewSet):
    @TRACKING
    @action(detail=False, methods=["post"])
    def tracking(self, request):
        identifiers = parse_identifiers(json_body(request))
        orders = track_drops(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
        )
        return envelope({"orders": orders})

    @CANCEL
    @action(detail=False, methods=["post"])
    def cancel(self, request):
        identifiers = parse_identifiers(json_body(request))
        orders = cancel_orders(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
            actor=f"api key {request.auth.key.hint}",
        )
        return envelope({"orders": orders})


class SandboxViewSet(viewsets.ViewSet):
    @ADVANCE
    @action(detail=False, methods=["post"])
    def advance(self, request):
        if request.auth.environment != Environment.SANDBOX:
            raise ApiError(403, "SANDBOX_ONLY", "The test driver works with sandbox keys only.")
        identifiers = parse_identifiers(json_body(request))
        to = request.data.get("to")
        if to is not None and (not isinstance(to, str) or to not in ADVANCE_TARGETS):
            raise validation_error(
                [
                    {
                        "field": "to",
                        "message": f"Must be one of {', '.join(sorted(ADVANCE_TARGETS))}.",
                    }
                ]
            )
        orders = advance_sandbox_orders(
            business=request.auth.business, identifiers=identifiers, to=to
        )
        return envelope({"orders": orders})
