"""Offers (docs/contract.md §21): what the plan adds to a courier's run, offered to them for
OFFER_SECONDS.

An offer is one row per order it adds, sharing a `bundle` (the offer's id, as the courier
sees it); the bundle's first row is its `lead` and carries the run's new stop order and the
extra time. The database holds the rules the planners and the couriers race on: an order has
at most one offer open or accepted, a courier holds at most one open offer (one open lead),
and an order is offered to a courier at most once. Two workers or two phones that both try
get an IntegrityError or find the row already moved, never two couriers on one order.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.ids import uuid7
from orders.models import Order


class OfferStatus(models.TextChoices):
    OFFERED = "offered"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    EXPIRED = "expired"
    # An operator assigned the order by hand, or every drop was cancelled, while it was open.
    WITHDRAWN = "withdrawn"
    # An operator took the order back from the courier (accepted, or given by hand): the row
    # says who lost it and when (answered_at), and keeps the order from them for good
    # (offer_once_per_courier), as a decline does.
    TAKEN_BACK = "taken_back"


class Offer(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="offers")
    courier = models.ForeignKey("couriers.Driver", on_delete=models.CASCADE, related_name="offers")
    status = models.CharField(max_length=10, choices=OfferStatus.choices)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    # The offer as the courier answers it: every row of one offer shares its bundle (the
    # lead's own id); only the lead holds the run's new order of stops
    # ([{kind, pass_order_id, drop_id}], orders/runs.py) and the minutes it adds.
    bundle = models.UUIDField(db_index=True)
    lead = models.BooleanField(default=True, db_default=True)
    stops = models.JSONField(null=True, blank=True)
    extra_seconds = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["order", "courier"], name="offer_once_per_courier"),
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(status__in=[OfferStatus.OFFERED, OfferStatus.ACCEPTED]),
                name="offer_one_holder_per_order",
            ),
            models.UniqueConstraint(
                fields=["courier"],
                condition=Q(status=OfferStatus.OFFERED, lead=True),
                name="offer_one_open_per_courier",
            ),
        ]
        indexes = [
            models.Index(
                fields=["expires_at"],
                condition=Q(status=OfferStatus.OFFERED),
                name="offer_open_by_expiry",
            )
        ]

    def __str__(self) -> str:
        return f"offer of {self.order_id} to {self.courier_id} ({self.status})"

    def save(self, *args, **kwargs):
        if self.bundle is None:  # an offer of one order is its own bundle
            self.bundle = self.id
        super().save(*args, **kwargs)
