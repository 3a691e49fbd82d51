"""The courier API's request bodies (docs/contract.md §20): every problem a 400 naming its
field, in the §3 envelope."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from core.api import validation_error
from couriers.services import Point
from orders.models import FailureReason
from orders.statuses import COURIER_MOVES
from tracking.proof import MAX_PHOTO_BYTES, MAX_SIGNATURE_BYTES, PNG_MAGIC, photo_extension

# WRONG_PIN is the PIN rule's to set (tracking.lifecycle), never a courier's choice.
COURIER_FAILURE_REASONS = tuple(r.value for r in FailureReason if r != FailureReason.WRONG_PIN)
MAX_TEXT = 200
MAX_SCAN = 40  # a short code is 8 to 12 characters; typed with spaces, a little more


def _object(body: Any) -> dict:
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": "Must be a JSON object."}])
    return body


def _unknown(body: dict, known: set[str], details: list[dict[str, str]]) -> None:
    for name in sorted(set(body) - known):
        details.append({"field": name, "message": "Unknown field."})


def parse_sign_in(body: Any) -> tuple[str, str]:
    body, details = _object(body), []
    _unknown(body, {"phone", "password"}, details)
    for name in ("phone", "password"):
        value = body.get(name)
        if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
            details.append({"field": name, "message": "Must be a non-empty string."})
    if details:
        raise validation_error(details)
    return body["phone"].strip(), body["password"]


def parse_status(body: Any) -> bool:
    body, details = _object(body), []
    _unknown(body, {"online"}, details)
    if not isinstance(body.get("online"), bool):
        details.append({"field": "online", "message": "Must be true or false."})
    if details:
        raise validation_error(details)
    return body["online"]


@dataclass(frozen=True, slots=True)
class Move:
    to: str
    pin: str | None = None
    received_by: str | None = None
    reason: str = FailureReason.OTHER
    cod_collected: bool = False
    scan: str | None = None  # the label's code, scanned or typed (docs/contract.md §24)


def parse_move(body: Any) -> Move:
    """A move's fields; from JSON, or from a multipart form (the photo beside them), whose
    values are all text: "true" and "false" stand for the booleans there."""
    body, details = _object(body), []
    known = {"to", "pin", "received_by", "reason", "cod_collected", "photo", "scan", "signature"}
    _unknown(body, known, details)
    to = body.get("to")
    if to not in COURIER_MOVES:
        details.append({"field": "to", "message": f"Must be one of {', '.join(COURIER_MOVES)}."})
    pin = body.get("pin")
    if pin is not None and not (isinstance(pin, str) and len(pin) == 4 and pin.isdigit()):
        details.append({"field": "pin", "message": "A PIN is four digits, as a string."})
    received_by = body.get("received_by")
    if received_by is not None and not (
        isinstance(received_by, str) and len(received_by) <= MAX_TEXT and "\x00" not in received_by
    ):
        details.append({"field": "received_by", "message": "At most 200 characters."})
    reason = body.get("reason", FailureReason.OTHER)
    if reason not in COURIER_FAILURE_REASONS:
        message = f"Must be one of {', '.join(COURIER_FAILURE_REASONS)}."
        details.append({"field": "reason", "message": message})
    collected = body.get("cod_collected", False)
    if isinstance(collected, str):  # a multipart form's text
        collected = {"true": True, "false": False}.get(collected, collected)
    if not isinstance(collected, bool):
        details.append({"field": "cod_collected", "message": "Must be true or false."})
    scan = body.get("scan")
    if scan is not None and not (isinstance(scan, str) and len(scan) <= MAX_SCAN):
        details.append({"field": "scan", "message": "The label's code, as a string."})
    if details:
        raise validation_error(details)
    received_by = (received_by or "").strip() or None
    return Move(to, pin, received_by, reason, collected, scan)


def parse_since(text: str | None) -> datetime | None:
    """`since` on GET /courier/route: an earlier answer's `as_of` (a time with its zone)."""
    if text is None:
        return None
    moment = _moment(text)
    if moment is None:
        message = "Must be a time with a zone, as an earlier answer's as_of."
        raise validation_error([{"field": "since", "message": message}])
    return moment


def parse_points(body: Any) -> list[Point]:
    """`points`: 1..MAX_COURIER_POINTS of {lat, long, at, accuracy?}; any bad point is a 400."""
    body, details = _object(body), []
    _unknown(body, {"points"}, details)
    points = body.get("points")
    if not isinstance(points, list) or not 1 <= len(points) <= settings.MAX_COURIER_POINTS:
        details.append(
            {"field": "points", "message": f"Must be 1 to {settings.MAX_COURIER_POINTS} points."}
        )
        raise validation_error(details)
    parsed = [_point(point, f"points[{i}]", details) for i, point in enumerate(points)]
    if details:
        raise validation_error(details)
    return parsed  # type: ignore[return-value]


def _point(point: Any, where: str, details: list[dict[str, str]]) -> Point | None:
    if not isinstance(point, dict):
        details.append({"field": where, "message": "Must be an object."})
        return None
    _unknown_at = len(details)
    for name in sorted(set(point) - {"lat", "long", "at", "accuracy"}):
        details.append({"field": f"{where}.{name}", "message": "Unknown field."})
    lat = _number(point.get("lat"), 90)
    long = _number(point.get("long"), 180)
    if lat is None:
        details.append({"field": f"{where}.lat", "message": "Must be a number from -90 to 90."})
    if long is None:
        details.append({"field": f"{where}.long", "message": "Must be a number from -180 to 180."})
    at = _moment(point.get("at"))
    if at is None:
        details.append(
            {"field": f"{where}.at", "message": "Must be a time with a zone, e.g. …T10:00:00Z."}
        )
    accuracy = point.get("accuracy")
    if accuracy is not None:
        accuracy = _number(accuracy, 100_000)
        if accuracy is None or accuracy < 0:
            details.append(
                {"field": f"{where}.accuracy", "message": "Metres: a number of at least 0."}
            )
    if len(details) > _unknown_at:
        return None
    return Point(lat, long, at, accuracy)  # type: ignore[arg-type]


def _number(value: Any, limit: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and abs(number) <= limit else None


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None or not 2 <= moment.year <= 9998:
        return None
    return moment.astimezone(UTC)


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
