"""Shape validation of POST /orders/bulk (every request-level 400 of docs/contract.md §4);
GET /batches.

Hand-written rather than DRF serializers because it runs once per drop on the hot path
(5000 drops in one call); phone and coordinate *validity* is not checked here, since a
bad phone or pin rejects only its own drop (see orders.decisions).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from core.api import MAX_ERROR_DETAILS, ApiError, validation_error
from core.serializers import Input, QueryNumber
from fleet.models import DEFAULT_VEHICLE, ParcelSize, VehicleType
from fleet.selectors import active_vehicle_types

MAX_ID = 100
MAX_NAME = 200
MAX_WAYBILL = 200
MAX_ADDRESS_PART = 500
# An address is stored and sent back with its drop, so it is bounded as a whole too: with
# the text limits above, every tracking entry and event has a known worst size (docs/api.md,
# Limits). 20 fields of 50-character names leave room for any postal format.
MAX_ADDRESS_FIELDS = 20
MAX_ADDRESS_FIELD_NAME = 50
MAX_ADDRESS_CHARS = 1000  # names and values together
MAX_BATCHES_PAGE = 500
SANDBOX_SCENARIOS = ("manual", "deliver", "fail", "cancel_by_courier")
MAX_VEHICLE_CODE = 20
MAX_NOTES = 500  # the courier's instructions (docs/contract.md §17)
# The recipient's email, for the business's notifications (docs/notifications.md).
MAX_EMAIL = 254
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
UNDELIVERABLE_ACTIONS = ("return", "dispose")  # docs/contract.md §19; the first is the default
_WINDOW_FIELDS = frozenset({"start", "end"})
# A parcel (docs/contract.md §18): every field optional; size S and 1 kg when not said.
PARCEL_FIELDS = frozenset({"size", "weight_kg", "description", "value"})
PARCEL_SIZES = tuple(ParcelSize.values)
DEFAULT_PARCEL_SIZE = ParcelSize.S.value
DEFAULT_WEIGHT_KG = Decimal("1")
MAX_WEIGHT_KG = Decimal("1000")
GRAM = Decimal("0.001")
MAX_PARCEL_DESCRIPTION = 200
# A money string: digits, at most two decimals, at most what the money columns hold.
MONEY_TEXT = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,2})?\Z")
_EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
_LATEST = datetime(9998, 12, 31, tzinfo=UTC)


@dataclass(slots=True)
class Place:
    """A location as sent: raw coordinates (checked later) and/or an address."""

    lat: Any
    long: Any
    address: dict[str, str] | None

    @property
    def has_coordinates(self) -> bool:
        return self.lat is not None or self.long is not None


@dataclass(slots=True)
class PickupIn:
    name: str
    phone: Any
    place: Place
    scheduled_at: datetime | None


@dataclass(slots=True)
class DropIn:
    client_order_id: str
    external_waybill: str | None
    name: str
    phone: Any
    place: Place
    wants_pin: bool = False  # "dropoff_verification": {"pin": true}
    scenario: str | None = None  # "sandbox_scenario" (sandbox keys only, docs/contract.md §14)
    # "dropoff_window": {"start", "end"} in UTC, both or neither (docs/contract.md §17).
    window: tuple[datetime, datetime] | None = None
    notes: str | None = None  # for the courier, never the recipient
    undeliverable_action: str = UNDELIVERABLE_ACTIONS[0]
    parcel: ParcelIn | None = None  # None: the contract's default parcel (S, 1 kg)
    # "cod": {"amount": …}: the amount as sent; whether it is allowed is rule 9 (INVALID_COD),
    # a per-drop rejection, not a 400 (orders.decisions).
    cod: Any = None
    email: str | None = None  # "dropoff": {"email": …}, for notifications only

    @property
    def parcel_size(self) -> str:
        return DEFAULT_PARCEL_SIZE if self.parcel is None else self.parcel.size

    @property
    def weight_kg(self) -> Decimal:
        return DEFAULT_WEIGHT_KG if self.parcel is None else self.parcel.weight_kg


@dataclass(frozen=True, slots=True)
class ParcelIn:
    size: str = DEFAULT_PARCEL_SIZE
    weight_kg: Decimal = DEFAULT_WEIGHT_KG
    description: str | None = None
    value: Decimal | None = None


@dataclass(slots=True)
class GroupIn:
    pickup: PickupIn
    drops: list[DropIn]
    # The pickup group's vehicle (docs/contract.md §18): an active type, read once per batch.
    vehicle: VehicleType | None = None
    vehicle_code: str = DEFAULT_VEHICLE  # as asked for (or the default)


@dataclass(slots=True)
class BatchIn:
    client_batch_id: str
    groups: list[GroupIn]
    fingerprint: str  # of the body as sent: what idempotency compares
    quote_id: uuid.UUID | None = None
    quoted_fingerprint: str = ""  # of the body less its quote_id: what a quote compares

    @property
    def scenario_fields(self) -> list[str]:
        """Where a sandbox_scenario was sent: a live key may not send one."""
        return [
            f"orders[{gi}].dropoff[{di}].sandbox_scenario"
            for gi, group in enumerate(self.groups)
            for di, drop in enumerate(group.drops)
            if drop.scenario is not None
        ]

    @property
    def quote_unknown(self) -> bool:
        """A quote_id was sent that cannot name any quote (not a UUID)."""
        return self.quoted_fingerprint != "" and self.quote_id is None


def fingerprint_of(body: Any) -> str:
    """SHA-256 of the parsed JSON with sorted keys: key order and whitespace don't count."""
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def idempotency_key_from(request) -> uuid.UUID:
    raw = request.headers.get("Idempotency-Key")
    if raw is None or not raw.strip():
        raise ApiError(400, "IDEMPOTENCY_KEY_MISSING", "The Idempotency-Key header is required.")
    try:
        return uuid.UUID(raw.strip())
    except ValueError as exc:
        raise ApiError(
            400, "IDEMPOTENCY_KEY_INVALID", "The Idempotency-Key header must be a UUID."
        ) from exc


