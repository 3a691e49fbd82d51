"""The ETA of a drop (docs/contract.md §14): a documented model, not a promise.

Before pickup: the courier is dispatched DISPATCH_MINUTES after the pickup time (the
scheduled time, else when the order was created), or now if that is already past; the drop
follows after HANDLING_MINUTES at the pickup, the haversine distance at COURIER_SPEED_KMH
and HANDLING_MINUTES at the drop. After pickup: from the pickup event, the travel and the
drop's handling, or now if that is already past. None once delivered, failed or cancelled.
Once its order is sequenced (docs/contract.md §21), a drop is reached along the route: the
ride through the stops before it (Drop.route_km) and their handling, each HANDLING_MINUTES.

Counted from the courier (§20, §21), while their position is fresh (`etas_through_run`): a
drop on their way is reached by riding from that position through the run's stops still to
do, in the run's order (orders/runs.py), other orders' included: at a pickup the courier
arrives (that order's `pickup_at`) and spends its handling; at a drop, they arrive and spend
its handling (its `dropoff_at`).

A tracking answer makes one ETA per drop, so the per-drop part counts in whole microseconds
since the epoch rather than in datetimes: a timedelta from a float of hours and an
isoformat() cost ~2 µs a drop, ~2 ms of 1000 (docs/decisions.md, "The ETA is computed when
an entry is read, in integer microseconds"). The arithmetic
is timedelta's own (microseconds, the fraction rounded half to even), so the moments are
the ones datetimes would give.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings

from core.formats import iso_z
from geo.geometry import DistancesFrom
from orders.runs import PICKUP, RunStop
from orders.statuses import NO_DROP_OFF_AHEAD

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
US_PER_HOUR = 3_600_000_000
# The tail of a wire time (":SS.mmmZ") from its second and millisecond: two list lookups.
_SECONDS = [f":{second:02d}" for second in range(60)]
_MILLIS = [f".{milli:03d}Z" for milli in range(1000)]


def epoch_us(moment: datetime) -> int:
    return (moment - EPOCH) // MICROSECOND


class EtaModel:
    """The model's settings, read once for a whole listing of entries."""

    __slots__ = ("dispatch", "handling", "handling_us", "minutes", "speed_kmh", "starts", "texts")

    def __init__(self) -> None:
        self.speed_kmh = settings.COURIER_SPEED_KMH
        self.handling = timedelta(minutes=settings.HANDLING_MINUTES)
        self.handling_us = self.handling // MICROSECOND
        self.dispatch = timedelta(minutes=settings.DISPATCH_MINUTES)
        # The drops of one batch share their pickup time: its text is made once.
        self.texts: dict[datetime, str] = {}
        # (pickup time, now) -> the pickup's text, and when a drop with no way to go would be
        # done (pickup + both handlings, epoch µs): all that the drops of one batch share.
        self.starts: dict[tuple[datetime, datetime], tuple[str, int]] = {}
        # Minutes since the epoch -> "YYYY-MM-DDTHH:MM": the drops of a batch arrive within
        # a few minutes of each other.
        self.minutes: dict[int, str] = {}

    def _text(self, moment: datetime) -> str:
        text = self.texts.get(moment)
        if text is None:
            text = self.texts[moment] = iso_z(moment)
        return text

    def _wire(self, us: int) -> str:
        """iso_z of the moment `us` microseconds after the epoch (milliseconds truncated)."""
        minute, millis = divmod(us // 1000, 60_000)
        prefix = self.minutes.get(minute)
        if prefix is None:
            prefix = self.minutes[minute] = iso_z(EPOCH + timedelta(minutes=minute))[:16]
        second, milli = divmod(millis, 1000)
        return prefix + _SECONDS[second] + _MILLIS[milli]

    def _travel_us(self, km: float) -> int:
        """timedelta(hours=km / speed) in microseconds, rounded as timedelta rounds."""
        hours = km / self.speed_kmh
        whole = int(hours)
        return whole * US_PER_HOUR + round((hours - whole) * US_PER_HOUR)

    def of(
        self,
        *,
        status: str,
        pickup_time: datetime,
        picked_up_at: datetime | None,
        km: float,
        now: datetime,
        earlier_stops: int = 0,
    ) -> dict | None:
        """`{"pickup_at", "dropoff_at"}` in UTC wire format, or None for a finished drop.
        `km` is the ride from the pickup, through `earlier_stops` stops handled on the way.
        None also for one failed and on its way back: NO_DROP_OFF_AHEAD (§19)."""
        if status in NO_DROP_OFF_AHEAD:
            return None
        if picked_up_at is not None:
            done = epoch_us(picked_up_at + self.handling) + self._travel_us(km)
            done += earlier_stops * self.handling_us
            return {
                "pickup_at": self._text(picked_up_at),
                "dropoff_at": self._wire(max(done, epoch_us(now))),
            }
        return self.before_pickup(self.start(pickup_time, now), km, earlier_stops)

    def start(self, pickup_time: datetime, now: datetime) -> tuple[str, int]:
        """What every not yet picked-up drop of one pickup time shares: the pickup's text,
        and when a drop with no way to go would be done (pickup + both handlings, epoch µs)."""
        start = self.starts.get((pickup_time, now))
        if start is None:
            pickup_at = max(pickup_time + self.dispatch, now)
            start = self.starts[pickup_time, now] = (
                iso_z(pickup_at),
                epoch_us(pickup_at + self.handling + self.handling),
            )
        return start

    def before_pickup(self, start: tuple[str, int], km: float, earlier_stops: int = 0) -> dict:
        """The ETA of a drop not yet picked up, from its pickup's start(), the ride there,
        and the stops handled before it on its route."""
        pickup_text, handled = start
        done = handled + self._travel_us(km) + earlier_stops * self.handling_us
        return {"pickup_at": pickup_text, "dropoff_at": self._wire(done)}


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
        at += _ride_from(here, (stop.lat, stop.long), speed)
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


def _ride_from(start: tuple[float, float], end: tuple[float, float], speed_kmh: float) -> timedelta:
    return timedelta(hours=DistancesFrom(*start).km(*end) / speed_kmh)
