"""Couriers' pay (docs/contract.md §24): what a courier earned over a day or a period, read
from the drops' moves set-based and priced with the pay plan of each order's vehicle type.

What is paid (docs/decisions.md, "Couriers' pay: what a run's km are, and which plan
prices them"): each DELIVERED move and each RETURNED move of a live drop whose order the
courier carries, at the time of the move; and each such order's run once, its km counted
on the service-time-zone day of its first paid move. An order's run is the ride from its
pickup through its drops in stop order (orders/stops.py: the largest `route_km` of its
drops), rounded to 0.01 km, and its pay (km × the plan's per km) rounded half-up to cents on
its own, so that a period's pay is the sum of its days' to the cent.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet

from accounts.models import Environment
from core.formats import CENT, money
from couriers.models import Driver, PayPlan
from orders.models import DeliveryEvent, Order
from orders.statuses import COURIER_PAID, DropStatus

ZERO = Decimal("0.00")
DAY_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass
class Work:
    """What a courier did on one vehicle type over a period: the pay's quantities."""

    delivered: int = 0
    returned: int = 0
    runs: list[Decimal] = field(default_factory=list)  # each order's run, in km


@dataclass
class Earnings:
    """A courier's pay over a period, in the account currency: each part and the total."""

    courier_id: int
    delivered: int = 0
    returned: int = 0
    km: Decimal = ZERO
    delivered_pay: Decimal = ZERO
    km_pay: Decimal = ZERO
    returned_pay: Decimal = ZERO
    vehicles: set[str] = field(default_factory=set)

    @property
    def total(self) -> Decimal:
        return self.delivered_pay + self.km_pay + self.returned_pay

    def add(self, vehicle: str, work: Work, plan: PayPlan | None) -> None:
        """Price one vehicle type's work with its plan (none: it pays nothing) and add it."""
        self.vehicles.add(vehicle)
        self.delivered += work.delivered
        self.returned += work.returned
        self.km += sum(work.runs, ZERO)
        if plan is not None:
            self.delivered_pay += work.delivered * plan.per_drop
            self.returned_pay += work.returned * plan.per_return
            # Each run rounded on its own: a period's pay is the sum of its days' to the cent.
            self.km_pay += sum((_cents(km * plan.per_km) for km in work.runs), ZERO)


def day_start(day: date) -> datetime:
    """Midnight starting `day` in the service time zone (Asia/Phnom_Penh)."""
    return datetime.combine(day, time.min, tzinfo=ZoneInfo(settings.TIME_ZONE))


def earnings_of(*, courier: Driver, day: date) -> Earnings:
    """What the courier earned on this service-time-zone day."""
    found = pay_by_courier(first=day, last=day, courier_id=courier.pk)
    return found[0] if found else Earnings(courier_id=courier.pk)


def pay_by_courier(*, first: date, last: date, courier_id: int | None = None) -> list[Earnings]:
    """Each courier's pay from the start of `first` to the end of `last` (service time zone),
    every courier who did paid work in it, by courier id; three queries for any period."""
    start, end = day_start(first), day_start(last + timedelta(days=1))
    work = _work(start, end, courier_id)
    plans = {plan.vehicle_id: plan for plan in PayPlan.objects.all()}
    earnings: dict[int, Earnings] = {}
    for (courier, vehicle), done in sorted(work.items()):
        earnings.setdefault(courier, Earnings(courier_id=courier))
        earnings[courier].add(vehicle, done, plans.get(vehicle))
    return list(earnings.values())


def _paid_moves(start: datetime, end: datetime, courier_id: int | None) -> QuerySet:
    """The paid moves of live drops carried by a courier, made in [start, end)."""
    moves = DeliveryEvent.objects.filter(
        at__gte=start,
        at__lt=end,
        status__in=COURIER_PAID,
        drop__environment=Environment.LIVE,
        drop__order__driver__isnull=False,
    )
    return moves if courier_id is None else moves.filter(drop__order__driver_id=courier_id)


def _work(start: datetime, end: datetime, courier_id: int | None) -> dict[tuple, Work]:
    """(courier id, vehicle code) → the Work done in [start, end): one query counts the moves,
    one reads the km of the orders whose first paid move falls in it."""
    moves = _paid_moves(start, end, courier_id)
    work: dict[tuple, Work] = defaultdict(Work)
    counted = moves.values_list("drop__order__driver_id", "drop__order__vehicle").annotate(
        delivered=Count("pk", filter=Q(status=DropStatus.DELIVERED)),
        returned=Count("pk", filter=Q(status=DropStatus.RETURNED)),
    )
    for courier, vehicle, delivered, returned in counted:
        work[courier, vehicle].delivered += delivered
        work[courier, vehicle].returned += returned
    first_paid = Q(drops__events__status__in=COURIER_PAID)
    runs = (
        Order.objects.filter(pk__in=moves.values("drop__order_id"))
        .annotate(first_paid=Min("drops__events__at", filter=first_paid))
        .annotate(km=Max("drops__route_km"))
        .filter(first_paid__gte=start, first_paid__lt=end)
        .values_list("driver_id", "vehicle", "km")
    )
    for courier, vehicle, km in runs:
        work[courier, vehicle].runs.append(run_km(km))
    return work


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def run_km(km: float | None) -> Decimal:
    """An order's run in km, exact to 0.01 km (none: an order without a stop order)."""
    if km is None:
        return ZERO
    return _cents(Decimal(repr(km)))


def parse_day(text: str | None, *, today: date) -> date:
    """A `date` query parameter: YYYY-MM-DD, or today when absent; ValueError otherwise."""
    if text is None:
        return today
    if not DAY_TEXT.fullmatch(text):
        raise ValueError("date must be a day as YYYY-MM-DD, such as 2026-11-23.")
    return date.fromisoformat(text)  # ValueError for a day no calendar has (2026-02-30)


def earnings_wire(earnings: Earnings, day: date) -> dict:
    """GET /courier/earnings's data: the day's counts and km, each part and the total as
    money strings in the account currency."""
    return {
        "date": day.isoformat(),
        "currency": settings.CURRENCY,
        "delivered": earnings.delivered,
        "returned": earnings.returned,
        "km": money(earnings.km),
        "pay": {
            "delivered": money(earnings.delivered_pay),
            "km": money(earnings.km_pay),
            "returned": money(earnings.returned_pay),
        },
        "total": money(earnings.total),
    }
