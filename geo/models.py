"""Service areas with weekly opening hours, the gazetteer of places, and the geocode cache."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone


def validate_area_geojson(value) -> None:
    from geo.geometry import geometry_from_geojson

    try:
        geometry_from_geojson(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


class ServiceArea(models.Model):
    name = models.CharField(max_length=100, unique=True)
    geojson = models.JSONField(
        validators=[validate_area_geojson],
        help_text="A GeoJSON Polygon or MultiPolygon, [longitude, latitude] pairs.",
    )
    active = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Weekday(models.IntegerChoices):
    MONDAY = 0, "Monday"
    TUESDAY = 1, "Tuesday"
    WEDNESDAY = 2, "Wednesday"
    THURSDAY = 3, "Thursday"
    FRIDAY = 4, "Friday"
    SATURDAY = 5, "Saturday"
    SUNDAY = 6, "Sunday"


class OpeningHours(models.Model):
    """Open from `opens` (inclusive) to `closes` (exclusive) in the service time zone."""

    area = models.ForeignKey(ServiceArea, on_delete=models.CASCADE, related_name="hours")
    weekday = models.PositiveSmallIntegerField(choices=Weekday.choices)
    opens = models.TimeField()
    closes = models.TimeField()

    class Meta:
        ordering = ["weekday", "opens"]
        verbose_name_plural = "opening hours"
        constraints = [
            models.CheckConstraint(
                condition=Q(opens__lt=models.F("closes")), name="hours_opens_before_closes"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_weekday_display()} {self.opens:%H:%M}–{self.closes:%H:%M}"


class Place(models.Model):
    """A gazetteer entry for the offline geocoder: the operators' own list (geo/places.py)."""

    name = models.CharField(max_length=200)
    aliases = models.TextField(blank=True, help_text="Other names, one per line.")
    city = models.CharField(max_length=100, blank=True)
    lat = models.FloatField()
    long = models.FloatField()

    class Meta:
        ordering = ["name"]
        permissions = [("load_places", "Can load places from a CSV file")]

    def __str__(self) -> str:
        return self.name


class GeocodeResult(models.Model):
    """A cached geocoder answer, failures included, keyed by the normalised address."""

    provider = models.CharField(max_length=20)
    key = models.CharField(max_length=500)
    found = models.BooleanField()
    lat = models.FloatField(null=True)
    long = models.FloatField(null=True)
    # When the answer was fetched: its lifetime (GEOCODE_TTL_DAYS, GEOCODE_NEGATIVE_TTL_HOURS)
    # counts from here.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "key"], name="geocode_once")]
        indexes = [models.Index(fields=["created_at"], name="geocode_result_age")]

    def __str__(self) -> str:
        return (
            f"{self.provider}: {self.key} → {(self.lat, self.long) if self.found else 'not found'}"
        )
