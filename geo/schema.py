"""GET /service-areas on the wire: the output serializer that renders it and documents it."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.openapi import EVERY_CALL, operation, schema_field, shape, success
from geo.models import Weekday

# Named enum (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
WEEKDAYS = [day.name.lower() for day in Weekday]
HOUR_MINUTE = r"^\d{2}:\d{2}$"


class WeekdayName(serializers.ChoiceField):
    """The stored weekday number (Monday is 0) as its lower-case English name."""

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=WEEKDAYS, **kwargs)

    def to_representation(self, value: int) -> str:
        return WEEKDAYS[value]


@extend_schema_field({"type": "string", "pattern": HOUR_MINUTE})
class HourMinute(serializers.TimeField):
    """A time of day as HH:MM."""

    def __init__(self, **kwargs) -> None:
        super().__init__(format="%H:%M", **kwargs)


class ServiceTimeZone(serializers.CharField):
    """Every area keeps its hours in the service time zone (settings.TIME_ZONE)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(source="*", **kwargs)

    def to_representation(self, value) -> str:
        return settings.TIME_ZONE


class OpeningHours(serializers.Serializer):
    weekday = WeekdayName()
    opens = HourMinute(help_text="HH:MM, inclusive.")
    closes = HourMinute(help_text="HH:MM, exclusive.")


class ServiceArea(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    polygon = schema_field({"type": "object", "description": "A GeoJSON (Multi)Polygon."})(
        source="geojson"
    )
    time_zone = ServiceTimeZone()
    hours = OpeningHours(many=True)


ServiceAreas = shape("ServiceAreas", areas=ServiceArea(many=True))

SERVICE_AREAS = operation(
    "service_areas_list",
    "service-areas",
    "Where and when we deliver",
    "Active service areas with their polygon, time zone and weekly opening hours.",
    responses={200: success("ServiceAreas", ServiceAreas), **EVERY_CALL},
)
