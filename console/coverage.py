"""Operator console for coverage: service areas with hours, gazetteer places."""

from __future__ import annotations

from django.contrib import admin

from geo.geocoders import forget_cached_results
from geo.models import GeocodeResult, OpeningHours, Place, ServiceArea


class OpeningHoursInline(admin.TabularInline):
    model = OpeningHours
    extra = 0


@admin.register(ServiceArea)
class ServiceAreaAdmin(admin.ModelAdmin):
    list_display = ["name", "active", "updated_at"]
    list_filter = ["active"]
    inlines = [OpeningHoursInline]


@admin.register(Place)
class PlaceAdmin(admin.ModelAdmin):
    list_display = ["name", "city", "lat", "long"]
    search_fields = ["name", "aliases", "city"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        forget_cached_results()  # cached "not found" answers may now be found

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        forget_cached_results()


@admin.register(GeocodeResult)
class GeocodeResultAdmin(admin.ModelAdmin):
    list_display = ["provider", "key", "found", "lat", "long", "created_at"]
    list_filter = ["provider", "found"]
    search_fields = ["key"]
