"""The vehicle types as the hot paths read them."""

from __future__ import annotations

from core.reads import instances_compiled_once
from fleet.models import VehicleType


def active_vehicle_types() -> list[VehicleType]:
    """The active vehicle types, in the model's order. Every batch and quote reads them: on
    PostgreSQL the SQL is compiled once per process and the instances made from the
    driver's rows (core.reads.instances_compiled_once), 0.28 → ~0.1 ms a call
    (docs/decisions.md, "The small calls' SQL and reference data are compiled once per process")."""
    return instances_compiled_once(
        VehicleType, ("active vehicle types",), [], lambda: VehicleType.objects.filter(active=True)
    )
