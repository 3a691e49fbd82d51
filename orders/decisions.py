"""Per-drop acceptance rules of DESIGN.md §4, decided without a query inside any loop.

The rules are checked in a fixed order and the first hit wins. A pickup's failure
rejects every drop of its group; so for each drop the winner is the earlier of its
pickup's first failure and its own.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from functools import lru_cache
from typing import Any

import phonenumbers

from geo.geocoders import Pin, address_key
from orders.inputs import Place


class Reason(IntEnum):
    """failure_reason values, in the order they are checked."""

    INVALID_PHONE = 1
    INVALID_COORDINATES = 2
    GEOCODE_FAILED = 3
    OUT_OF_SERVICE_AREA = 4
    SCHEDULE_IN_PAST = 5
    OUTSIDE_OPERATING_HOURS = 6
    DUPLICATE_CLIENT_ORDER_ID = 7
    INSUFFICIENT_BALANCE = 8


MESSAGES = {
    (Reason.INVALID_PHONE, "pickup"): "The pickup phone is not a valid E.164 number.",
    (Reason.INVALID_PHONE, "drop"): "The recipient phone is not a valid E.164 number.",
    (Reason.INVALID_COORDINATES, "pickup"): "The pickup needs valid lat and long, or an address.",
    (Reason.INVALID_COORDINATES, "drop"): "The drop needs valid lat and long, or an address.",
    (Reason.GEOCODE_FAILED, "pickup"): "The pickup address could not be resolved to a location.",
    (Reason.GEOCODE_FAILED, "drop"): "The drop address could not be resolved to a location.",
    (Reason.OUT_OF_SERVICE_AREA, "pickup"): "The pickup is outside the serviceable area.",
    (Reason.OUT_OF_SERVICE_AREA, "drop"): "The drop is outside the serviceable area.",
    (Reason.SCHEDULE_IN_PAST, "pickup"): "pickup_scheduled_at is in the past.",
    (
        Reason.OUTSIDE_OPERATING_HOURS,
        "pickup",
    ): "The pickup time is outside the area's opening hours.",
    (
        Reason.DUPLICATE_CLIENT_ORDER_ID,
        "drop",
    ): "client_order_id is already used by an active drop.",
    (Reason.INSUFFICIENT_BALANCE, "drop"): "The wallet balance does not cover this drop's price.",
}

# [0-9] and \Z, not \d and $: \d matches any Unicode digit ("+855١٢٣…", which phonenumbers
# would happily read) and $ matches before a final newline.
_E164 = re.compile(r"\+[1-9][0-9]{1,14}\Z")


@lru_cache(maxsize=65536)
def _valid_e164(phone: str) -> bool:
    if not _E164.match(phone):
        return False
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(phone, None))
    except phonenumbers.NumberParseException:
        return False


def phone_is_valid(phone: Any) -> bool:
    return isinstance(phone, str) and _valid_e164(phone)


def _coordinate(value: Any, limit: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    if not math.isfinite(number) or abs(number) > limit:
        return None
    return number


def coordinates_of(place: Place) -> Pin | None | Reason:
    """Given coordinates as a pin; None when there are none and an address must be used."""
    if not place.has_coordinates:
        return None if place.address is not None else Reason.INVALID_COORDINATES
    lat, long = _coordinate(place.lat, 90.0), _coordinate(place.long, 180.0)
    if lat is None or long is None or (lat == 0.0 and long == 0.0):
        return Reason.INVALID_COORDINATES
    return lat, long


@dataclass(slots=True)
class Located:
    """Where a pickup or drop is, or the first reason (among 1–3) it cannot be placed."""

    pin: Pin | None = None
    resolved: bool = False  # pin came from the geocoder
    reason: Reason | None = None
    areas: tuple[int, ...] = ()


def locate(place: Place, phone: Any, pins: dict[str, Pin | None]) -> Located:
    if not phone_is_valid(phone):
        return Located(reason=Reason.INVALID_PHONE)
    given = coordinates_of(place)
    if isinstance(given, Reason):
        return Located(reason=given)
    if given is not None:
        return Located(pin=given)
    pin = pins.get(address_key(place.address))
    if pin is None:
        return Located(reason=Reason.GEOCODE_FAILED)
    return Located(pin=pin, resolved=True)


def addresses_to_geocode(places: list[Place]) -> list[dict[str, str]]:
    """Address-only places: the only ones the geocoder is asked about."""
    return [p.address for p in places if not p.has_coordinates and p.address is not None]


def pickup_time_reason(
    scheduled_at: datetime | None, now: datetime, is_open: bool
) -> Reason | None:
    if scheduled_at is not None and scheduled_at < now:
        return Reason.SCHEDULE_IN_PAST
    if not is_open:
        return Reason.OUTSIDE_OPERATING_HOURS
    return None
