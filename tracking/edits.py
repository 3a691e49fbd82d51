"""Edits of a drop after creation (docs/contract.md §17): PATCH /orders/<drop_id>.

`check_edit` judges an edit against the drop as it is under its row lock: may these fields
change in this status, and does the edited drop pass the rules of creation (orders.decisions,
the same functions a batch runs)? It writes nothing. `edit_drop` geocodes a new address
first, outside any transaction, then in one transaction takes the locks, judges, writes
the drop, settles a new price (billing/adjustments.py) and records `order.updated`.

Locks, in the order every writer takes them: the account (only when the location or the cash
to collect may move the price, as a batch and a cancel take it, or a new parcel weighs on its
order's load), then the drop's row, then the event feed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar
from uuid import UUID

from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from accounts.models import Business
from billing.adjustments import CannotCover, settle_price_change
from billing.services import lock_account
from events.models import EventType
from events.services import record_events
from fleet.models import VehicleType
from geo.geocoders import Pin, geocode_addresses, geocode_failed_message
from geo.geometry import DistancesFrom
from geo.services import load_coverage
from orders.decisions import (
    MESSAGES,
    ZERO_KG,
    Located,
    Reason,
    addresses_to_geocode,
    cod_fee,
    cod_problem,
    delivery_price,
    locate,
    parcel_problem,
    phone_is_valid,
    window_hours_problem,
)
from orders.inputs import DEFAULT_PARCEL_SIZE, DEFAULT_WEIGHT_KG, MONEY_TEXT, ParcelIn
from orders.models import Drop, SandboxScenario
from orders.statuses import ACTIVE_STATUSES, EDITABLE_LOCATION
from orders.stops import lock_routes_of, resequence
from orders.windows import EtaTerms
from tracking.edit_inputs import (
    BEFORE_PICKUP,
    FIELDS,
    FIXED,
    LOCATION,
    WHILE_ACTIVE,
    DropChange,
)
from tracking.selectors import entries_by_drop_id
from tracking.window_watch import record_window_alerts, refresh_windows


class EditRefused(Exception):
    """An edit that cannot be made; nothing changed. The API gives each code its status."""

    code: ClassVar[str] = ""

    def __init__(self, message: str, fields: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.fields = message, list(fields)


class DropNotFound(EditRefused):
    """No such drop for this business and environment (or not an id at all)."""

    code = "NOT_FOUND"


class NotEditable(EditRefused):
    """A field that may not change in the drop's status (or ever), or a finished drop."""

    code = "NOT_EDITABLE"


class EditRejected(EditRefused):
    """The edited drop fails a rule of creation: `reason` is its failure_reason."""

    code = "EDIT_REJECTED"

    def __init__(self, reason: Reason, message: str, fields=()) -> None:
        super().__init__(message, fields)
        self.reason = reason


@dataclass(slots=True)
class Edit:
    """What an edit changes: the drop's columns, the fields a client sees change (in FIELDS
    order, then "price"), the new price when the location or the cash to collect moved it,
    and the new delivery price (without the COD fee) when the location moved."""

    columns: dict[str, Any] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    price: Decimal | None = None
    delivery: Decimal | None = None


