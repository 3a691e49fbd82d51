"""Couriers' credentials and positions (docs/contract.md §20); the courier is orders.Driver."""

from __future__ import annotations

from django.db import models

from orders.models import Driver


class CourierToken(models.Model):
    """A courier app's bearer token (crr_ + 40 characters). Only its SHA-256 digest is stored."""

    courier = models.ForeignKey(Driver, on_delete=models.CASCADE, related_name="tokens")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"token of {self.courier_id}"


class CourierPosition(models.Model):
    """A courier's latest position: one row per courier, replaced in one statement."""

    courier = models.OneToOneField(
        Driver, on_delete=models.CASCADE, primary_key=True, related_name="position"
    )
    lat = models.FloatField()
    long = models.FloatField()
    at = models.DateTimeField()
    accuracy = models.FloatField(null=True, blank=True)
    # When order.courier_position last went out for this courier's orders (tracking).
    event_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The dispatcher's candidates: the couriers inside a box around the pickups (§21).
        indexes = [models.Index(fields=["lat", "long"], name="courier_position_box")]

    def __str__(self) -> str:
        return f"{self.courier_id} at {self.lat:.5f},{self.long:.5f} ({self.at:%H:%M:%S})"


class CourierPoint(models.Model):
    """The trail: every position a courier sent, kept COURIER_TRAIL_HOURS (a periodic job
    prunes older points by the `at` index)."""

    id = models.BigAutoField(primary_key=True)
    courier = models.ForeignKey(Driver, on_delete=models.CASCADE, related_name="+", db_index=False)
    lat = models.FloatField()
    long = models.FloatField()
    at = models.DateTimeField()
    accuracy = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["courier", "at"], name="courier_trail"),
            models.Index(fields=["at"], name="courier_trail_age"),
        ]

    def __str__(self) -> str:
        return f"{self.courier_id} at {self.lat:.5f},{self.long:.5f} ({self.at:%H:%M:%S})"
