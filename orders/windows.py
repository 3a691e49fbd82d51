"""Drop-off windows (docs/contract.md §17), pure: whether a window can be kept, and its status.

Both read the ETA model of docs/contract.md §14 (tracking/eta.py formats it for the tracking
entries): before pickup, the courier comes DISPATCH_MINUTES after the pickup time, or now if
that is past, handles the pickup and the drop for HANDLING_MINUTES each and rides the
haversine distance at COURIER_SPEED_KMH; after pickup, the drop's handling and the ride from
the pickup event, or now if that is past. So, until the drop moves, the ETA only grows with
time: a drop on track turns at risk at one known moment (`risk_at`), which is stored with it
and lets the minute's job find those due by index (tracking/window_watch.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from orders.models import WindowStatus
from orders.statuses import NOT_PICKED_UP, DropStatus

# Plain strings: compared per drop on the hot paths.
ON_TRACK, AT_RISK = WindowStatus.ON_TRACK.value, WindowStatus.AT_RISK.value
MET, MISSED = WindowStatus.MET.value, WindowStatus.MISSED.value


class EtaTerms:
    """The ETA model's settings and the window rule's, read once for a batch or a job."""

    __slots__ = ("dispatch", "handling", "max_ahead", "min_length", "speed_kmh")

    def __init__(self) -> None:
        self.dispatch = timedelta(minutes=settings.DISPATCH_MINUTES)
        self.handling = timedelta(minutes=settings.HANDLING_MINUTES)
        self.speed_kmh = settings.COURIER_SPEED_KMH
        self.min_length = timedelta(minutes=settings.MIN_WINDOW_MINUTES)
        self.max_ahead = timedelta(days=settings.MAX_SCHEDULE_DAYS)

    def ride(self, km: float) -> timedelta:
        return timedelta(hours=km / self.speed_kmh)

    def earliest_arrival(self, pickup_time: datetime, now: datetime, km: float) -> datetime:
        """The ETA at the drop of a drop not yet picked up, waiting since `pickup_time`."""
        return max(pickup_time + self.dispatch, now) + 2 * self.handling + self.ride(km)

    def window_slack(
        self, window: tuple[datetime, datetime], pickup_time: datetime, now: datetime
    ) -> tuple[str | None, timedelta]:
        """What a window allows whatever the distance: its length and start's problem, or
        None; and the longest ride that still arrives by its end. A batch's drops share a
        few windows and pickup times, so the batch works this out once for each pair."""
        start, end = window
        if end <= start:
            return "The drop-off window must end after it starts.", timedelta()
        if end - start < self.min_length:
            minutes = settings.MIN_WINDOW_MINUTES
            return f"The drop-off window must be at least {minutes} minutes long.", timedelta()
        if start - now > self.max_ahead:
            days = settings.MAX_SCHEDULE_DAYS
            return f"The drop-off window must start within {days} days.", timedelta()
        return None, end - self.earliest_arrival(pickup_time, now, 0.0)

    @staticmethod
    def too_far(ride: timedelta, slack: timedelta) -> str | None:
        """The problem of a ride longer than the window's slack (exact: times are whole µs)."""
        if ride > slack:
            return "The drop-off window ends before the earliest possible arrival."
        return None

    def risk_at(self, end: datetime, km: float, *, picked_up: bool) -> datetime:
        """When the ETA passes `end` if nothing moves: before pickup, the ETA is now plus
        both handlings and the ride; after it, at least now."""
        return end if picked_up else self.risk_before_pickup(end, self.ride(km))

    def risk_before_pickup(self, end: datetime, ride: timedelta) -> datetime:
        return end - 2 * self.handling - ride

    def outlook(
        self,
        *,
        status: str,
        end: datetime,
        km: float,
        waiting_since: datetime,
        picked_up_at: datetime | None,
        delivered_at: datetime | None,
        now: datetime,
    ) -> tuple[str, datetime | None]:
        """The window status of a drop, and while on track, when it turns at risk.

        `waiting_since` is its pickup time: when it became PENDING, else its schedule.
        """
        if status == DropStatus.DELIVERED:
            return (MET if delivered_at is not None and delivered_at <= end else MISSED), None
        if status == DropStatus.PICKED_UP and picked_up_at is not None:
            arrival = picked_up_at + self.handling + self.ride(km)
            risk_at = self.risk_at(end, km, picked_up=True)
        elif status in NOT_PICKED_UP:
            arrival = self.earliest_arrival(waiting_since, waiting_since, km)
            risk_at = self.risk_at(end, km, picked_up=False)
        else:  # failed, returning, returned or cancelled: the window was not kept
            return MISSED, None
        if arrival > end or now > risk_at:
            return AT_RISK, None
        return ON_TRACK, risk_at
