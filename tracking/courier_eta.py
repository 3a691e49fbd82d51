"""The ETA counted from the courier (docs/contract.md §14, §20): where the courier is now,
through the stops before the drop.

While a courier's position is fresh, a drop on their way is reached by riding from that
position through the order's stops in stop order: first the pickup, with its handling, if
none of the order's drops is picked up yet; then each drop still to deliver, with the
ride at COURIER_SPEED_KMH and its handling. The same model as tracking/eta.py, started from
the courier's real place instead of from the pickup time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings

from core.formats import iso_z
from geo.geometry import DistancesFrom
from orders.models import DropStatus


class Stop(NamedTuple):
    drop_id: str
    lat: float
    long: float
    status: str


def etas_from_courier(
    *,
    position: tuple[float, float],
    pickup: tuple[float, float],
    stops: list[Stop],
    now: datetime,
) -> dict[str, dict]:
    """Each stop's ETA, `{"pickup_at", "dropoff_at"}` in wire form, by drop id. `stops` are
    the order's drops still on the way, in stop order."""
    speed = settings.COURIER_SPEED_KMH
    handling = timedelta(minutes=settings.HANDLING_MINUTES)
    at, here = now, position
    picked_up = any(stop.status == DropStatus.PICKED_UP for stop in stops)
    pickup_at = None
    if not picked_up:  # to the pickup first, and its handling
        at += _ride(here, pickup, speed)
        pickup_at, here = iso_z(at), pickup
        at += handling
    etas = {}
    for stop in stops:
        at += _ride(here, (stop.lat, stop.long), speed) + handling
        here = (stop.lat, stop.long)
        etas[stop.drop_id] = {"pickup_at": pickup_at, "dropoff_at": iso_z(at)}
    return etas


def _ride(start: tuple[float, float], end: tuple[float, float], speed_kmh: float) -> timedelta:
    return timedelta(hours=DistancesFrom(*start).km(*end) / speed_kmh)
