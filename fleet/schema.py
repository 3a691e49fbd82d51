"""GET /vehicle-types on the wire: the output serializer that renders it and documents it."""

from __future__ import annotations

from rest_framework import serializers

from core.openapi import EVERY_CALL, operation, shape, success
from fleet.models import ParcelSize


class VehicleTypeOut(serializers.Serializer):
    code = serializers.CharField(help_text="What a pickup group's `vehicle` names.")
    name = serializers.CharField()
    max_parcel_size = serializers.ChoiceField(
        choices=ParcelSize.values, help_text="The largest parcel size it takes (S < M < L < XL)."
    )
    max_parcel_weight_kg = serializers.FloatField(help_text="The heaviest single parcel, in kg.")
    max_load_kg = serializers.FloatField(
        help_text="The most it carries for one pickup group (an order), in kg."
    )
    price_multiplier = serializers.DecimalField(
        max_digits=5,
        decimal_places=2,
        help_text="The delivery price (base fee + distance) is multiplied by this, as a "
        "decimal string like a money amount.",
    )


VehicleTypes = shape("VehicleTypes", vehicle_types=VehicleTypeOut(many=True))

VEHICLE_TYPES = operation(
    "vehicle_types_list",
    "vehicle-types",
    "What can carry a parcel",
    "The active vehicle types, cheapest first: the `vehicle` a pickup group may ask for "
    "(default `motorbike`), the parcels each takes and its price multiplier "
    "(docs/contract.md §18).",
    responses={200: success("VehicleTypes", VehicleTypes), **EVERY_CALL},
)
