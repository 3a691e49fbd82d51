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


class EtaModel:
    """The model's settings, read once for a whole listing of entries."""

    __slots__ = ("dispatch", "handling", "speed_kmh", "starts", "texts")

    def __init__(self) -> None:
        self.speed_kmh = settings.COURIER_SPEED_KMH
        self.handling = timedelta(minutes=settings.HANDLING_MINUTES)
        self.dispatch = timedelta(minutes=settings.DISPATCH_MINUTES)
        # The drops of one batch share their pickup time: its text is made once.
        self.texts: dict[datetime, str] = {}
        # (pickup time, now) -> the pickup's text, and when a drop with no way to go would be
        # done (pickup + both handlings): all that the drops of one batch share.
        self.starts: dict[tuple[datetime, datetime], tuple[str, datetime]] = {}

    def _text(self, moment: datetime) -> str:
        text = self.texts.get(moment)
        if text is None:
            text = self.texts[moment] = iso_z(moment)
        return text

    def of(
        self,
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
        travel = timedelta(hours=km / self.speed_kmh)
        if picked_up_at is not None:
            return {
                "pickup_at": self._text(picked_up_at),
                "dropoff_at": iso_z(max(picked_up_at + travel + self.handling, now)),
            }
        start = self.starts.get((pickup_time, now))
        if start is None:
            pickup_at = max(pickup_time + self.dispatch, now)
            start = self.starts[pickup_time, now] = (
                iso_z(pickup_at),
                pickup_at + self.handling + self.handling,
            )
        pickup_text, handled = start
        return {"pickup_at": pickup_text, "dropoff_at": iso_z(handled + travel)}