class FieldErrors:
    """The problems found: the first MAX_ERROR_DETAILS spelled out, the rest only counted."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []
        self.more = 0
        # Timestamps read so far, by their text: the drops of a batch mostly share theirs
        # (one window for a round, one pickup time), and reading one costs ~3 µs.
        self.moments: dict[str, datetime] = {}
        # Parcels read without a problem, by their fields: a batch's parcels repeat as its
        # windows do.
        self.parcels: dict[tuple, ParcelIn] = {}

    def add(self, field: str, message: str) -> None:
        if len(self.items) < MAX_ERROR_DETAILS:
            self.items.append({"field": field, "message": message})
        else:
            self.more += 1

    @property
    def full(self) -> bool:
        return len(self.items) >= MAX_ERROR_DETAILS

    def text(self, obj: dict, key: str, path: str, max_len: int, required: bool = True) -> Any:
        value = obj.get(key)
        usual = type(value) is str and len(value) <= max_len and "\x00" not in value
        if usual and (not required or value.strip()):  # the usual case, checked first
            return value
        where = f"{path}.{key}" if path else key
        if value is None:
            if required:
                self.add(where, "This field is required.")
            return None
        if not isinstance(value, str):
            self.add(where, "Must be a string.")
            return None
        if required and not value.strip():
            self.add(where, "Must not be empty.")
            return None
        if len(value) > max_len:
            self.add(where, f"Must be at most {max_len} characters.")
            return None
        if "\x00" in value:
            self.add(where, "Must not contain NUL characters.")
            return None
        return value

    def place(self, obj: dict, path: str) -> Place:
        address = obj.get("address")
        if address is not None:
            address = self.address(address, f"{path}.address")
        return Place(lat=obj.get("lat"), long=obj.get("long"), address=address)

    def address(self, value: Any, path: str) -> dict[str, str] | None:
        if not isinstance(value, dict):
            self.add(path, "Must be an object of strings.")
            return None
        if len(value) > MAX_ADDRESS_FIELDS:  # refused before any field is read
            self.add(path, f"At most {MAX_ADDRESS_FIELDS} fields; got {len(value)}.")
            return None
        valid = True
        size = 0
        for key, part in value.items():
            if not 0 < len(key) <= MAX_ADDRESS_FIELD_NAME or "\x00" in key:
                # The name is not echoed in the path: it may be what is wrong with it.
                self.add(path, _BAD_FIELD_NAME)
                valid = False
            elif isinstance(part, str) and len(part) <= MAX_ADDRESS_PART and "\x00" not in part:
                size += len(key) + len(part)
            elif isinstance(part, str):
                self.add(f"{path}.{key}", _BAD_ADDRESS_PART)
                valid = False
            else:
                self.add(f"{path}.{key}", "Must be a string.")
                valid = False
        if valid and size > MAX_ADDRESS_CHARS:
            self.add(path, f"At most {MAX_ADDRESS_CHARS} characters in all; got {size}.")
            return None
        return value if valid else None

    def unknown_fields(self, value: dict, where: str, known, allowed: str) -> bool:
        """Whether the object `value` has fields outside `known`; if so, says which and what
        is `allowed`."""
        unknown = sorted(set(value) - set(known))
        if unknown:
            self.add(where, f"Unknown field(s): {', '.join(unknown)[:200]}; {allowed}.")
        return bool(unknown)

    def verification(self, obj: dict, path: str) -> bool:
        """`dropoff_verification`: absent, or an object whose `pin` is a boolean."""
        value = obj.get("dropoff_verification")
        if value is None:
            return False
        where = f"{path}.dropoff_verification"
        if not isinstance(value, dict) or not isinstance(value.get("pin", False), bool):
            self.add(where, 'Must be an object such as {"pin": true}.')
            return False
        if self.unknown_fields(value, where, {"pin"}, "only pin"):
            return False
        return value.get("pin", False)

    def scenario(self, obj: dict, path: str) -> str | None:
        value = obj.get("sandbox_scenario")
        if value is None:
            return None
        if value not in SANDBOX_SCENARIOS:
            self.add(f"{path}.sandbox_scenario", f"Must be one of {', '.join(SANDBOX_SCENARIOS)}.")
            return None
        return value

    def scheduled_at(self, obj: dict, path: str) -> datetime | None:
        return self.timestamp(obj, "pickup_scheduled_at", path)

    def timestamp(self, obj: dict, key: str, path: str) -> datetime | None:
        """An ISO 8601 time with a zone, in UTC; None (and the error noted) if it is not one."""
        value = obj.get(key)
        if value is None:
            return None
        if type(value) is str and (known := self.moments.get(value)) is not None:
            return known
        where = f"{path}.{key}"
        try:
            # fromisoformat stops reading at a NUL, so "…Z\x00garbage" would pass.
            if not isinstance(value, str) or "\x00" in value:
                raise ValueError
            moment = datetime.fromisoformat(value)
        except ValueError:
            self.add(where, "Must be an ISO 8601 timestamp with a time zone.")
            return None
        if moment.tzinfo is None:
            self.add(where, "Must carry a time zone, e.g. 2026-01-31T09:30:00Z.")
            return None
        # Years 1 and 9999 with an offset can't be moved to UTC or the service time zone.
        try:
            in_range = _EARLIEST <= moment.astimezone(UTC) <= _LATEST
        except OverflowError:
            in_range = False
        if not in_range:
            self.add(where, "Must be a timestamp between the years 0002 and 9998.")
            return None
        # In UTC from here on: PostgreSQL stores offsets up to ±15:59 only, and ISO 8601 allows
        # any under 24 hours (+23:59), which would reach the database as a 500.
        moment = self.moments[value] = moment.astimezone(UTC)
        return moment

    def window(self, obj: dict, path: str) -> tuple[datetime, datetime] | None:
        """`dropoff_window`: absent or null, or {"start", "end"}, both times with a zone.

        Whether the window can be kept (its length, its end against the ETA, how far ahead)
        is a per-drop rule, INVALID_TIME_WINDOW (orders.decisions), not a 400.
        """
        value = obj.get("dropoff_window")
        if value is None:
            return None
        if type(value) is dict and len(value) == 2:  # the usual case: both times seen before
            start, end = value.get("start"), value.get("end")
            if type(start) is str and type(end) is str:
                known = self.moments
                if start in known and end in known:
                    return known[start], known[end]
        where = f"{path}.dropoff_window"
        if not isinstance(value, dict):
            self.add(where, 'Must be an object such as {"start": "…Z", "end": "…Z"}.')
            return None
        if self.unknown_fields(value, where, _WINDOW_FIELDS, "only start and end"):
            return None
        for key in ("start", "end"):
            if value.get(key) is None:
                self.add(f"{where}.{key}", "This field is required.")
        start, end = self.timestamp(value, "start", where), self.timestamp(value, "end", where)
        return None if start is None or end is None else (start, end)

    def email(self, obj: dict, path: str) -> str | None:
        """The recipient's `email`: optional; a string that looks like one address, else 400."""
        value = obj.get("email")
        if value is None or value == "":
            return None
        if not isinstance(value, str) or len(value) > MAX_EMAIL or not _EMAIL.fullmatch(value):
            self.add(f"{path}.email", f"Must be one email address, {MAX_EMAIL} characters at most.")
            return None
        return value

    def notes(self, obj: dict, path: str) -> str | None:
        """`notes` for the courier: a string of at most MAX_NOTES characters; "" is none."""
        return self.text(obj, "notes", path, MAX_NOTES, required=False) or None

    def undeliverable_action(self, obj: dict, path: str) -> str:
        value = obj.get("undeliverable_action")
        if value is None:
            return UNDELIVERABLE_ACTIONS[0]
        if value not in UNDELIVERABLE_ACTIONS:
            self.add(
                f"{path}.undeliverable_action",
                f"Must be one of {', '.join(UNDELIVERABLE_ACTIONS)}.",
            )
        return value if isinstance(value, str) else UNDELIVERABLE_ACTIONS[0]

    def parcel(self, obj: dict, path: str) -> ParcelIn | None:
        """`parcel`: absent or null, or an object of size, weight_kg, description, value."""
        value = obj.get("parcel")
        if value is None:
            return None
        key = _fields_key(value)
        known = self.parcels.get(key) if key is not None else None
        if known is not None:
            return known
        problems = len(self.items) + self.more
        parsed = self._parcel(value, f"{path}.parcel")
        if parsed is not None and key is not None and len(self.items) + self.more == problems:
            self.parcels[key] = parsed
        return parsed

    def _parcel(self, value: Any, where: str) -> ParcelIn | None:
        if not isinstance(value, dict):
            self.add(where, 'Must be an object such as {"size": "M", "weight_kg": 2.5}.')
            return None
        if self.unknown_fields(value, where, PARCEL_FIELDS, _PARCEL_KNOWN):
            return None
        size = value.get("size", DEFAULT_PARCEL_SIZE)
        if size not in PARCEL_SIZES:
            self.add(f"{where}.size", f"Must be one of {', '.join(PARCEL_SIZES)}.")
        weight = self.weight(value, where)
        described = self.text(value, "description", where, MAX_PARCEL_DESCRIPTION, required=False)
        worth = value.get("value")
        if worth is not None and not (isinstance(worth, str) and MONEY_TEXT.match(worth)):
            self.add(f"{where}.value", 'Must be a money string such as "25.00".')
            worth = None
        if size not in PARCEL_SIZES or weight is None:
            return None
        return ParcelIn(size, weight, described or None, None if worth is None else Decimal(worth))

    def weight(self, parcel: dict, where: str) -> Decimal | None:
        """weight_kg: a number above 0 and at most MAX_WEIGHT_KG, kept to the gram."""
        value = parcel.get("weight_kg")
        if value is None:
            return DEFAULT_WEIGHT_KG
        weight = None
        # The range first: a huge number has more digits than quantize() may give.
        if (
            not isinstance(value, bool)
            and isinstance(value, int | float)
            and 0 < value <= MAX_WEIGHT_KG
        ):
            weight = Decimal(repr(value)).quantize(GRAM, rounding=ROUND_HALF_UP)
        if weight is None or not 0 < weight <= MAX_WEIGHT_KG:
            self.add(f"{where}.weight_kg", _BAD_WEIGHT)
            return None
        return weight

    def cod(self, obj: dict, path: str) -> Any:
        """`cod`: absent or null, or {"amount": …}; the amount's worth is rule 9's."""
        value = obj.get("cod")
        if value is None:
            return None
        if type(value) is dict and len(value) == 1 and value.get("amount") is not None:
            return value["amount"]  # the usual case, checked first
        where = f"{path}.cod"
        if not isinstance(value, dict) or value.get("amount") is None:
            self.add(where, 'Must be an object such as {"amount": "12.50"}.')
            return None
        if self.unknown_fields(value, where, {"amount"}, "only amount"):
            return None
        return value["amount"]


