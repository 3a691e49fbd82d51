"""The ETA counted from the courier (docs/contract.md §14, §20, §21): where the courier is
now, through every stop before the drop on their run, other orders' included.

While a courier's position is fresh, a drop on their way is reached by riding from that
position through the run's stops still to do, in the run's order (orders/runs.py): at a
pickup, the courier arrives (that order's `pickup_at`) and spends its handling; at a drop,
they arrive and spend its handling (its `dropoff_at`). Rides at COURIER_SPEED_KMH over the
straight line, as in tracking/eta.py, started from the courier's real place instead of from
the pickup time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from core.formats import iso_z
from geo.geometry import DistancesFrom
from orders.runs import PICKUP, RunStop


def etas_through_run(
    *, position: tuple[float, float], stops: list[RunStop], now: datetime
) -> dict[str, dict]:
    """Each drop's ETA on the run, `{"pickup_at", "dropoff_at"}` in wire form, by drop id.
    `stops` are the run's stops still to do, in order."""
    speed = settings.COURIER_SPEED_KMH
    handling = timedelta(minutes=settings.HANDLING_MINUTES)
    at, here = now, position
    pickup_at: dict = {}
    etas = {}
    for stop in stops:
        at += _ride(here, (stop.lat, stop.long), speed)
        here = (stop.lat, stop.long)
        if stop.kind == PICKUP:
            pickup_at[stop.order_id] = iso_z(at)
            at += handling
        else:
            at += handling
            etas[str(stop.drop_id)] = {
                "pickup_at": pickup_at.get(stop.order_id),
                "dropoff_at": iso_z(at),
            }
    return etas


def _ride(start: tuple[float, float], end: tuple[float, float], speed_kmh: float) -> timedelta:
    return timedelta(hours=DistancesFrom(*start).km(*end) / speed_kmh)