def edit_drop(*, business: Business, environment: str, drop_id: UUID, change: DropChange) -> dict:
    """Apply a PATCH to a drop of this account; its tracking entry afterwards.

    Raises DropNotFound, NotEditable or EditRejected, with nothing changed. An edit that
    changes nothing writes nothing and records no event.
    """
    status = (
        Drop.objects.filter(pk=drop_id, business=business, environment=environment)
        .values_list("status", flat=True)
        .first()
    )
    if status is None:
        raise DropNotFound("No such order.")
    # A drop never goes back to SCHEDULED or PENDING: past them its location, parcel and cash
    # cannot change, so only then is a new address geocoded (before any lock) or the account
    # locked. The account lock also keeps an order's load: a parcel is weighed against its
    # order's other drops, and two edits of one order's parcels wait for each other there.
    before_pickup = status in EDITABLE_LOCATION
    moves = change.moves_location and before_pickup
    pins = geocode_addresses(addresses_to_geocode([change.location])) if moves else {}
    # A new place or window renumbers the order's route (docs/contract.md §21): its drops
    # are locked first, in the order every mover locks drops, under the account lock.
    routes = before_pickup and (moves or "dropoff_window" in change.values)
    locks = routes or (before_pickup and not _ACCOUNT_READS.isdisjoint(change.values))
    with transaction.atomic():
        wallet = lock_account(business=business, environment=environment) if locks else None
        if routes:
            lock_routes_of([drop_id])
        drop = (
            Drop.objects.select_for_update(of=("self",))
            .select_related("order", "business__pricing_plan")
            .get(pk=drop_id)
        )
        # Read once the locks are held: an edit that waited stamps its change after the other's.
        now = timezone.now()
        edit = check_edit(drop, change, pins, now=now)
        alerts = _write(drop, edit, wallet, now) if edit.changed else []
        if routes and edit.changed and drop.stop_sequence is not None:
            resequence([drop.order_id], now=now)
        entry = entries_by_drop_id([drop.pk])[str(drop.pk)]
        if edit.changed:
            record_events(
                business_id=business.pk,
                environment=environment,
                event_type=EventType.ORDER_UPDATED,
                payloads=[{**entry, "changed": edit.changed}],
                at=now,
            )
            record_window_alerts(alerts, now)
    return entry


# Fields besides the location whose edit takes the account lock (see edit_drop).
_ACCOUNT_READS = frozenset({"parcel", "cod"})


def _write(drop: Drop, edit: Edit, wallet, now: datetime) -> list[Drop]:
    """The drop's new values and, for a new price, the money: both or neither. A new window
    or place works the window status out afresh, as a move does (tracking.window_watch); the
    drop if that turned it at risk for the first time."""
    if edit.price is not None and edit.price != drop.price:
        try:
            settle_price_change(
                business=wallet.business,
                wallet=wallet,
                drop_id=drop.pk,
                charged=drop.price,
                price=edit.price,
                at=now,
            )
        except CannotCover as short:
            fields = [name for name in edit.changed if name in _PRICED]
            raise EditRejected(Reason.INSUFFICIENT_BALANCE, str(short), fields) from short
    # updated_at moves: GET /orders?updated_since= sees the edit (tracking/listing.py).
    Drop.objects.filter(pk=drop.pk).update(**edit.columns, updated_at=now)
    if not _WINDOW_READS.intersection(edit.columns):
        return []
    for column, value in edit.columns.items():
        setattr(drop, column, value)
    return refresh_windows([drop], now)


# What a drop's window status is worked out from, of what an edit may change.
_WINDOW_READS = frozenset({"window_start", "window_end", "lat", "long"})
# The fields whose change may move the price.
_PRICED = frozenset({*LOCATION, "cod"})


