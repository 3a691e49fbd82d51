"""Batches, orders (one per pickup group), drops (one trackable order each) and their events."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from accounts.models import Environment
from core.ids import uuid7
from fleet.models import DEFAULT_VEHICLE, ParcelSize
from orders.short_codes import SHORT_CODE_LENGTH, SHORT_CODE_UNIQUE, NewShortCode
from orders.statuses import ACTIVE_STATUSES, FINISHED_STATUSES, INITIAL_STATUSES, DropStatus

MONEY = {"max_digits": 12, "decimal_places": 2}


class BatchStatus(models.TextChoices):
    PROCESSING = "PROCESSING", _("Processing")
    COMPLETED = "COMPLETED", _("Completed")
    PARTIAL = "PARTIAL", _("Partial")
    FAILED = "FAILED", pgettext_lazy("a batch", "Failed")


class FailureReason(models.TextChoices):
    RECIPIENT_UNAVAILABLE = "RECIPIENT_UNAVAILABLE", _("Recipient unavailable")
    ADDRESS_NOT_FOUND = "ADDRESS_NOT_FOUND", _("Address not found")
    REFUSED = "REFUSED", _("Refused by the recipient")
    WRONG_PIN = "WRONG_PIN", _("Wrong PIN (three times)")
    OTHER = "OTHER", _("Other")


class ProofMethod(models.TextChoices):
    PIN = "pin", _("PIN")
    PHOTO = "photo", _("Photo")
    SIGNATURE = "signature", _("Signature")
    NONE = "none", _("None")


class UndeliverableAction(models.TextChoices):
    """What happens to a parcel whose delivery failed (docs/contract.md §19)."""

    RETURN = "return", _("Return to the pickup")
    DISPOSE = "dispose", _("Dispose")


class WindowStatus(models.TextChoices):
    """Whether a drop keeps its drop-off window (docs/contract.md §17); null without one."""

    ON_TRACK = "on_track", _("On track")
    AT_RISK = "at_risk", _("At risk")  # still active, and the ETA is after the window's end
    MET = "met", _("Met")  # delivered by the window's end
    MISSED = "missed", _("Missed")  # finished otherwise: delivered late, failed or cancelled


class SandboxScenario(models.TextChoices):
    """What the sandbox test driver does with a drop by itself (docs/contract.md §14)."""

    MANUAL = "manual", _("Manual (moves only by /sandbox/orders/advance)")
    DELIVER = "deliver", _("Deliver")
    FAIL = "fail", _("Fail (recipient unavailable)")
    CANCEL_BY_COURIER = "cancel_by_courier", _("Cancelled by the courier")


# A drop as the bulk call wrote it and nothing has changed since: still in the status it was
# created in, and updated_at still its created_at. Every move stamps updated_at
# (tracking.lifecycle), so a drop that has moved is never one of these, whatever its status.
UNCHANGED_SINCE_CREATED = Q(status__in=INITIAL_STATUSES, updated_at=F("created_at"))


# Who made a drop's first status: the bulk call (the creation "event" is the drop row).
CREATION_ACTOR = "api"


def initial_status(*, scheduled: bool) -> str:
    """A drop starts SCHEDULED when its pickup was scheduled, else PENDING (docs/contract.md §5)."""
    return _SCHEDULED if scheduled else _PENDING


# As plain strings: the hot paths call initial_status() per drop, and an enum member costs
# a descriptor call on every access.
_SCHEDULED, _PENDING = DropStatus.SCHEDULED.value, DropStatus.PENDING.value


class Batch(models.Model):
    # Time-ordered ids (core/ids.py) for batches, orders and drops: new rows go to the right
    # edge of their indexes instead of to random pages.
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    business = models.ForeignKey(
        "accounts.Business", on_delete=models.PROTECT, related_name="batches"
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    client_batch_id = models.CharField(max_length=100)
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(
        max_length=10, choices=BatchStatus.choices, default=BatchStatus.PROCESSING
    )
    total = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    # The full response, byte for byte, so that a replay is identical to the first answer.
    response = models.BinaryField(default=b"")
    created_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["-created_at"]
        # GET /batches, newest first (orders/selectors.py).
        indexes = [
            models.Index(
                fields=["business", "environment", "created_at", "id"], name="batch_listing"
            )
        ]
        constraints = [
            # A FAILED batch created nothing, so it reserves nothing (docs/contract.md §4); keep
            # the condition in step with orders.services.RESERVING_BATCHES_SQL.
            models.UniqueConstraint(
                fields=["business", "environment", "client_batch_id"],
                condition=~Q(status=BatchStatus.FAILED),
                name="client_batch_id_once_unless_failed",
            ),
            # What an order's foreign key to its batch points at (order_belongs_to_its_batch,
            # migration 0009): the order's business and environment are its batch's.
            models.UniqueConstraint(
                fields=["id", "business", "environment"], name="batch_owner_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.client_batch_id} ({self.status})"


class IdempotencyRecord(models.Model):
    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    key = models.UUIDField()
    fingerprint = models.CharField(max_length=64)
    batch = models.ForeignKey(Batch, null=True, on_delete=models.CASCADE)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment", "key"], name="idempotency_key_once"
            )
        ]
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return str(self.key)


class Quote(models.Model):
    """What a batch body would cost and which drops would be refused, for QUOTE_TTL_MINUTES.

    Decided exactly as a batch is (orders.decisions), written nowhere else: a bulk body
    carrying its id is charged these prices (docs/contract.md §12), whatever the plan says by then.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    business = models.ForeignKey("accounts.Business", on_delete=models.CASCADE)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    # SHA-256 of the body as sent (a bulk body must match it, less its quote_id).
    fingerprint = models.CharField(max_length=64)
    # One entry per drop in submission order: its price as a string, or null if refused.
    prices = models.JSONField()
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # The one batch that accepted drops at these prices.
    batch = models.OneToOneField(
        Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="quote"
    )

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="quote_expiry")]

    def __str__(self) -> str:
        return str(self.id)

    def decimal_prices(self) -> list[Decimal | None]:
        return [None if price is None else Decimal(price) for price in self.prices]


