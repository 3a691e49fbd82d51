"""The courier API's request bodies (docs/contract.md §20), each declared once: a table of
core.shapes from which both the parser (every problem a 400 naming its field, in the §3
envelope) and the OpenAPI description (couriers/schema.py) are made. The kinds with a rule
of their own follow; the uploads beside a move (photo, signature) are checked at the end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from core.api import validation_error
from core.serializers import NO_NUL
from core.shapes import (
    Array,
    Bool,
    Choice,
    Field,
    Kind,
    Object,
    Problems,
    Shape,
    Timestamp,
    path_of,
)
from couriers.services import Point, shift_end_problem
from orders.models import FailureReason
from orders.statuses import COURIER_MOVES
from tracking.proof import MAX_PHOTO_BYTES, MAX_SIGNATURE_BYTES, PNG_MAGIC, photo_extension

# WRONG_PIN is the PIN rule's to set (tracking.lifecycle), never a courier's choice.
COURIER_FAILURE_REASONS = tuple(r.value for r in FailureReason if r != FailureReason.WRONG_PIN)
MAX_TEXT = 200
MAX_SCAN = 40  # a short code is 8 to 12 characters; typed with spaces, a little more
MAX_ACCURACY = 100_000  # metres
MAX_MOMENT = 40  # characters of a point's time
UNKNOWN = "Unknown field."
NUL = "Must not contain NUL characters."
# A multipart form's values are all text: there, these stand for the booleans.
FORM_BOOLEANS = {"true": True, "false": False}
# A move's uploads travel beside its fields in a multipart form (proof_photo, proof_signature).
UPLOADS = ("photo", "signature")


# --- Kinds with a rule of their own ----------------------------------------------------------


class Line(Kind):
    """A string of at most `max_length` characters (at least one, unless `empty`); anything
    else is `message`. Where `nul` is refused, a NUL is said as such."""

    def __init__(
        self, max_length: int, message: str, *, empty: bool = True, nul: bool = True
    ) -> None:
        self.max_length, self.missing = max_length, message
        self.empty, self.nul = empty, nul

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if isinstance(value, str) and (self.empty or value) and len(value) <= self.max_length:
            if self.nul or "\x00" not in value:
                return value
            problems.add(path_of(parent, field.name), NUL)  # PostgreSQL text holds none
            return None
        problems.add(path_of(parent, field.name), self.missing)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        if not self.empty:
            kwargs["min_length"] = 1
        if not self.nul:
            return serializers.RegexField(NO_NUL, max_length=self.max_length, **kwargs)
        return serializers.CharField(max_length=self.max_length, allow_blank=self.empty, **kwargs)


class Pin(Kind):
    """A delivery PIN: four digits 0-9, as a string. Nothing else can be the drop's PIN, so
    anything else is a 400, not a wrong attempt (the third fails the drop)."""

    missing = "A PIN is four digits, as a string."

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if isinstance(value, str) and len(value) == 4 and value.isascii() and value.isdigit():
            return value
        problems.add(path_of(parent, field.name), self.missing)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.RegexField(r"^[0-9]{4}$", **kwargs)


class Flag(Bool):
    """true or false; in a multipart form (`form`), "true" or "false" too. Absent where
    required, or null where null is refused, it is said as a wrong value is."""

    missing = "Must be true or false."

    def __init__(self, *, form: bool = False) -> None:
        self.form = form

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if self.form and isinstance(value, str) and value in FORM_BOOLEANS:
            return FORM_BOOLEANS[value]
        return super().read(problems, value, parent, field)

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        if field.required:  # DRF refuses a default beside required
            return serializers.BooleanField(**kwargs)
        return super().schema(field, kwargs)


class OneOf(Choice):
    """One of `values` (read as plain text), described inline (core.openapi.one_of), not as
    a named enum."""

    def __init__(self, values: Sequence[str]) -> None:
        super().__init__([str(value) for value in values])

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        from core.openapi import one_of  # core.openapi reads settings at import

        return one_of(list(self.values), **kwargs)


class Number(Kind):
    """A JSON number from `low` to `high`, read as a float; anything else is `message`."""

    def __init__(self, low: float, high: float, message: str) -> None:
        self.low, self.high, self.missing = low, high, message

    def fast(self, var: str, field: Field) -> str | None:
        return f"type({var}) is float and {self.low!r} <= {var} <= {self.high!r}"

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        # Compared before float(): an int too big for a float is out of range, not a 500;
        # NaN compares false.
        if type(value) in (int, float) and self.low <= value <= self.high:
            return float(value)
        problems.add(path_of(parent, field.name), self.missing)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.FloatField(min_value=self.low, max_value=self.high, **kwargs)


class Moment(Kind):
    """A time with its zone (ISO 8601, years 0002 to 9998), read in UTC."""

    missing = "Must be a time with a zone, e.g. …T10:00:00Z."

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        moment = moment_of(value)
        if moment is None:
            problems.add(path_of(parent, field.name), self.missing)
        return moment

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.DateTimeField(**kwargs)


class ShiftEnd(Timestamp):
    """When the shift ends: a time with its zone, as every time of the API
    (core.shapes.Timestamp), in the future and within couriers.services.SHIFT_AHEAD."""

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        moment = super().read(problems, value, parent, field)
        if moment is None:
            return None
        problem = shift_end_problem(shift_ends_at=moment, now=timezone.now())
        if problem is not None:
            problems.add(path_of(parent, field.name), problem)
            return None
        return moment


class Points(Array):
    """`points`: 1 to MAX_COURIER_POINTS positions; any other list is refused whole."""

    def __init__(self, item: Object) -> None:
        # Not Array's: its message is fixed when made, this one says the setting as read.
        self.item, self.before = item, None

    @property
    def missing(self) -> str:  # type: ignore[override]
        return f"Must be 1 to {settings.MAX_COURIER_POINTS} points."

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if isinstance(value, list) and 0 < len(value) <= settings.MAX_COURIER_POINTS:
            return super().read(problems, value, parent, field)
        problems.add(path_of(parent, field.name), self.missing)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        kwargs.pop("allow_null", None)
        child = self.item.schema(Field("", self.item, required=True), {})
        most = settings.MAX_COURIER_POINTS
        return serializers.ListField(child=child, min_length=1, max_length=most, **kwargs)


def moment_of(value: Any) -> datetime | None:
    """`value` as a time in UTC, if it is a time with a zone; else None."""
    if not isinstance(value, str) or len(value) > MAX_MOMENT:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None or not 2 <= moment.year <= 9998:
        return None
    return moment.astimezone(UTC)


def unknown_fields(*allowed: str) -> Callable[[Problems, dict, str, dict], None]:
    """A shape's `unknown`: each field that is neither the table's nor `allowed`, named."""

    def unknown(problems: Problems, obj: dict, where: str, known: dict) -> None:
        for name in sorted(set(obj).difference(known, allowed)):
            problems.add(path_of(where, name), UNKNOWN)

    return unknown


# --- The bodies ------------------------------------------------------------------------------

SIGN_IN = Shape(
    "CourierSignIn",
    [
        Field(
            "phone",
            Line(MAX_TEXT, "Must be a non-empty string.", empty=False, nul=False),
            required=True,
            help="E.164, as the courier was created with; spaces, dashes, dots and brackets "
            "between the digits are fine (+855 12 345 678).",
        ),
        Field(
            "password", Line(MAX_TEXT, "Must be a non-empty string.", empty=False), required=True
        ),
    ],
    unknown=unknown_fields(),
)


@dataclass(frozen=True, slots=True)
class StatusAsked:
    online: bool
    shift_ends_at: datetime | None = None


STATUS = Shape(
    "CourierStatus",
    [
        Field("online", Flag(), required=True),
        Field(
            "shift_ends_at",
            ShiftEnd(),
            help="When the shift ends (a time with its zone, within 24 hours): the planner "
            "adds nothing to the run that would end later. Only with online: true; absent "
            "or null, no end. Going offline clears it.",
        ),
    ],
    unknown=unknown_fields(),
    build=StatusAsked,
)
OFFLINE_SHIFT = "Only with online: true: going offline ends the shift."


@dataclass(frozen=True, slots=True)
class Move:
    to: str
    pin: str | None = None
    received_by: str | None = None
    reason: str = FailureReason.OTHER
    cod_collected: bool = False
    scan: str | None = None  # the label's code, scanned or typed (docs/contract.md §24)


MOVE = Shape(
    "CourierMove",
    [
        Field("to", OneOf(COURIER_MOVES), required=True),
        Field("pin", Pin(), help="The recipient's 4-digit PIN."),
        Field(
            "received_by",
            Line(MAX_TEXT, f"At most {MAX_TEXT} characters.", nul=False),
            help="Who took the parcel (on RETURNED, at the shop); blank names no one.",
        ),
        Field(
            "reason",
            OneOf(COURIER_FAILURE_REASONS),
            null=False,
            default=FailureReason.OTHER,
            help="Why a FAILED move failed; default OTHER.",
        ),
        Field(
            "cod_collected",
            Flag(form=True),
            null=False,
            default=False,
            help='In a multipart form: "true" or "false".',
        ),
        Field(
            "scan",
            Line(MAX_SCAN, "The label's code, as a string."),
            help="The label's short_code, scanned or typed (any case, spaces ignored): "
            "PICKED_UP and DELIVERED of a drop that needs_scan.",
        ),
    ],
    doc="A move: as JSON, or as a multipart form with the photo and the signature beside it.",
    unknown=unknown_fields(*UPLOADS),
)
POINT = Shape(
    "CourierPoint",
    [
        Field("lat", Number(-90, 90, "Must be a number from -90 to 90."), required=True),
        Field("long", Number(-180, 180, "Must be a number from -180 to 180."), required=True),
        Field("at", Moment(), required=True),
        Field(
            "accuracy",
            Number(0, MAX_ACCURACY, "Metres: a number of at least 0."),
            help="Metres.",
        ),
    ],
    unknown=unknown_fields(),
    build=Point,
)
LOCATION = Shape(
    "CourierLocation",
    [Field("points", Points(Object(POINT, "Must be an object.")), required=True)],
    unknown=unknown_fields(),
)


# --- Reading them ----------------------------------------------------------------------------


def read_body(shape: Shape, body: Any) -> Any:
    """`body` read by `shape`: its fields' values by name (or what its `build` makes of
    them), or a 400 listing every problem."""
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": "Must be a JSON object."}])
    problems = Problems()
    values = shape.read(problems, body, "")
    if problems.items:
        raise validation_error(problems.items, problems.more)
    return values


def parse_sign_in(body: Any) -> tuple[str, str]:
    values = read_body(SIGN_IN, body)
    return values["phone"].strip(), values["password"]


def parse_status(body: Any) -> StatusAsked:
    """The status asked, and when the shift ends; a shift's end beside online: false is a 400
    (offline has no shift: it would be dropped without a word)."""
    asked = read_body(STATUS, body)
    if not asked.online and asked.shift_ends_at is not None:
        raise validation_error([{"field": "shift_ends_at", "message": OFFLINE_SHIFT}])
    return asked


def parse_move(body: Any) -> Move:
    """A move's fields; from JSON, or from a multipart form (the photo beside them), whose
    values are all text: "true" and "false" stand for the booleans there."""
    values = read_body(MOVE, body)
    values["received_by"] = (values["received_by"] or "").strip() or None
    return Move(**values)


def parse_points(body: Any) -> list[Point]:
    """`points`: 1..MAX_COURIER_POINTS of {lat, long, at, accuracy?}; any bad point is a 400."""
    return read_body(LOCATION, body)["points"]


def parse_since(text: str | None) -> datetime | None:
    """`since` on GET /courier/route: an earlier answer's `as_of` (a time with its zone)."""
    if text is None:
        return None
    moment = moment_of(text)
    if moment is None:
        message = "Must be a time with a zone, as an earlier answer's as_of."
        raise validation_error([{"field": "since", "message": message}])
    return moment


