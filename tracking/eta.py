"""The ETA of a drop (DESIGN.md §14): a documented model, not a promise.

Before pickup: the courier is dispatched DISPATCH_MINUTES after the pickup time (the
scheduled time, else when the order was created), or now if that is already past; the drop
follows after HANDLING_MINUTES at the pickup, the haversine distance at COURIER_SPEED_KMH
and HANDLING_MINUTES at the drop. After pickup: from the pickup event, the travel and the
drop's handling, or now if that is already past. None once delivered, failed or cancelled.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from core.formats import iso_z
from orders.models import DropStatus

FINISHED = frozenset({DropStatus.DELIVERED, DropStatus.FAILED, DropStatus.CANCELLED})


def eta_of(
    *,
    status: str,
    pickup_time: datetime,
    picked_up_at: datetime | None,
    km: float,
    now: datetime,
) -> dict | None:
    """`{"pickup_at", "dropoff_at"}` in UTC wire format, or None for a finished drop."""
    if status in FINISHED:
        return None
    travel = timedelta(hours=km / settings.COURIER_SPEED_KMH)
    handling = timedelta(minutes=settings.HANDLING_MINUTES)
    if picked_up_at is not None:
        return {
            "pickup_at": iso_z(picked_up_at),
            "dropoff_at": iso_z(max(picked_up_at + travel + handling, now)),
        }
    pickup_at = max(pickup_time + timedelta(minutes=settings.DISPATCH_MINUTES), now)
    return {
        "pickup_at": iso_z(pickup_at),
        "dropoff_at": iso_z(pickup_at + handling + travel + handling),
    }