class Order(models.Model):
    """One pickup group with at least one accepted drop: one driver runs it."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # The composite key (batch_id, business_id, environment) → the batch's own (migration
    # 0009) stands for Django's constraint on batch_id.
    batch = models.ForeignKey(
        Batch, on_delete=models.PROTECT, related_name="orders", db_constraint=False
    )
    business = models.ForeignKey("accounts.Business", on_delete=models.PROTECT)
    environment = models.CharField(max_length=10, choices=Environment.choices)
    pickup_name = models.CharField(max_length=200)
    pickup_phone = models.CharField(max_length=20)
    pickup_lat = models.FloatField()
    pickup_long = models.FloatField()
    pickup_address = models.JSONField(null=True, blank=True)
    pickup_resolved = models.BooleanField(default=False, help_text="Pin came from the geocoder.")
    pickup_scheduled_at = models.DateTimeField(null=True, blank=True)
    # The courier (couriers.Driver), named by string: orders sits below couriers (no import).
    driver = models.ForeignKey("couriers.Driver", null=True, blank=True, on_delete=models.PROTECT)
    # The vehicle type's code (fleet.VehicleType, docs/contract.md §18), checked against the
    # active types when the batch is read. A code, not a foreign key: types are never deleted
    # (the console forbids it), and the batch's COPY stays free of a check per order.
    vehicle = models.CharField(max_length=20, default=DEFAULT_VEHICLE, db_default=DEFAULT_VEHICLE)
    created_at = models.DateTimeField()
    # Dispatch (docs/contract.md §21): when operators were told nobody accepted the order in
    # DISPATCH_ESCALATE_MINUTES, and whether the dispatcher is done with it although nobody
    # drives it (every drop cancelled): done, it leaves the waiting orders' index.
    dispatch_flagged_at = models.DateTimeField(null=True, blank=True)
    dispatch_closed = models.BooleanField(default=False, db_default=False)
    # The courier's run the order is on (orders/runs.py): every order of one run shares the
    # id while the run has a stop to do; and where the pickup stands in the run's order.
    run_id = models.UUIDField(null=True, blank=True)
    pickup_run_position = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The dispatcher's queue: live orders nobody drives yet, oldest first.
            models.Index(
                fields=["created_at"],
                condition=Q(
                    driver__isnull=True, environment=Environment.LIVE, dispatch_closed=False
                ),
                name="order_waiting_for_courier",
            ),
        ]
        constraints = [
            # What a drop's owner check looks up (drop_belongs_to_its_order, migration 0009):
            # a drop's order, batch, business and environment agree in one probe.
            models.UniqueConstraint(
                fields=["id", "batch", "business", "environment"], name="order_owner_key"
            )
        ]

    def __str__(self) -> str:
        return str(self.id)


class Drop(models.Model):
    """One drop-off: one trackable order, keyed by the caller's client_order_id."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # Checked together, per statement, by the trigger drop_belongs_to_its_order (migration
    # 0009): the drop's order exists and has the drop's batch, business and environment. One
    # anti-join per COPY instead of three foreign-key queries per drop at commit, so Django
    # creates no constraint of its own for them (db_constraint=False).
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="drops", db_constraint=False
    )
    # No index of its own: a batch's drops are found through its orders (orders.batch_id,
    # then drops.order_id), which a new drop's row would otherwise be indexed for twice.
    batch = models.ForeignKey(
        Batch, on_delete=models.PROTECT, related_name="drops", db_constraint=False, db_index=False
    )
    # Every index of drops that looks up by business leads with it: no index of its own.
    business = models.ForeignKey(
        "accounts.Business", on_delete=models.PROTECT, db_constraint=False, db_index=False
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    client_order_id = models.CharField(max_length=100)
    # null, not "": the result echoes "external_waybill": null when none was sent.
    external_waybill = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    recipient_name = models.CharField(max_length=200)
    recipient_phone = models.CharField(max_length=20)
    # Optional, for the business's email notifications (docs/notifications.md); null when none.
    recipient_email = models.CharField(max_length=254, null=True, blank=True)  # noqa: DJ001
    # "km" or "en" as the caller sent it (docs/contract.md §26); none: the business's setting.
    recipient_language = models.CharField(  # noqa: DJ001
        max_length=5, choices=settings.LANGUAGES, null=True, blank=True
    )
    lat = models.FloatField()
    long = models.FloatField()
    address = models.JSONField(null=True, blank=True)
    resolved = models.BooleanField(default=False, help_text="Pin came from the geocoder.")
    status = models.CharField(max_length=10, choices=DropStatus.choices)
    price = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Proof of delivery: the PIN the recipient gives the courier, when the drop asked for one.
    dropoff_pin = models.CharField(max_length=4, null=True, blank=True)  # noqa: DJ001
    pin_attempts = models.PositiveSmallIntegerField("wrong PIN attempts", default=0, db_default=0)
    # docs/contract.md §24: the courier's PICKED_UP and DELIVERED moves carry the label's code
    # (short_code); the DELIVERED move carries the recipient's signature, drawn in the app.
    needs_scan = models.BooleanField(default=False, db_default=False)
    needs_signature = models.BooleanField(default=False, db_default=False)
    pod_method = models.CharField(  # noqa: DJ001
        "proof of delivery", max_length=9, choices=ProofMethod.choices, null=True, blank=True
    )
    pod_received_by = models.CharField(  # noqa: DJ001
        "received by", max_length=200, null=True, blank=True
    )
    pod_photo = models.FileField(  # noqa: DJ001
        "delivery photo", upload_to="proof/%Y/%m/", null=True, blank=True
    )
    pod_signature = models.FileField(  # noqa: DJ001
        "delivery signature", upload_to="proof/%Y/%m/", null=True, blank=True
    )
    failure_reason = models.CharField(  # noqa: DJ001
        max_length=21, choices=FailureReason.choices, null=True, blank=True
    )
    # Sandbox only: the scenario the test driver walks by itself, and when its next step is due.
    sandbox_scenario = models.CharField(  # noqa: DJ001
        max_length=17, choices=SandboxScenario.choices, null=True, blank=True
    )
    scenario_next_at = models.DateTimeField(null=True, blank=True)
    # Where the courier is, as a fraction of the way from pickup to drop (0 = at the pickup),
    # while one is on the way; only the sandbox simulation sets it today.
    courier_progress = models.FloatField(null=True, blank=True)
    # The drop's place on its order's route (docs/contract.md §21): 1 = the first drop after
    # the pickup, and the ride from the pickup through the stops before it to this one (km).
    # Set before the offer (orders/stops.py); none until then.
    stop_sequence = models.PositiveSmallIntegerField(null=True, blank=True)
    route_km = models.FloatField(null=True, blank=True)
    # Where the drop stands in its courier's run (orders/runs.py), other orders' stops
    # included: written by the planner's accepted offer or a hand assignment.
    run_position = models.PositiveIntegerField(null=True, blank=True)
    # The promise to the recipient and the word to the courier (docs/contract.md §17).
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    notes = models.CharField(max_length=500, null=True, blank=True)  # noqa: DJ001
    # Kept current by every move and every minute (tracking/window_watch.py): GET /orders filters
    # on it through its own index. While on_track, window_risk_at is when the ETA passes the
    # window's end if nothing moves (the ETA model only grows with time until a move), so the
    # minute's job finds the drops turning at_risk by index; window_alerted once it has said so.
    window_status = models.CharField(  # noqa: DJ001
        max_length=8, choices=WindowStatus.choices, null=True, blank=True
    )
    window_risk_at = models.DateTimeField(null=True, blank=True)
    window_alerted = models.BooleanField(default=False, db_default=False)
    # A failed delivery's parcel: back to the pickup, or disposed of (docs/contract.md §19).
    undeliverable_action = models.CharField(
        max_length=7,
        choices=UndeliverableAction.choices,
        default=UndeliverableAction.RETURN,
        db_default=UndeliverableAction.RETURN,
    )
    returned_at = models.DateTimeField(null=True, blank=True)
    return_received_by = models.CharField(  # noqa: DJ001
        "return received by", max_length=200, null=True, blank=True
    )
    # What is carried (docs/contract.md §18): size S to XL, weight in kg; what it is and is
    # worth, as the business says. Defaults are the contract's (S, 1 kg).
    parcel_size = models.CharField(
        max_length=2, choices=ParcelSize.choices, default=ParcelSize.S, db_default=ParcelSize.S
    )
    parcel_weight_kg = models.DecimalField(
        max_digits=8, decimal_places=3, default=Decimal("1"), db_default=Decimal("1")
    )
    parcel_description = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    parcel_value = models.DecimalField(**MONEY, null=True, blank=True)
    # Cash on delivery: what the courier collects at the door, the fee it added to `price`
    # (price = delivery + cod_fee), and when the cash was taken (the DELIVERED move).
    cod_amount = models.DecimalField(**MONEY, null=True, blank=True)
    cod_fee = models.DecimalField(**MONEY, default=Decimal("0.00"), db_default=Decimal("0.00"))
    cod_collected_at = models.DateTimeField(null=True, blank=True)
    # docs/contract.md §24: what the label's barcode and QR code carry (orders/short_codes.py).
    # A batch sends its own; the database makes one for any other drop.
    short_code = models.CharField(
        max_length=SHORT_CODE_LENGTH, db_default=NewShortCode(), editable=False
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # The database's own guarantee that a client_order_id has one active drop.
            models.UniqueConstraint(
                fields=["business", "environment", "client_order_id"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="client_order_id_active_once",
            ),
            # A short code names one drop of an environment: a scan finds it by this index.
            # The code first: a lookup by code reads it, and no read by environment alone does.
            models.UniqueConstraint(fields=["short_code", "environment"], name=SHORT_CODE_UNIQUE),
        ]
        # Lookups by client_order_id (tracking, cancel) read active drops through the unique
        # index above and finished ones through this one: a new drop (always active) is
        # written to one of the two, not to an index of every drop (docs/decisions.md,
        # "Drops carry only the indexes a query uses").
        indexes = [
            models.Index(
                fields=["business", "environment", "client_order_id"],
                condition=Q(status__in=FINISHED_STATUSES),
                name="drop_finished_by_client_id",
            ),
            # GET /orders, newest first and by change (tracking/listing.py): one index range
            # per status, read in key order, so a page never sorts the account's drops.
            models.Index(
                fields=["business", "environment", "status", "created_at", "id"],
                name="drop_listing_by_created",
            ),
            # The sync order's index holds only drops changed since created: a new drop is
            # written to none of it. Unchanged drops have updated_at = created_at and are
            # read, in that order, from the index above (tracking/listing.py;
            # docs/decisions.md, "A listing page is one index range per status").
            models.Index(
                fields=["business", "environment", "status", "updated_at", "id"],
                condition=~UNCHANGED_SINCE_CREATED,
                name="drop_listing_by_change",
            ),
            # GET /orders?window_status= (tracking/listing.py), newest first: one index range per
            # (window status, status), as drop_listing_by_created; only drops with a window.
            models.Index(
                fields=["business", "environment", "window_status", "status", "created_at", "id"],
                condition=Q(window_status__isnull=False),
                name="drop_listing_by_window",
            ),
            # The minute's job (tracking/window_watch.py): the drops on track whose ETA has passed
            # their window's end, found by when that happens.
            models.Index(
                fields=["window_risk_at"],
                condition=Q(window_status="on_track"),
                name="drop_window_risk_due",
            ),
            # The sandbox scenario runner's queue: only drops with a step still to come.
            models.Index(
                fields=["scenario_next_at"],
                condition=Q(scenario_next_at__isnull=False),
                name="drop_scenario_due",
            ),
        ]
        permissions = [
            ("dispatch_drop", "Can dispatch drops: assign a driver, picked up, delivered, failed"),
            ("cancel_drop", "Can cancel drops (refund or reverse the charge)"),
        ]

    def __str__(self) -> str:
        return self.client_order_id

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def initial_status(self) -> str:
        return initial_status(scheduled=self.order.pickup_scheduled_at is not None)

    def timeline(self) -> list[DeliveryEvent]:
        """Every status the drop has had, oldest first: its creation, then its moves."""
        created = DeliveryEvent(
            drop=self, status=self.initial_status, at=self.created_at, actor=CREATION_ACTOR
        )
        return [created, *self.events.all()]


class LegacyTrackingToken(models.Model):
    """A tracking token stored before tokens were derived from the drop's id (orders
    migration 0013): a link already sent to a recipient keeps opening its page."""

    token = models.CharField(max_length=32, primary_key=True)
    # Looked up by token only; no index by drop, and nothing writes here any more.
    drop = models.ForeignKey(Drop, on_delete=models.CASCADE, related_name="+", db_index=False)

    def __str__(self) -> str:
        return self.token


class DeliveryEvent(models.Model):
    """A status move of a drop. Its creation is not a row here: it is the drop's own
    created_at and initial status (Drop.creation_event), written with the drop itself."""

    # The (drop, at) index below serves every lookup by drop.
    drop = models.ForeignKey(Drop, on_delete=models.CASCADE, related_name="events", db_index=False)
    status = models.CharField(max_length=10, choices=DropStatus.choices)
    at = models.DateTimeField()
    actor = models.CharField(max_length=100)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["drop", "at"])]

    def __str__(self) -> str:
        return f"{self.status} at {self.at:%Y-%m-%d %H:%M}"