_PARCEL_KNOWN = "only size, weight_kg, description and value"


def _fields_key(value: Any) -> tuple | None:
    """A parcel object as a key for the parcels read so far; None if it cannot be one.

    Keys compare as Python values do, so 1, 1.0 and True are one key: 1 and 1.0 are one
    weight anyway, and every other field refuses all three alike (refusals are not kept),
    so only a weight of true is kept out. A list or an object inside is not hashable."""
    if type(value) is not dict or value.get("weight_kg") is True:
        return None
    key = tuple(value.items())
    try:
        hash(key)
    except TypeError:
        return None
    return key


_BAD_WEIGHT = f"Must be a number of kg above 0 and at most {MAX_WEIGHT_KG} (kept to the gram)."
_BAD_FIELD_NAME = f"Field names must be 1 to {MAX_ADDRESS_FIELD_NAME} characters, without NUL."
_BAD_ADDRESS_PART = f"Must be a string of at most {MAX_ADDRESS_PART} characters without NUL."


def parse_batch(body: Any) -> BatchIn:
    """Check the whole shape; raise one VALIDATION_ERROR listing every problem, or return it."""
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": "The body must be a JSON object."}])
    errors = FieldErrors()
    client_batch_id = errors.text(body, "client_batch_id", "", MAX_ID)
    if "quote_id" in body:
        errors.text(body, "quote_id", "", MAX_ID)
    orders = body.get("orders")
    if not isinstance(orders, list) or not orders:
        errors.add("orders", "Must be a non-empty array of pickup groups.")
        orders = []
    _check_size(orders)
    groups: dict[int, GroupIn] = {}
    for gi, group in enumerate(orders):
        parsed_group = _group_in(errors, group, f"orders[{gi}]")
        if parsed_group is not None:
            groups[gi] = parsed_group
    if groups:
        _choose_vehicles(errors, groups)
    if errors.items:
        raise validation_error(errors.items, errors.more)
    parsed = BatchIn(client_batch_id, list(groups.values()), fingerprint=fingerprint_of(body))
    if "quote_id" in body:
        parsed.quoted_fingerprint = fingerprint_of(
            {key: value for key, value in body.items() if key != "quote_id"}
        )
        try:
            parsed.quote_id = uuid.UUID(body["quote_id"])
        except ValueError:
            parsed.quote_id = None  # unknown: 404 NOT_FOUND, as any other unknown id
    return parsed


