"""HTTP for coverage: GET /service-areas."""

from __future__ import annotations

from django.conf import settings
from rest_framework import viewsets

from config.openapi import SERVICE_AREAS
from core.api import envelope
from geo.models import ServiceArea


class ServiceAreaViewSet(viewsets.ViewSet):
    @SERVICE_AREAS
    def list(self, request):
        areas = [
            {
                "id": area.id,
                "name": area.name,
                "polygon": area.geojson,
                "time_zone": settings.TIME_ZONE,
                "hours": [
                    {
                        "weekday": h.get_weekday_display().lower(),
                        "opens": h.opens.strftime("%H:%M"),
                        "closes": h.closes.strftime("%H:%M"),
                    }
                    for h in area.hours.all()
                ],
            }
            for area in ServiceArea.objects.filter(active=True).prefetch_related("hours")
        ]
        return envelope({"areas": areas})
