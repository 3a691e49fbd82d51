"""Couriers (docs/contract.md §20): the courier (Driver), their credentials and positions, and
what they are paid per vehicle type (PayPlan, §24)."""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from fleet.models import DEFAULT_VEHICLE, VehicleType


class Driver(models.Model):
    """A courier (docs/contract.md §20): who carries an order. One signs in to the courier app
    with phone and password (a password hash; none: cannot sign in); the sandbox test driver
    is the simulated one. Deactivated, a courier's sessions and tokens stop working."""

    name = models.CharField(max_length=200)
    phone = models.CharField(max_length=20, help_text="E.164, e.g. +85512345678: the sign-in.")
    is_sandbox_test_driver = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    vehicle = models.CharField(
        max_length=20,
        default=DEFAULT_VEHICLE,
        db_default=DEFAULT_VEHICLE,
        help_text="A vehicle type's code (fleet): what the courier rides.",
    )
    password = models.CharField(max_length=128, blank=True, default="", db_default="")
    online = models.BooleanField(default=False, db_default=False)
    online_changed_at = models.DateTimeField(null=True, blank=True)
    # When the courier's shift ends (docs/contract.md §21): the planner adds nothing to their
    # run that would keep them past it. None: no end set.
    shift_ends_at = models.DateTimeField(null=True, blank=True)
    # Moved on by every password change and deactivation (couriers.services): part of the
    # stamp each app session and token carries, so none signed in before outlives the change.
    credential_version = models.PositiveIntegerField(default=0, db_default=0)

    class Meta:
        # The table it had when it lived in orders: rows and foreign keys stay as they are.
        db_table = "orders_driver"
        verbose_name = "courier"
        constraints = [
            # One built-in test driver: the first concurrent sandbox advances race to create it.
            models.UniqueConstraint(
                fields=["is_sandbox_test_driver"],
                condition=Q(is_sandbox_test_driver=True),
                name="one_sandbox_test_driver",
            ),
            # The phone is the sign-in: one courier per phone among those who can sign in.
            models.UniqueConstraint(
                fields=["phone"], condition=~Q(password=""), name="courier_phone_signs_in_once"
            ),
        ]
        permissions = [("manage_courier", "Can create couriers and set their passwords")]

    def __str__(self) -> str:
        return self.name


class CourierToken(models.Model):
    """A courier app's bearer token (crr_ + 40 characters). Only its SHA-256 digest is stored;
    deleting the row revokes it (DELETE /courier/session, a password change, deactivation)."""

    courier = models.ForeignKey(Driver, on_delete=models.CASCADE, related_name="tokens")
    digest = models.CharField(max_length=64, unique=True)
    # The courier's credential stamp when the token was issued (credential_stamp): a
    # password change or deactivation changes the courier's, and the token stops working.
    stamp = models.CharField(max_length=64, default="", db_default="")
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


# A pay plan's amounts: exact money in the account currency, never negative.
PAY = {
    "max_digits": 8,
    "decimal_places": 2,
    "default": Decimal("0.00"),
    "validators": [MinValueValidator(Decimal("0.00"))],
}


class PayPlan(models.Model):
    """What a courier riding a vehicle type earns (docs/contract.md §24): per delivered drop,
    per km of the run, per return. One plan per vehicle type; a type without one pays
    nothing. Earnings are priced with the plan in force when they are read (couriers/pay.py,
    docs/decisions.md "Couriers' pay: the plan in force when it is read")."""

    vehicle = models.OneToOneField(
        VehicleType, on_delete=models.PROTECT, primary_key=True, related_name="pay_plan"
    )
    per_drop = models.DecimalField("per delivered drop", **PAY)
    per_km = models.DecimalField("per km of the run", **PAY)
    per_return = models.DecimalField("per return", **PAY)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "pay plan"
        constraints = [
            models.CheckConstraint(
                condition=Q(per_drop__gte=0) & Q(per_km__gte=0) & Q(per_return__gte=0),
                name="pay_plan_non_negative",
            ),
        ]
        permissions = [("export_pay", "Can export couriers' pay (CSV)")]

    def __str__(self) -> str:
        return f"Pay plan for {self.vehicle_id}"
