"""Events, written in the same transaction as their change, and their webhook deliveries.

An event exists if and only if its change committed (docs/contract.md §11). Each event names one
business and environment; a delivery row per subscribed endpoint is written with it, and
that row (not a task queue) is the source of truth for what still has to be sent.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from accounts.models import Environment


class EventType(models.TextChoices):
    BATCH_CREATED = "batch.created"
    ORDER_STATUS_CHANGED = "order.status_changed"
    ORDER_UPDATED = "order.updated"  # an edit after creation (docs/contract.md §17)
    # Once per drop, when its ETA first passes its drop-off window's end (docs/contract.md §17).
    ORDER_WINDOW_AT_RISK = "order.window_at_risk"
    # Where the courier is and each drop's ETA, at most every COURIER_EVENT_SECONDS per
    # courier while on the way (docs/contract.md §20).
    ORDER_COURIER_POSITION = "order.courier_position"
    WALLET_BALANCE_LOW = "wallet.balance_low"
    INVOICE_ISSUED = "invoice.issued"
    # Cash collected on delivery leaving what we hold for the business (docs/contract.md §18).
    COD_REMITTED = "cod.remitted"
    COD_CREDITED = "cod.credited"
    WEBHOOK_TEST = "webhook.test"


class Event(models.Model):
    # Creation order, for GET /events?after= and for delivery; the public id is `public_id`.
    seq = models.BigAutoField(primary_key=True)
    public_id = models.CharField(max_length=30, unique=True)  # "evt_" + 26 characters
    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    type = models.CharField(max_length=40, choices=EventType.choices)
    data = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["business", "environment", "seq"], name="event_feed"),
            models.Index(fields=["created_at"], name="event_age"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.type}"


class WebhookEndpoint(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    url = models.URLField(max_length=2000)
    # ["*"] or a list of EventType values.
    event_types = models.JSONField(default=list)
    description = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    # Why it was switched off by us (e.g. failing for WEBHOOK_DISABLE_AFTER_DAYS), if it was.
    disabled_reason = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100)
    # After a rotation the old secret also signs, until previous_secret_expires_at.
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    # After an attempt timed out nothing is sent to this endpoint until then (one probe
    # then), so a hanging receiver holds a socket for one timeout per pause, not per event.
    paused_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["business", "environment"], name="endpoint_owner")]

    def __str__(self) -> str:
        return self.url

    def wants(self, event_type: str) -> bool:
        return "*" in self.event_types or event_type in self.event_types


class DeliveryStatus(models.TextChoices):
    PENDING = "PENDING", _("Pending")  # due at next_attempt_at
    SUCCEEDED = "SUCCEEDED", _("Succeeded")
    # The retry schedule ran out, or the endpoint was disabled.
    FAILED = "FAILED", pgettext_lazy("a webhook delivery", "Failed")


class Delivery(models.Model):
    """One event to one endpoint: attempted until a 2xx or the schedule runs out."""

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # While a sender holds it (its attempt in flight, or waiting for its drop's): a lease, so
    # that what a killed worker held comes back; counted against the endpoint's share.
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            # The sweep and the senders read only what is due.
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="PENDING"),
                name="delivery_due",
            ),
            models.Index(fields=["endpoint", "created_at"], name="delivery_log"),
            # An endpoint's claimed deliveries, counted against its share (few at a time).
            models.Index(
                fields=["endpoint", "claimed_until"],
                condition=Q(claimed_until__isnull=False),
                name="delivery_claimed",
            ),
            # A sender claims one endpoint's pending deliveries in creation order.
            models.Index(
                # In creation order; "is it due?" is read from the index alone.
                fields=["endpoint", "id", "next_attempt_at"],
                condition=Q(status="PENDING"),
                name="delivery_queue",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id} ({self.status})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="log")
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    response_excerpt = models.TextField(blank=True)  # the first 1 KB
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.status_code or self.error}"
