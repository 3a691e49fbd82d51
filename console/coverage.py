"""Operator console for coverage: service areas with hours, the geocode cache (places:
console/places.py)."""

from __future__ import annotations

from django.contrib import admin

from console.columns import ServiceTimesAdmin
from geo.models import GeocodeResult, OpeningHours, ServiceArea


class OpeningHoursInline(admin.TabularInline):
    model = OpeningHours
    extra = 0


@admin.register(ServiceArea)
class ServiceAreaAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    list_display = ["name", "active", "updated_at"]
    list_filter = ["active"]
    inlines = [OpeningHoursInline]


@admin.register(GeocodeResult)
class GeocodeResultAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    list_display = ["provider", "key", "found", "lat", "long", "created_at"]
    list_filter = ["provider", "found"]
    search_fields = ["key"]