def _choose_vehicles(errors: FieldErrors, groups: dict[int, GroupIn]) -> None:
    """Each group's vehicle among the active types, read once for the whole batch; an unknown
    or inactive code is a 400 naming its group (docs/contract.md §18)."""
    active = {vehicle.code: vehicle for vehicle in active_vehicle_types()}
    for gi, group in groups.items():
        group.vehicle = active.get(group.vehicle_code)
        if group.vehicle is None:
            names = ", ".join(sorted(active)) or "none"
            errors.add(
                f"orders[{gi}].vehicle",
                f"{group.vehicle_code!r} is not an active vehicle type (active: {names}).",
            )


def _check_size(orders: list) -> None:
    """At most MAX_DROPS_PER_BATCH drops, refused before any drop is read."""
    limit = settings.MAX_DROPS_PER_BATCH
    if len(orders) > limit:
        # Every group carries at least one drop, so no group past the limit can be valid.
        raise validation_error(
            [{"field": "orders", "message": f"At most {limit} drops; got {len(orders)} groups."}]
        )
    total = sum(
        len(g["dropoff"])
        for g in orders
        if isinstance(g, dict) and isinstance(g.get("dropoff"), list)
    )
    if total > limit:
        raise validation_error(
            [{"field": "orders", "message": f"At most {limit} drops; got {total}."}]
        )