def check_edit(drop: Drop, change: DropChange, pins: dict[str, Pin | None], *, now) -> Edit:
    """Judge `change` against `drop` (row-locked, with its order); the Edit it makes.

    In the contract's order: a finished drop, then fields that may not change in the
    drop's status (409); then the rules of creation that read what changes (422).
    """
    if drop.status not in ACTIVE_STATUSES:
        raise NotEditable(
            f"A drop in {drop.status} cannot be edited: only an active drop can.",
            _sent_fields(change),
        )
    changed = _changed_fields(drop, change)
    fixed = [
        name
        for name in changed
        if name in FIXED or (name in BEFORE_PICKUP and drop.status not in EDITABLE_LOCATION)
    ]
    if fixed:
        raise NotEditable(_not_editable_message(drop.status, fixed), fixed)
    edit = Edit()
    values = change.values
    for name in changed & _COLUMNS_OF.keys():
        edit.columns |= _COLUMNS_OF[name](values[name])
    phone = values.get("dropoff.phone", drop.recipient_phone)
    if "dropoff.phone" in changed and not phone_is_valid(phone):
        raise EditRejected(Reason.INVALID_PHONE, _message(Reason.INVALID_PHONE), ["dropoff.phone"])
    km = None
    if any(name in LOCATION for name in changed):
        km = _move_to(drop, change, phone, pins, edit)
    window = values["dropoff_window"] if "dropoff_window" in changed else _window_of(drop)
    if window is not None and ("dropoff_window" in changed or km is not None):
        fields = ["dropoff_window"] if "dropoff_window" in changed else change.location_fields
        _check_window(drop, window, now, km, edit, fields)
    if "parcel" in changed:
        _check_parcel(drop, values["parcel"])
    fee = _check_cod(drop, values["cod"], edit) if "cod" in changed else drop.cod_fee
    if edit.delivery is not None or "cod" in changed:
        # price = delivery + cod_fee (§18): a part that did not change is kept as charged.
        delivery = drop.price - drop.cod_fee if edit.delivery is None else edit.delivery
        edit.price = edit.columns["price"] = delivery + fee
    edit.changed = [
        name
        for name in CHANGED_ORDER
        if (_column_moved(drop, name, edit) if name in LOCATION else name in changed)
    ]
    if edit.price is not None and edit.price != drop.price:
        edit.changed.append("price")
    return edit


# How `changed` lists the fields (then "price"): the recipient, the courier's, the promise.
CHANGED_ORDER = ("dropoff.name", "dropoff.phone", *LOCATION, *WHILE_ACTIVE[2:], *BEFORE_PICKUP[3:])


def _sent_fields(change: DropChange) -> list[str]:
    return [name for name in FIELDS if name in change.values] + list(change.location_fields)


def _not_editable_message(status: str, fields: list[str]) -> str:
    fixed = [name for name in fields if name in FIXED]
    if fixed:
        return f"{', '.join(fixed)} cannot change after the drop is created."
    return (
        f"{', '.join(fields)} can change only while the drop is SCHEDULED or PENDING; "
        f"it is {status}."
    )


def _message(reason: Reason) -> str:
    return MESSAGES[reason, "drop"]


# --- What a field is now, and what it becomes ---------------------------------------------


def _window_of(drop: Drop) -> tuple[datetime, datetime] | None:
    return None if drop.window_start is None else (drop.window_start, drop.window_end)


_VERIFICATIONS = ("pin", "scan", "signature")


def _verifications_asked(value: Any) -> tuple[bool, ...] | None:
    """dropoff_verification as sent: whether it asks for a PIN, a scan, a signature (absent:
    no); None for no valid form."""
    value = {} if value is None else value
    if not isinstance(value, dict) or not set(value) <= set(_VERIFICATIONS):
        return None
    if not all(isinstance(asked, bool) for asked in value.values()):
        return None
    return tuple(value.get(name, False) for name in _VERIFICATIONS)


_CURRENT = {
    "dropoff.name": lambda drop: drop.recipient_name,
    "dropoff.phone": lambda drop: drop.recipient_phone,
    "notes": lambda drop: drop.notes,
    "external_waybill": lambda drop: drop.external_waybill,
    "dropoff_window": _window_of,
    "undeliverable_action": lambda drop: drop.undeliverable_action,
    "client_order_id": lambda drop: drop.client_order_id,
    "dropoff_verification": lambda drop: (
        drop.dropoff_pin is not None,
        drop.needs_scan,
        drop.needs_signature,
    ),
    # No scenario is the manual one (docs/sandbox.md): sent back as "manual", it is unchanged.
    "sandbox_scenario": lambda drop: drop.sandbox_scenario or SandboxScenario.MANUAL,
    "recipient_language": lambda drop: drop.recipient_language,
    "parcel": lambda drop: ParcelIn(
        drop.parcel_size, drop.parcel_weight_kg, drop.parcel_description, drop.parcel_value
    ),
    "cod": lambda drop: drop.cod_amount,
}
_NOT_MONEY = object()
_COLUMNS_OF = {
    "dropoff.name": lambda value: {"recipient_name": value},
    "dropoff.phone": lambda value: {"recipient_phone": value},
    "notes": lambda value: {"notes": value},
    "external_waybill": lambda value: {"external_waybill": value},
    "dropoff_window": lambda value: {
        "window_start": value and value[0],
        "window_end": value and value[1],
    },
    "undeliverable_action": lambda value: {"undeliverable_action": value},
    "parcel": lambda value: _parcel_columns(value or ParcelIn()),
}


