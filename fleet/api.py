"""HTTP for the fleet: GET /vehicle-types."""

from __future__ import annotations

from rest_framework import viewsets

from core.api import envelope
from fleet.models import VehicleType
from fleet.schema import VEHICLE_TYPES, VehicleTypes


class VehicleTypeViewSet(viewsets.ViewSet):
    @VEHICLE_TYPES
    def list(self, request):
        types = VehicleType.objects.filter(active=True)
        return envelope(VehicleTypes({"vehicle_types": types}).data)
