"""Builders and readers shared by the geo tests: demo places, service areas, address drops,
submitting a batch and reading its results.

Fixtures live in tests/fixtures.py.
"""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

from geo.models import OpeningHours, ServiceArea
from tests.factories import drop, group

PHNOM_PENH_TZ = ZoneInfo("Asia/Phnom_Penh")

# Demo places of docs/contract.md §8 (seeded by the `region` fixture).
ROYAL_PALACE = {
    "complete_address": "Royal Palace, Phnom Penh",
    "city": "Phnom Penh",
    "country": "KH",
}
ROYAL_PALACE_PIN = {"lat": 11.5637, "long": 104.9311}
CENTRAL_MARKET = {
    "complete_address": "Central Market, Phnom Penh",
    "city": "Phnom Penh",
    "country": "KH",
}
CENTRAL_MARKET_PIN = {"lat": 11.5696, "long": 104.9210}
ANGKOR_WAT = {"complete_address": "Angkor Wat, Siem Reap", "city": "Siem Reap", "country": "KH"}
ANGKOR_WAT_PIN = {"lat": 13.4125, "long": 103.8670}  # outside the demo area
NOWHERE = {"complete_address": "42 Nowhere Street", "city": "Atlantis", "country": "KH"}


def local(*args: int) -> datetime:
    """A wall-clock moment in the service time zone (Asia/Phnom_Penh, UTC+7)."""
    return datetime(*args, tzinfo=PHNOM_PENH_TZ)


def address_drop(client_order_id: str, address: dict, **recipient_overrides) -> dict:
    """A drop with an address and no coordinates."""
    entry = drop(client_order_id, **recipient_overrides)
    del entry["dropoff"]["lat"], entry["dropoff"]["long"]
    entry["dropoff"]["address"] = address
    return entry


def address_pickup_group(address: dict, *drops: dict, **pickup_overrides) -> dict:
    """A pickup group whose pickup has an address and no coordinates."""
    entry = group(*drops, **pickup_overrides)
    del entry["pickup"]["lat"], entry["pickup"]["long"]
    entry["pickup"]["address"] = address
    return entry


def submit(api, key: str, body: dict) -> dict:
    """POST /orders/bulk; the batch is processed (200) and its data returned."""
    response = api.bulk(body, key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def results_by_id(data: dict) -> dict[str, dict]:
    return {entry["client_order_id"]: entry for entry in data["orders"]}


def reasons(data: dict) -> dict[str, str]:
    """client_order_id → failure_reason, or "accepted"."""
    return {
        entry["client_order_id"]: entry.get("failure_reason", entry["status"])
        for entry in data["orders"]
    }


def square(west: float, south: float, east: float, north: float) -> list:
    """The coordinates of one closed rectangular ring, [longitude, latitude] pairs."""
    return [[[west, south], [east, south], [east, north], [west, north], [west, south]]]


def polygon(west: float, south: float, east: float, north: float) -> dict:
    return {"type": "Polygon", "coordinates": square(west, south, east, north)}


def make_area(
    name: str,
    geojson: dict,
    *,
    days: range | list[int] = range(7),
    opens: time = time(7),
    closes: time = time(21),
    active: bool = True,
) -> ServiceArea:
    """A service area open `opens`–`closes` on `days` (0 = Monday)."""
    area = ServiceArea.objects.create(name=name, geojson=geojson, active=active)
    OpeningHours.objects.bulk_create(
        [OpeningHours(area=area, weekday=d, opens=opens, closes=closes) for d in days]
    )
    return area
