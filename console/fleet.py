"""Operator console for the fleet: vehicle types (docs/contract.md §18)."""

from __future__ import annotations

from django.contrib import admin

from fleet.models import VehicleType


@admin.register(VehicleType)
class VehicleTypeAdmin(admin.ModelAdmin):
    list_display = [
        "code",
        "name",
        "max_parcel_size",
        "max_parcel_weight_kg",
        "max_load_kg",
        "price_multiplier",
        "active",
    ]
    list_filter = ["active", "max_parcel_size"]
    list_editable = ["active"]

    def get_readonly_fields(self, request, obj=None):
        # Drops name their vehicle type by its code: it never changes once made.
        return ["code"] if obj is not None else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # retire a type by switching it off: drops and plans name it