def _parcel_columns(parcel: ParcelIn) -> dict[str, Any]:
    """A parcel as its drop's columns; null is sent as the contract's default (S, 1 kg), which
    a drop that says nothing of its parcel has."""
    return {
        "parcel_size": parcel.size,
        "parcel_weight_kg": parcel.weight_kg,
        "parcel_description": parcel.description,
        "parcel_value": parcel.value,
    }


def _changed_fields(drop: Drop, change: DropChange) -> set[str]:
    """The fields sent whose value differs from the drop's. A new location with coordinates
    is compared with the drop's pin; an address-only one moves the pin unless the drop's pin
    already came from that same address (the geocoder settles where it goes)."""
    changed = set()
    for name, value in change.values.items():
        if name == "dropoff_verification":
            value = _verifications_asked(value)
        elif name == "sandbox_scenario" and value is None:
            value = SandboxScenario.MANUAL
        elif name == "parcel" and value is None:
            value = ParcelIn()  # the default parcel, as a drop without one has
        elif name == "cod" and value is not None:
            # An amount not in money form is a change whatever it equals: rule 9 judges it.
            money_text = isinstance(value, str) and MONEY_TEXT.match(value)
            value = Decimal(value) if money_text else _NOT_MONEY
        if value != _CURRENT[name](drop):
            changed.add(name)
    new = change.location
    if new is not None:
        if new.address != drop.address:
            changed.add("dropoff.address")
        if new.has_coordinates:
            changed |= {"dropoff.lat"} if new.lat != drop.lat else set()
            changed |= {"dropoff.long"} if new.long != drop.long else set()
        elif not drop.resolved or "dropoff.address" in changed:
            changed |= {"dropoff.lat", "dropoff.long"}
    return changed


def _column_moved(drop: Drop, name: str, edit: Edit) -> bool:
    column = name.removeprefix("dropoff.")
    return column in edit.columns and edit.columns[column] != getattr(drop, column)


# --- The rules of creation, on the edited drop --------------------------------------------


def _move_to(drop: Drop, change: DropChange, phone: Any, pins, edit: Edit) -> float:
    """Rules 1–4 for the new location, as a batch judges a drop's (orders.decisions.locate,
    then the active areas); its columns and its price into `edit`. The km from the pickup.
    A refused location names the fields of it that were sent."""
    place, sent = change.location, list(change.location_fields)
    located: Located = locate(place, phone, pins)
    if located.reason is Reason.GEOCODE_FAILED:
        message = geocode_failed_message("drop", located.unanswered)
        raise EditRejected(Reason.GEOCODE_FAILED, message, ["dropoff.address"])
    if located.reason is not None:
        fields = ["dropoff.phone"] if located.reason is Reason.INVALID_PHONE else sent
        raise EditRejected(located.reason, _message(located.reason), fields)
    lat, long = located.pin
    if not load_coverage().locate([lat], [long])[0]:
        raise EditRejected(Reason.OUT_OF_SERVICE_AREA, _message(Reason.OUT_OF_SERVICE_AREA), sent)
    edit.columns |= {"lat": lat, "long": long, "address": place.address}
    edit.columns["resolved"] = located.resolved
    order = drop.order
    km = DistancesFrom(order.pickup_lat, order.pickup_long).km(lat, long)
    vehicle = _vehicle_of(drop)
    multiplier = Decimal("1.00") if vehicle is None else vehicle.price_multiplier
    # As a new drop of its group: the vehicle's multiplier (the COD fee is check_edit's).
    edit.delivery = delivery_price(drop.business.pricing_plan, km, multiplier)
    return km


