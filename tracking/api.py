"""HTTP for tracking by the caller's identifiers."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.decorators import action

from config.api import envelope
from tracking.inputs import parse_identifiers
from tracking.selectors import track_drops


class TrackingViewSet(viewsets.ViewSet):
    @action(detail=False, methods=["post"])
    def tracking(self, request):
        identifiers = parse_identifiers(request.data)
        orders = track_drops(
            business=request.auth.business,
            environment=request.auth.environment,
            identifiers=identifiers,
        )
        return envelope({"orders": orders})
