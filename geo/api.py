"""HTTP for coverage: GET /service-areas."""

from __future__ import annotations

from rest_framework import viewsets

from core.api import envelope
from geo.models import ServiceArea
from geo.schema import SERVICE_AREAS, ServiceAreas


class ServiceAreaViewSet(viewsets.ViewSet):
    @SERVICE_AREAS
    def list(self, request):
        areas = ServiceArea.objects.filter(active=True).prefetch_related("hours")
        return envelope(ServiceAreas({"areas": areas}).data)