def _group_in(errors: FieldErrors, group: Any, gpath: str) -> GroupIn | None:
    """One pickup group, or None when its pickup is not an object (the error noted)."""
    if not isinstance(group, dict):
        errors.add(gpath, "Must be an object with pickup and dropoff.")
        return None
    pickup = group.get("pickup")
    pickup_in = None
    if not isinstance(pickup, dict):
        errors.add(f"{gpath}.pickup", "Must be an object.")
    else:
        ppath = f"{gpath}.pickup"
        pickup_in = PickupIn(
            name=errors.text(pickup, "name", ppath, MAX_NAME),
            phone=pickup.get("phone"),
            place=errors.place(pickup, ppath),
            scheduled_at=errors.scheduled_at(pickup, ppath),
        )
    dropoff = group.get("dropoff")
    drops: list[DropIn] = []
    if not isinstance(dropoff, list) or not dropoff:
        errors.add(f"{gpath}.dropoff", "Must be a non-empty array of drops.")
        dropoff = []
    for di, drop in enumerate(dropoff):
        drop_in = _drop_in(errors, drop, f"{gpath}.dropoff[{di}]")
        if drop_in is not None:
            drops.append(drop_in)
    if pickup_in is None:
        return None
    parsed = GroupIn(pickup=pickup_in, drops=drops)
    vehicle = group.get("vehicle")
    if vehicle is not None:
        if isinstance(vehicle, str) and 0 < len(vehicle) <= MAX_VEHICLE_CODE:
            parsed.vehicle_code = vehicle
        else:
            errors.add(f"{gpath}.vehicle", "Must be a vehicle type's code, such as motorbike.")
    return parsed


