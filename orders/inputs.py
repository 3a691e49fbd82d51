"""The body of POST /orders/bulk and /orders/quote, declared once (every request-level 400
of docs/contract.md §4, and its OpenAPI description); GET /batches.

Tables of core.shapes rather than DRF serializers because they are read once per drop on
the hot path (5000 drops in one call); phone and coordinate *validity* is not checked here,
since a bad phone or pin rejects only its own drop (see orders.decisions).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from accounts.models import Environment
from core.api import ApiError, json_body, validation_error
from core.languages import codes
from core.serializers import Input, QueryNumber
from core.shapes import (
    REQUIRED,
    Array,
    Bool,
    Choice,
    Kind,
    Object,
    Passed,
    Problems,
    Shape,
    Text,
    Timestamp,
    path_of,
)
from core.shapes import Field as ShapeField
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
RECIPIENT_LANGUAGES = codes()  # settings.LANGUAGES (docs/contract.md §26)
UNDELIVERABLE_ACTIONS = ("return", "dispose")  # docs/contract.md §19; the first is the default
# A parcel (docs/contract.md §18): every field optional; size S and 1 kg when not said.
PARCEL_SIZES = tuple(ParcelSize.values)
DEFAULT_PARCEL_SIZE = ParcelSize.S.value
DEFAULT_WEIGHT_KG = Decimal("1")
MAX_WEIGHT_KG = Decimal("1000")
GRAM = Decimal("0.001")
MAX_PARCEL_DESCRIPTION = 200
# A money string: digits, at most two decimals, at most what the money columns hold.
MONEY_TEXT = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,2})?\Z")


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
    # "dropoff_verification": {"scan": true, "signature": true} (docs/contract.md §24)
    wants_scan: bool = False
    wants_signature: bool = False
    # "recipient_language": the recipient's page and messages (docs/contract.md §26); None:
    # the business's setting.
    language: str | None = None

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


def bulk_request(request) -> tuple[uuid.UUID, BatchIn]:
    """What POST /orders/bulk sends: its Idempotency-Key and its body, checked."""
    return idempotency_key_from(request), batch_of(request)


def batch_of(request) -> BatchIn:
    """The body of a bulk or quote call, checked; a live key may not send sandbox scenarios."""
    batch = parse_batch(json_body(request))
    if request.auth.environment == Environment.LIVE and batch.scenario_fields:
        message = "sandbox_scenario is for sandbox keys only."
        raise validation_error([{"field": f, "message": message} for f in batch.scenario_fields])
    return batch


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


# --- The bulk body, declared once ------------------------------------------------------
# Each field's check (core.shapes) and its OpenAPI description (orders/schema.py, through
# Shape.serializer) come from these tables. Kinds with a rule of their own follow.


class FieldErrors(Problems):
    """The problems of one body, and what its drops share: a batch's parcels repeat as its
    windows do, so each distinct parcel is read once (Parcels)."""

    def __init__(self) -> None:
        super().__init__()
        self.parcels: dict[tuple, ParcelIn] = {}


class AddressKind(Kind):
    """An object of strings: the geocoder reads complete_address (and city); any other field
    is kept if it is a string too (the schema's additionalProperties: describe_address)."""

    missing = "Must be an object of strings."

    def read(self, problems: Problems, value: Any, parent: str, field: ShapeField) -> Any:
        path = path_of(parent, field.name)
        if not isinstance(value, dict):
            problems.add(path, self.missing)
            return None
        if len(value) > MAX_ADDRESS_FIELDS:  # refused before any field is read
            problems.add(path, f"At most {MAX_ADDRESS_FIELDS} fields; got {len(value)}.")
            return None
        valid = True
        size = 0
        for key, part in value.items():
            if not 0 < len(key) <= MAX_ADDRESS_FIELD_NAME or "\x00" in key:
                # The name is not echoed in the path: it may be what is wrong with it.
                problems.add(path, _BAD_FIELD_NAME)
                valid = False
            elif isinstance(part, str) and len(part) <= MAX_ADDRESS_PART and "\x00" not in part:
                size += len(key) + len(part)
            elif isinstance(part, str):
                problems.add(f"{path}.{key}", _BAD_ADDRESS_PART)
                valid = False
            else:
                problems.add(f"{path}.{key}", "Must be a string.")
                valid = False
        if valid and size > MAX_ADDRESS_CHARS:
            problems.add(path, f"At most {MAX_ADDRESS_CHARS} characters in all; got {size}.")
            return None
        return value if valid else None

    def schema(self, field: ShapeField, kwargs: dict[str, Any]) -> serializers.Field:
        return ADDRESS.serializer()(**kwargs)


class Email(Kind):
    """The recipient's email: a string that looks like one address; "" is none."""

    message = f"Must be one email address, {MAX_EMAIL} characters at most."

    def read(self, problems: Problems, value: Any, parent: str, field: ShapeField) -> Any:
        if value == "":
            return None
        if not isinstance(value, str) or len(value) > MAX_EMAIL or not _EMAIL.fullmatch(value):
            problems.add(path_of(parent, field.name), self.message)
            return None
        return value

    def schema(self, field: ShapeField, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.CharField(max_length=MAX_EMAIL, **kwargs)


class VehicleCode(Kind):
    """A vehicle type's code as sent; whether it is an active type is read once per batch."""

    def read(self, problems: Problems, value: Any, parent: str, field: ShapeField) -> Any:
        if isinstance(value, str) and 0 < len(value) <= MAX_VEHICLE_CODE:
            return value
        problems.add(path_of(parent, field.name), _BAD_VEHICLE)
        return None

    def schema(self, field: ShapeField, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.CharField(max_length=MAX_VEHICLE_CODE, **kwargs)


class Weight(Kind):
    """weight_kg: a number above 0 and at most MAX_WEIGHT_KG, kept to the gram."""

    def read(self, problems: Problems, value: Any, parent: str, field: ShapeField) -> Any:
        weight = None
        # The range first: a huge number has more digits than quantize() may give.
        if (
            not isinstance(value, bool)
            and isinstance(value, int | float)
            and 0 < value <= MAX_WEIGHT_KG
        ):
            weight = Decimal(repr(value)).quantize(GRAM, rounding=ROUND_HALF_UP)
        if weight is None or not 0 < weight <= MAX_WEIGHT_KG:
            problems.add(path_of(parent, field.name), _BAD_WEIGHT)
            return None
        return weight

    def schema(self, field: ShapeField, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.FloatField(**kwargs)


class Money(Kind):
    """A money string: digits, at most two decimals, at most what the money columns hold."""

    def read(self, problems: Problems, value: Any, parent: str, field: ShapeField) -> Any:
        if isinstance(value, str) and MONEY_TEXT.match(value):
            return Decimal(value)
        problems.add(path_of(parent, field.name), 'Must be a money string such as "25.00".')
        return None

    def schema(self, field: ShapeField, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.RegexField(r"^[0-9]{1,10}(\.[0-9]{1,2})?$", **kwargs)


class Verification(Object):
    """`dropoff_verification`: an object of booleans, `pin`, `scan` and `signature` (absent:
    false); read as those three, in that order."""

    def read_at(self, problems: Problems, value: Any, where: str) -> Any:
        names = VERIFICATIONS
        if not isinstance(value, dict) or any(
            not isinstance(value.get(name, False), bool) for name in names
        ):
            problems.add(where, self.missing)
            return NO_VERIFICATION
        if problems.unknown_fields(value, where, self.shape.by_name, self.shape.closed):
            return NO_VERIFICATION
        return tuple(value.get(name, False) for name in names)


class Window(Object):
    """`dropoff_window`: {"start", "end"}, both times with a zone, as a (start, end) pair.

    Whether the window can be kept (its length, its end against the ETA, how far ahead)
    is a per-drop rule, INVALID_TIME_WINDOW (orders.decisions), not a 400.
    """

    def read_at(self, problems: Problems, value: Any, where: str) -> Any:
        if type(value) is dict and len(value) == 2:  # the usual case: both times seen before
            start, end = value.get("start"), value.get("end")
            if type(start) is str and type(end) is str:
                known = problems.moments
                if start in known and end in known:
                    return known[start], known[end]
        if not isinstance(value, dict):
            problems.add(where, self.missing)
            return None
        if problems.unknown_fields(value, where, self.shape.by_name, self.shape.closed):
            return None
        # Both absences are said before either time is read.
        for field in self.shape.fields:
            if value.get(field.name) is None:
                problems.add(f"{where}.{field.name}", REQUIRED)
        start, end = (
            None if value.get(field.name) is None else field.read(problems, value, where)
            for field in self.shape.fields
        )
        return None if start is None or end is None else (start, end)


class Parcels(Object):
    """`parcel`: each distinct parcel of a body is read once (FieldErrors.parcels)."""

    def read_at(self, problems: FieldErrors, value: Any, where: str) -> Any:
        key = _fields_key(value)
        known = problems.parcels.get(key) if key is not None else None
        if known is not None:
            return known
        before = problems.count
        parsed = super().read_at(problems, value, where)
        if parsed is not None and key is not None and problems.count == before:
            problems.parcels[key] = parsed
        return parsed


class CashOnDelivery(Object):
    """`cod`: {"amount": …}, read as the amount as sent: whether it is allowed is rule 9
    (INVALID_COD), a per-drop rejection, not a 400 (orders.decisions)."""

    def read_at(self, problems: Problems, value: Any, where: str) -> Any:
        if type(value) is dict and len(value) == 1 and value.get("amount") is not None:
            return value["amount"]  # the usual case, checked first
        if not isinstance(value, dict) or value.get("amount") is None:
            problems.add(where, self.missing)
            return None
        if problems.unknown_fields(value, where, self.shape.by_name, self.shape.closed):
            return None
        return value["amount"]


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
_BAD_VEHICLE = "Must be a vehicle type's code, such as motorbike."

ADDRESS_HELP = (
    f"An object of strings (each at most {MAX_ADDRESS_PART} characters, no NUL); other string "
    f"fields are kept too: at most {MAX_ADDRESS_FIELDS} fields, names of 1 to "
    f"{MAX_ADDRESS_FIELD_NAME} characters, {MAX_ADDRESS_CHARS} characters in all (names and "
    "values). Used when no coordinates are given: forward-geocoded, and the pin is echoed "
    "as resolved_pin. null counts as absent."
)
PHONE_HELP = (
    "E.164 string, e.g. +85512345678. Not checked at request level: a missing or invalid "
    "phone rejects the drop with INVALID_PHONE (a pickup's: every drop of its group)."
)
COORD_HELP = (
    "Number ({}). Give lat and long together, or an address. A missing partner, a "
    "non-number, out of range or exactly (0, 0) rejects the drop with INVALID_COORDINATES; "
    "null counts as absent. Coordinates win over an address."
)


def phone(example: str) -> ShapeField:
    # Typed so that a generated client types it; a wrong value still only rejects the drop.
    return ShapeField(
        "phone", Passed({"type": "string", "example": example}), null=False, help=PHONE_HELP
    )


def coordinates(lat: float, long: float) -> tuple[ShapeField, ShapeField]:
    def coordinate(name: str, example: float, meaning: str) -> ShapeField:
        kind = Passed({"type": "number", "format": "double", "example": example})
        return ShapeField(name, kind, help=COORD_HELP.format(meaning))

    return (
        coordinate("lat", lat, "latitude, -90..90"),
        coordinate("long", long, "longitude, -180..180"),
    )


ADDRESS = Shape(
    "Address",
    [
        ShapeField(name, Text(MAX_ADDRESS_PART), null=False)
        for name in ("complete_address", "city", "country")
    ],
    doc="The geocoder reads complete_address (and city); any other field must be a string too.",
)
ADDRESS_FIELD = ShapeField("address", AddressKind(), help=ADDRESS_HELP)


# The builders take the fields read, in table order (core.shapes.Shape: `build`).
def _pickup(name: str, phone: Any, lat: Any, long: Any, address, pickup_scheduled_at) -> PickupIn:
    return PickupIn(name, phone, Place(lat, long, address), pickup_scheduled_at)


def _recipient(name: str, phone: Any, lat: Any, long: Any, address, email) -> tuple:
    return name, phone, Place(lat, long, address), email


PICKUP = Shape(
    "Pickup",
    [
        ShapeField("name", Text(MAX_NAME), required=True),
        phone("+85512345678"),
        *coordinates(11.5564, 104.9282),
        ADDRESS_FIELD,
        ShapeField(
            "pickup_scheduled_at",
            Timestamp(),
            help="ISO 8601 with a time zone (e.g. 2026-01-31T09:30:00Z). Absent: pickup now, "
            "the drops start PENDING; given: they start SCHEDULED. In the past: "
            "SCHEDULE_IN_PAST; outside the area's opening hours: OUTSIDE_OPERATING_HOURS.",
        ),
    ],
    build=_pickup,
)
RECIPIENT = Shape(
    "Recipient",
    [
        ShapeField("name", Text(MAX_NAME), required=True),
        phone("+85512345679"),
        *coordinates(11.5696, 104.9210),
        ADDRESS_FIELD,
        ShapeField(
            "email",
            Email(),
            help="Optional: the recipient's email, for the notifications the business switches "
            "on (docs/notifications.md). Not an address: 400 VALIDATION_ERROR.",
        ),
    ],
    build=_recipient,
)
# What a drop may ask the courier for at the door (docs/contract.md §14, §24), in the order
# dropoff_verification is read: (pin, scan, signature).
VERIFICATIONS = ("pin", "scan", "signature")
NO_VERIFICATION = (False, False, False)
VERIFICATION = Shape(
    "DropoffVerification",
    [
        ShapeField(
            "pin",
            Bool(),
            null=False,
            default=False,
            help="Delivered only against a 4-digit PIN, given back as dropoff_pin.",
        ),
        ShapeField(
            "scan",
            Bool(),
            null=False,
            default=False,
            help="The courier's PICKED_UP and DELIVERED carry the label's short_code.",
        ),
        ShapeField(
            "signature",
            Bool(),
            null=False,
            default=False,
            help="The recipient signs in the courier's app; proof_of_delivery.signature_url.",
        ),
    ],
    closed="only pin, scan and signature",
)
WINDOW = Shape(
    "DropoffWindow",
    [
        ShapeField(
            "start",
            Timestamp(),
            required=True,
            help="The window opens (ISO 8601 with a time zone).",
        ),
        ShapeField(
            "end",
            Timestamp(),
            required=True,
            help="The window closes (ISO 8601 with a time zone).",
        ),
    ],
    doc="docs/contract.md §17: both times, each ISO 8601 with a zone; no other field.",
    closed="only start and end",
)


def _parcel(size, weight_kg, description, value) -> ParcelIn | None:
    if size is None or weight_kg is None:
        return None
    return ParcelIn(size, weight_kg, description or None, value)


PARCEL = Shape(
    "Parcel",
    [
        ShapeField(
            "size",
            Choice(PARCEL_SIZES),
            null=False,
            default=DEFAULT_PARCEL_SIZE,
            help="S (an envelope) to XL (furniture); default S. Above the group's vehicle's "
            "size: PARCEL_TOO_LARGE.",
        ),
        ShapeField(
            "weight_kg",
            Weight(),
            default=DEFAULT_WEIGHT_KG,
            help=f"Above 0 and at most {MAX_WEIGHT_KG}, kept to the gram; default 1. Above the "
            "vehicle's per-parcel limit, or taking the group's accepted load (in submission "
            "order) past the vehicle's: PARCEL_TOO_LARGE. A drop without a parcel is not "
            "weighed.",
        ),
        ShapeField("description", Text(MAX_PARCEL_DESCRIPTION), help="What it is."),
        ShapeField(
            "value",
            Money(),
            help='What it is worth, a money string such as "25.00" (for your records).',
        ),
    ],
    doc="docs/contract.md §18: every field optional; size S and 1 kg when not said.",
    closed="only size, weight_kg, description and value",
    build=_parcel,
)
COD = Shape(
    "CashOnDelivery",
    [
        ShapeField(
            "amount",
            Passed(doc=serializers.CharField),
            required=True,
            help="The cash the courier collects, a money string in the account's currency, "
            'e.g. "12.50". Not above zero, more than two decimals, not a string, or above '
            "COD_MAX_AMOUNT (500.00): the drop is rejected INVALID_COD. The plan's "
            "cod_fee_percent of it is added to the price.",
        ),
    ],
    closed="only amount",
)


def _drop(
    client_order_id,
    external_waybill,
    dropoff,
    dropoff_verification,
    sandbox_scenario,
    dropoff_window,
    notes,
    undeliverable_action,
    parcel,
    cod,
    recipient_language,
) -> DropIn:
    name, phone, place, email = dropoff
    pin, scan, signature = dropoff_verification
    return DropIn(
        client_order_id,
        external_waybill,
        name,
        phone,
        place,
        pin,
        sandbox_scenario,
        dropoff_window,
        notes or None,
        undeliverable_action or UNDELIVERABLE_ACTIONS[0],
        parcel,
        cod,
        email,
        scan,
        signature,
        recipient_language,
    )


DROP = Shape(
    "Drop",
    [
        ShapeField(
            "client_order_id",
            Text(MAX_ID),
            required=True,
            help="Your reference for this drop; unique among your active drops.",
        ),
        ShapeField(
            "external_waybill", Text(MAX_WAYBILL), help="Echoed in results; null if absent."
        ),
        ShapeField(
            "dropoff",
            Object(RECIPIENT, "Must be an object (the recipient)."),
            required=True,
            help="The recipient.",
        ),
        ShapeField(
            "dropoff_verification",
            Verification(
                VERIFICATION, 'Must be an object of booleans such as {"pin": true, "scan": true}.'
            ),
            default=NO_VERIFICATION,
            help='{"pin": true}: delivered only against a 4-digit PIN, given back as '
            'dropoff_pin in the accepted result. {"scan": true}: the courier scans the '
            'label\'s short_code at pickup and drop-off. {"signature": true}: the recipient '
            "signs in the courier's app.",
        ),
        ShapeField(
            "sandbox_scenario",
            Choice(SANDBOX_SCENARIOS),
            help="Sandbox keys only (a live key gets 400): the test driver walks the drop "
            "by itself (docs/sandbox.md). Default manual.",
        ),
        ShapeField(
            "dropoff_window",
            Window(WINDOW, 'Must be an object such as {"start": "…Z", "end": "…Z"}.'),
            help="When the recipient expects the drop (docs/contract.md §17). A missing or "
            "malformed start or end is 400; a window shorter than MIN_WINDOW_MINUTES (30), "
            "ending before the earliest possible arrival (the ETA model from the pickup time) "
            "or starting more than MAX_SCHEDULE_DAYS (7) days ahead rejects the drop with "
            "INVALID_TIME_WINDOW. The ETA's dropoff_at is never before start.",
        ),
        ShapeField(
            "notes",
            Text(MAX_NOTES),
            help="Instructions for the courier (e.g. a gate code): in tracking entries, the "
            "dashboard and the operator console, never on the recipient's page. null or "
            "empty: none.",
        ),
        ShapeField(
            "undeliverable_action",
            Choice(UNDELIVERABLE_ACTIONS),
            default=UNDELIVERABLE_ACTIONS[0],
            help="What happens to the parcel when delivery fails (docs/contract.md §19): "
            "return (the default: back to the pickup) or dispose.",
        ),
        ShapeField(
            "parcel",
            Parcels(PARCEL, 'Must be an object such as {"size": "M", "weight_kg": 2.5}.'),
            help="What is carried (§18).",
        ),
        ShapeField(
            "cod",
            CashOnDelivery(COD, 'Must be an object such as {"amount": "12.50"}.'),
            help="Cash to collect at the door (§18).",
        ),
        ShapeField(
            "recipient_language",
            Choice(RECIPIENT_LANGUAGES),
            help="km or en: the language of the recipient's tracking page and messages "
            "(docs/contract.md §26). Absent or null: the business's setting (km unless "
            "changed). Echoed in tracking entries as sent.",
        ),
    ],
    stops="dropoff",  # without a recipient, the rest of the drop is not read
    build=_drop,
)


def _group(pickup, dropoff, vehicle) -> GroupIn | None:
    if pickup is None:
        return None
    drops = [drop for drop in dropoff if drop is not None]
    # A vehicle that is not a code is said, and the default tried.
    return GroupIn(pickup, drops, vehicle_code=vehicle or DEFAULT_VEHICLE)


GROUP = Shape(
    "PickupGroup",
    [
        ShapeField("pickup", Object(PICKUP, "Must be an object."), required=True),
        ShapeField(
            "dropoff",
            Array(Object(DROP, "Must be an object."), "Must be a non-empty array of drops."),
            required=True,
            default=(),
            help="One or more drops.",
        ),
        ShapeField(
            "vehicle",
            VehicleCode(),
            default=DEFAULT_VEHICLE,
            help="An active vehicle type's code (GET /vehicle-types); default motorbike. "
            "Unknown or inactive: 400 VALIDATION_ERROR naming orders[i].vehicle. Its "
            "multiplier is in its drops' prices; its limits decide PARCEL_TOO_LARGE.",
        ),
    ],
    build=_group,
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


CLIENT_BATCH_ID = ShapeField(
    "client_batch_id",
    Text(MAX_ID),
    required=True,
    help="Your reference for the batch; unique per business and environment for good.",
)
ORDERS = ShapeField(
    "orders",
    Array(
        Object(GROUP, "Must be an object with pickup and dropoff."),
        "Must be a non-empty array of pickup groups.",
        before=_check_size,
    ),
    required=True,
    default=(),
    help=f"Pickup groups; at most {settings.MAX_DROPS_PER_BATCH} drops in all.",
)
QUOTE_REQUEST = Shape("QuoteRequest", [CLIENT_BATCH_ID, ORDERS])
# A quote_id is read in a quote's body too (the same parser): it only has no use there.
BATCH_REQUEST = Shape(
    "BatchRequest",
    [
        CLIENT_BATCH_ID,
        ShapeField(
            "quote_id",
            Text(MAX_ID, blank=False, doc=serializers.UUIDField),
            null=False,
            help="A quote of this same body (less quote_id): its prices are charged. "
            "Unexpired, this account's, backing no other batch; else 409 QUOTE_EXPIRED / "
            "QUOTE_USED / QUOTE_MISMATCH or 404 NOT_FOUND.",
        ),
        ORDERS,
    ],
)


def parse_batch(body: Any) -> BatchIn:
    """Check the whole shape; raise one VALIDATION_ERROR listing every problem, or return it."""
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": "The body must be a JSON object."}])
    errors = FieldErrors()
    values = BATCH_REQUEST.read(errors, body, "")
    groups = {gi: group for gi, group in enumerate(values["orders"]) if group is not None}
    if groups:
        _choose_vehicles(errors, groups)
    if errors.items:
        raise validation_error(errors.items, errors.more)
    parsed = BatchIn(
        values["client_batch_id"], list(groups.values()), fingerprint=fingerprint_of(body)
    )
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