def proof_photo(upload: Any) -> Any:
    """A delivery photo as sent (multipart field `photo`), or None: a PNG, JPEG or WebP by
    its bytes, at most 5 MB; anything else a 400 naming `photo`."""
    if upload is None:
        return None
    problem = None
    if upload.size > MAX_PHOTO_BYTES:
        problem = "The photo is over 5 MB."
    else:
        upload.seek(0)
        if photo_extension(upload.read(12)) is None:
            problem = "The photo must be a PNG, JPEG or WebP image."
        upload.seek(0)
    if problem is not None:
        raise validation_error([{"field": "photo", "message": problem}])
    return upload


def proof_signature(upload: Any) -> Any:
    """The recipient's signature as sent (multipart field `signature`), or None: a PNG by its
    bytes, at most 1 MB; anything else a 400 naming `signature`, as a photo's is."""
    if upload is None:
        return None
    problem = None
    if upload.size > MAX_SIGNATURE_BYTES:
        problem = "The signature is over 1 MB."
    else:
        upload.seek(0)
        if upload.read(len(PNG_MAGIC)) != PNG_MAGIC:
            problem = "The signature must be a PNG image."
        upload.seek(0)
    if problem is not None:
        raise validation_error([{"field": "signature", "message": problem}])
    return upload