def _drop_in(errors: FieldErrors, drop: Any, dpath: str) -> DropIn | None:
    if not isinstance(drop, dict):
        errors.add(dpath, "Must be an object.")
        return None
    client_order_id = errors.text(drop, "client_order_id", dpath, MAX_ID)
    waybill = errors.text(drop, "external_waybill", dpath, MAX_WAYBILL, required=False)
    recipient = drop.get("dropoff")
    rpath = f"{dpath}.dropoff"
    if not isinstance(recipient, dict):
        errors.add(rpath, "Must be an object (the recipient).")
        return None
    parsed = DropIn(
        client_order_id=client_order_id,
        external_waybill=waybill,
        name=errors.text(recipient, "name", rpath, MAX_NAME),
        phone=recipient.get("phone"),
        place=errors.place(recipient, rpath),
        wants_pin=errors.verification(drop, dpath),
        scenario=errors.scenario(drop, dpath),
    )
    # The commitments of docs/contract.md §17 and §19 are optional; most drops carry none,
    # and a key that is absent costs one lookup here.
    if "email" in recipient:
        parsed.email = errors.email(recipient, rpath)
    if "dropoff_window" in drop:
        parsed.window = errors.window(drop, dpath)
    if "notes" in drop:
        parsed.notes = errors.notes(drop, dpath)
    if "undeliverable_action" in drop:
        parsed.undeliverable_action = errors.undeliverable_action(drop, dpath)
    if "parcel" in drop:
        parsed.parcel = errors.parcel(drop, dpath)
    if "cod" in drop:
        parsed.cod = errors.cod(drop, dpath)
    return parsed


class BatchesQuery(Input):
    """GET /batches: the query parameters, validated and documented."""

    limit = QueryNumber(
        min_value=1,
        max_value=MAX_BATCHES_PAGE,
        required=False,
        default=100,
        help_text=f"1..{MAX_BATCHES_PAGE}, default 100.",
    )
    cursor = serializers.RegexField(
        r"^[A-Za-z0-9_:-]+$",
        max_length=1000,
        required=False,
        trim_whitespace=False,
        error_messages={"invalid": "Must be a next_cursor from an earlier page."},
        help_text="The `next_cursor` of the previous page.",
    )
