"""Operator console for coverage: service areas with hours, drawn on a map, and the geocode
cache (places: console/places.py)."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin

from console.columns import ServiceTimesAdmin
from geo.models import GeocodeResult, OpeningHours, ServiceArea
from tracking.page_data import map_tiles


class AreaMapInput(forms.Textarea):
    """An area's GeoJSON as a map to draw on (Leaflet.draw, console/area_map.js) above the
    text it stays in step with. The text is what the form sends: without JavaScript, or for
    exact coordinates, it is edited as before, and the server checks it either way."""

    template_name = "console/widgets/area_map.html"

    class Media:
        css = {
            "all": [
                "leaflet/leaflet.css",
                "vendor/leaflet-draw/leaflet.draw.css",
                "console/area_map.css",
            ]
        }
        js = ["leaflet/leaflet.js", "vendor/leaflet-draw/leaflet.draw.js", "console/area_map.js"]

    def get_context(self, name: str, value, attrs: dict | None) -> dict:
        context = super().get_context(name, value, attrs)
        context["widget"]["tiles"] = json.dumps(map_tiles())
        return context


class ServiceAreaForm(forms.ModelForm):
    class Meta:
        model = ServiceArea
        fields = ["name", "geojson", "active"]
        labels = {"geojson": "Area"}
        widgets = {"geojson": AreaMapInput(attrs={"rows": 6, "spellcheck": "false"})}
        help_texts = {
            "geojson": "Draw the area on the map: the polygon tool adds a part, the edit tool "
            "moves its corners, the bin removes one. The GeoJSON below (a Polygon or "
            "MultiPolygon, [longitude, latitude] pairs) follows the map; edit it for exact "
            "coordinates and the map follows it."
        }


class OpeningHoursInline(admin.TabularInline):
    model = OpeningHours
    extra = 0


@admin.register(ServiceArea)
class ServiceAreaAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    list_display = ["name", "active", "updated_at"]
    list_filter = ["active"]
    form = ServiceAreaForm
    inlines = [OpeningHoursInline]


@admin.register(GeocodeResult)
class GeocodeResultAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    list_display = ["provider", "key", "found", "lat", "long", "created_at"]
    list_filter = ["provider", "found"]
    search_fields = ["key"]