def _check_window(
    drop: Drop,
    window: tuple[datetime, datetime],
    now: datetime,
    km: float | None,
    edit: Edit,
    fields: Sequence[str],
) -> None:
    """Rule 7 for the edited drop at its (new) place, as a batch judges it: by the ETA model
    from its pickup time (orders.windows), the scheduled one, else when the drop began to
    wait (its creation); and within the opening hours of its area. `fields`: what a refusal
    names, the window or the location sent."""
    order = drop.order
    lat, long = edit.columns.get("lat", drop.lat), edit.columns.get("long", drop.long)
    if km is None:
        km = DistancesFrom(order.pickup_lat, order.pickup_long).km(lat, long)
    pickup_time = order.pickup_scheduled_at or drop.created_at
    terms = EtaTerms()
    problem, slack = terms.window_slack(window, pickup_time, now)
    if problem is None:
        coverage = load_coverage()
        [areas] = coverage.locate([lat], [long])
        problem = window_hours_problem(coverage, areas, window)
    problem = problem or terms.too_far(terms.ride(km), slack)
    if problem is not None:
        raise EditRejected(Reason.INVALID_TIME_WINDOW, problem, fields)


def _vehicle_of(drop: Drop) -> VehicleType | None:
    """The order's vehicle type (docs/contract.md §18); None if an operator deleted it."""
    return VehicleType.objects.filter(code=drop.order.vehicle).first()


def _check_parcel(drop: Drop, parcel: ParcelIn | None) -> None:
    """Rule 8 for a new parcel: its size and weight fit the order's vehicle, and with the
    order's other active drops that say their parcel it stays within the vehicle's load. A
    parcel set back to the default (null) is not weighed, as a drop that says nothing of its
    parcel is not at creation (docs/decisions.md, "A drop that sends no parcel is not
    weighed")."""
    vehicle = _vehicle_of(drop)
    if parcel is None or vehicle is None:
        return
    problem = parcel_problem(parcel, vehicle, _load_beside(drop))
    if problem is not None:
        raise EditRejected(Reason.PARCEL_TOO_LARGE, problem, ["parcel"])


# A drop whose stored parcel is the contract's default said nothing of it: it is not weighed.
_UNSAID_PARCEL = Q(
    parcel_size=DEFAULT_PARCEL_SIZE,
    parcel_weight_kg=DEFAULT_WEIGHT_KG,
    parcel_description__isnull=True,
    parcel_value__isnull=True,
)


def _load_beside(drop: Drop) -> Decimal:
    """The weight the drop's order carries beside it, in one query: its other active drops
    that say their parcel. Read under the account lock (edit_drop), which every other edit
    of a parcel waits for, and no batch adds a drop to an existing order."""
    others = (
        Drop.objects.filter(order_id=drop.order_id, status__in=ACTIVE_STATUSES)
        .exclude(pk=drop.pk)
        .exclude(_UNSAID_PARCEL)
    )
    return others.aggregate(load=Sum("parcel_weight_kg"))["load"] or ZERO_KG


def _check_cod(drop: Drop, amount: Any, edit: Edit) -> Decimal:
    """Rule 9 for a new cash amount (None removes it); its columns into `edit`; its COD fee,
    the plan's cod_fee_percent of it, as at creation (orders.decisions)."""
    if amount is None:
        fee = Decimal("0.00")
        edit.columns |= {"cod_amount": None, "cod_fee": fee}
        return fee
    value, problem = cod_problem(amount)
    if problem is not None:
        raise EditRejected(Reason.INVALID_COD, problem, ["cod"])
    fee = cod_fee(drop.business.pricing_plan, value)
    edit.columns |= {"cod_amount": value, "cod_fee": fee}
    return fee
