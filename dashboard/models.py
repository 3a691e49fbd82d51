"""What the dashboard keeps for booking by hand: the business's saved pickup places."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models.functions import Lower


class PickupPlace(models.Model):
    """A place the business's parcels are collected from (a shop, a stall, a warehouse).

    Shared by both environments: the shop is the same place whether it tries the sandbox or
    books live. A booking copies it into the batch's pickup (name, phone, address, pin), so
    editing or deleting a place never changes an order already booked.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    business = models.ForeignKey(
        "accounts.Business", on_delete=models.CASCADE, related_name="pickup_places"
    )
    name = models.CharField(max_length=200)
    phone = models.CharField(max_length=20, help_text="E.164, e.g. +85512345678.")
    address = models.CharField(max_length=300, blank=True)
    lat = models.FloatField()
    long = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = [Lower("name"), "created_at"]
        constraints = [
            # One name once per business: the booking form lists the places by name.
            models.UniqueConstraint(
                "business", Lower("name"), name="pickup_place_name_once_per_business"
            ),
            models.CheckConstraint(
                condition=models.Q(lat__gte=-90, lat__lte=90, long__gte=-180, long__lte=180),
                name="pickup_place_pin_on_earth",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def pickup_body(self) -> dict:
        """The bulk body's `pickup` (docs/contract.md §4): the saved pin wins over the text."""
        body: dict = {"name": self.name, "phone": self.phone, "lat": self.lat, "long": self.long}
        if self.address:
            body["address"] = {"complete_address": self.address}
        return body
