"""The dispatch board's data (docs/contract.md §21, docs/operator.md "Dispatch board"): the
live orders waiting for a courier, most urgent first, and the couriers online with their
runs.

Read set-based, whatever the numbers: one query for the waiting orders (each one's drops,
window and open offer come as correlated subqueries, not a query per order), one more to
count them only when they pass the cap, one for the couriers with their latest position
and open offer, and one for all their runs (orders.runs.run_drops). Which courier an
operator may give an order by hand, and what it would add to their run, is worked out from
those rows with no query of its own; `refusal_of` checks a hand assignment again, on the
rows as they are when it is posted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

import numpy as np
from django.conf import settings
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Count, Exists, F, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Environment
from billing.custody import cash_limit_refusal, couriers_over_cash_limit, over_cash_limit
from core.rows import Shape
from dispatch.dispatcher import AT_RISK
from dispatch.insertion import insert_order
from dispatch.models import Offer, OfferStatus
from dispatch.travel import travel_times
from geo.geometry import DistancesFrom
from orders.couriers import Courier, courier_model
from orders.models import Drop, DropStatus, Order
from orders.runs import run_drops, stops_of, to_do
from orders.statuses import NOT_PICKED_UP

# The page and its data view show at most this many of each; past it they say how many wait.
MAX_ORDERS = 200
MAX_COURIERS = 500
# The hand-assignment menu of an order lists the eligible couriers it would add least riding
# time to, at most this many.
MAX_CHOICES = 15
# Past this many eligible couriers with a position, only the nearest this many (to the pickup,
# from their position or a stop of their run) are costed by insertion: the page stays quick.
MAX_COSTED = 3 * MAX_CHOICES


class CourierState(StrEnum):
    FREE = "free"  # carries nothing, holds no offer
    OFFERED = "offered"  # holds an open offer: their answer is awaited
    # Carries a run (their route, with stops to do): may be given more by hand, inserted
    # where it adds least riding time. The wire value is the route's, as the courier sees it.
    ON_ROUTE = "on_route"


@dataclass(frozen=True, slots=True)
class OpenOffer:
    courier: str
    courier_id: int
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class WaitingOrder:
    order_id: UUID
    business: str
    pickup_name: str
    lat: float
    long: float
    drops: int  # its drops waiting (PENDING)
    vehicle: str
    waiting_since: datetime  # the pickup time, or when the order was made
    flagged_at: datetime | None  # nobody accepted it within DISPATCH_ESCALATE_MINUTES
    at_risk: bool  # a waiting drop's window is at risk
    window_end: datetime | None  # the earliest window end of its waiting drops
    offer: OpenOffer | None
    cod: bool = False  # a waiting drop has cash to collect (docs/contract.md §23)
    # Where its waiting drops go, (lat, long) each: what inserting it into a run costs.
    drop_places: tuple[tuple[float, float], ...] = ()

    @property
    def for_business(self) -> str | None:
        """The business the pickup is for, when the pickup is not simply the business under
        its own name: "Stall 12 for Khmer Phone Shop", never "Khmer Phone Shop for Khmer
        Phone Shop"."""
        same = self.pickup_name.strip().casefold() == self.business.strip().casefold()
        return None if same else self.business


@dataclass(frozen=True, slots=True)
class Position:
    lat: float
    long: float
    at: datetime
    live: bool  # under DISPATCH_POSITION_MINUTES old: what the dispatcher goes by


@dataclass(frozen=True, slots=True)
class RunPoint:
    """A stop of a courier's run still to do, where it is."""

    kind: str  # "pickup" or "drop" (a parcel going back is a drop at its pickup)
    lat: float
    long: float


@dataclass(frozen=True, slots=True)
class BoardCourier:
    courier_id: int
    name: str
    vehicle: str
    state: CourierState
    offered_order: UUID | None  # the order of their open offer (its lead's)
    position: Position | None
    # Their order an operator may take back (assigned, nothing of it picked up yet).
    order_to_take_back: UUID | None = None
    # Holds more cash than COURIER_CASH_LIMIT: given no COD order until they hand it over.
    cash_over_limit: bool = False
    # Their run's stops still to do, in riding order.
    run: tuple[RunPoint, ...] = ()
    # Every order of their open offer (an offer may add several to their run).
    offered_orders: tuple[UUID, ...] = ()

    @property
    def stops_left(self) -> int:
        return len(self.run)


@dataclass(frozen=True, slots=True)
class Choice:
    """A courier an operator may give the order to: the riding time it would add to their
    run (inserted where it costs least) and how far they are from its pickup."""

    courier: BoardCourier
    km: float | None  # None: no position known
    added_seconds: int | None = None  # None: no position known

    @property
    def added_minutes(self) -> int | None:
        return None if self.added_seconds is None else round(self.added_seconds / 60)


@dataclass(frozen=True, slots=True)
class Board:
    orders: list[WaitingOrder]
    waiting: int  # every waiting order, also those past MAX_ORDERS
    couriers: list[BoardCourier]
    online: int  # every courier online, also those past MAX_COURIERS
    at: datetime

    @property
    def more_orders(self) -> int:
        return self.waiting - len(self.orders)

    @property
    def more_couriers(self) -> int:
        return self.online - len(self.couriers)


def waiting_orders() -> Q:
    """Live orders nobody carries with a drop waiting, not closed by the dispatcher: what
    the dispatcher offers (the order_waiting_for_courier index)."""
    pending = Drop.objects.filter(order_id=OuterRef("pk"), status=DropStatus.PENDING)
    return Q(
        Exists(pending), driver__isnull=True, environment=Environment.LIVE, dispatch_closed=False
    )


def read_board(*, now: datetime | None = None) -> Board:
    now = now or timezone.now()
    orders = _orders(now)
    waiting = len(orders)
    if waiting > MAX_ORDERS:
        orders = orders[:MAX_ORDERS]
        waiting = Order.objects.filter(waiting_orders()).count()
    couriers = _couriers(now)
    online = len(couriers)
    if online > MAX_COURIERS:
        couriers = couriers[:MAX_COURIERS]
        online = courier_model().objects.filter(_online_couriers()).count()
    return Board(orders=orders, waiting=waiting, couriers=couriers, online=online, at=now)


def _orders(now: datetime) -> list[WaitingOrder]:
    """The waiting orders, most urgent first (docs/operator.md): a window at risk, then
    flagged, then the earliest window end, then the longest waiting; MAX_ORDERS + 1 of them
    (the one more says there are more)."""
    pending = Drop.objects.filter(order_id=OuterRef("pk"), status=DropStatus.PENDING)
    per_order = pending.order_by().values("order_id")
    offer = Offer.objects.filter(
        order_id=OuterRef("pk"), status=OfferStatus.OFFERED, expires_at__gt=now
    )
    in_stop_order = pending.order_by("stop_sequence", "pk")
    rows = (
        Order.objects.filter(waiting_orders())
        .annotate(
            drop_lats=ArraySubquery(in_stop_order.values("lat")),
            drop_longs=ArraySubquery(in_stop_order.values("long")),
        )
        .annotate(
            waiting_since=Coalesce("pickup_scheduled_at", "created_at"),
            pending=Subquery(per_order.annotate(n=Count("*")).values("n")),
            window_end=Subquery(per_order.annotate(end=Min("window_end")).values("end")),
            at_risk=Exists(pending.filter(window_status__in=AT_RISK)),
            has_cod=Exists(pending.filter(cod_amount__gt=0)),
            offer_courier=Subquery(offer.values("courier__name")[:1]),
            offer_courier_id=Subquery(offer.values("courier_id")[:1]),
            offer_expires_at=Subquery(offer.values("expires_at")[:1]),
        )
        .order_by(
            F("at_risk").desc(),
            F("dispatch_flagged_at").asc(nulls_last=True),
            F("window_end").asc(nulls_last=True),
            "waiting_since",
            "pk",
        )
        .values_list(
            "pk",
            "business__name",
            "pickup_name",
            "pickup_lat",
            "pickup_long",
            "pending",
            "vehicle",
            "waiting_since",
            "dispatch_flagged_at",
            "at_risk",
            "window_end",
            "has_cod",
            "offer_courier",
            "offer_courier_id",
            "offer_expires_at",
            "drop_lats",
            "drop_longs",
        )  # fmt: skip
    )
    return [_waiting_order(*row) for row in rows[: MAX_ORDERS + 1]]


def _waiting_order(*row) -> WaitingOrder:
    *fields, cod, courier, courier_id, expires_at, lats, longs = row
    offer = OpenOffer(courier, courier_id, expires_at) if courier_id is not None else None
    places = tuple(zip(lats or (), longs or (), strict=True))
    return WaitingOrder(*fields, offer=offer, cod=cod, drop_places=places)


def _online_couriers() -> Q:
    return Q(online=True, active=True, is_sandbox_test_driver=False)


def _couriers(now: datetime) -> list[BoardCourier]:
    """The couriers online (real and active), by name, with their runs; MAX_COURIERS + 1 of
    them."""
    # Every order of the courier's open offer, the lead's first: an offer is one row per order.
    offer = Offer.objects.filter(
        courier_id=OuterRef("pk"), status=OfferStatus.OFFERED, expires_at__gt=now
    ).order_by("-lead", "pk")
    rows = list(
        courier_model()
        .objects.filter(_online_couriers())
        .annotate(offered=ArraySubquery(offer.values("order_id")))
        .annotate(takeable=Subquery(_orders_to_take_back().values("pk")[:1]))
        .annotate(over_cash=over_cash_limit(OuterRef("pk")))
        .order_by("name", "pk")
        .values_list(*COURIER_ROW.expressions)[: MAX_COURIERS + 1]
    )
    rows = COURIER_ROW.rows(rows)
    runs = run_drops(row.courier_id for row in rows)
    live_since = now - timedelta(minutes=settings.DISPATCH_POSITION_MINUTES)
    return [_board_courier(row, runs[row.courier_id], live_since) for row in rows]


# A courier online, as the board reads one (its run apart).
COURIER_ROW = Shape(
    "BoardCourierRow",
    courier_id="pk",
    name="name",
    vehicle="vehicle",
    offered="offered",
    takeable="takeable",
    over_cash="over_cash",
    lat="position__lat",
    long="position__long",
    at="position__at",
)


def _board_courier(row, run_rows: list, live_since: datetime) -> BoardCourier:
    """A COURIER_ROW with its run's rows, as the board shows the courier."""
    run = tuple(RunPoint(stop.kind, stop.lat, stop.long) for stop in to_do(stops_of(run_rows)))
    offered = tuple(row.offered or ())
    # The offer first: whether they may be given more hangs on their answer.
    state = CourierState.ON_ROUTE if run else CourierState.FREE
    if offered:
        state = CourierState.OFFERED
    position = None
    if row.at is not None:
        position = Position(row.lat, row.long, row.at, live=row.at >= live_since)
    return BoardCourier(
        row.courier_id,
        row.name,
        row.vehicle,
        state,
        offered[0] if offered else None,
        position,
        row.takeable,
        cash_over_limit=row.over_cash,
        run=run,
        offered_orders=offered,
    )


def _orders_to_take_back():
    """The courier's orders (OuterRef "pk") with a drop assigned and none picked up yet:
    what dispatch.offers.take_back_order accepts."""
    assigned = Drop.objects.filter(order_id=OuterRef("pk"), status=DropStatus.ASSIGNED)
    picked_up = Drop.objects.filter(order_id=OuterRef("pk")).exclude(
        Q(status__in=NOT_PICKED_UP) | Q(status=DropStatus.CANCELLED)
    )
    return (
        Order.objects.filter(driver_id=OuterRef("pk"))
        .filter(Exists(assigned))
        .exclude(Exists(picked_up))
        .order_by("created_at", "pk")
    )


def choices_for(order: WaitingOrder, couriers: list[BoardCourier]) -> list[Choice]:
    """Whom the order may be given to, at most MAX_CHOICES: couriers online of its vehicle
    holding no offer but one of this order alone, free or carrying a run. Those the order
    would add least riding time to come first (inserted into their run where it costs least,
    as assign_by_hand inserts it), then the nearer; those with no position last, by name."""
    eligible = [courier for courier in couriers if _may_take(order, courier)]
    placed = _nearest(order, [courier for courier in eligible if courier.position])
    distances = DistancesFrom(order.lat, order.long)
    choices = [
        Choice(
            courier,
            distances.km(courier.position.lat, courier.position.long),
            added_seconds(order, courier),
        )
        for courier in placed
    ]
    choices.sort(key=lambda c: (c.added_seconds, c.km, c.courier.name))
    unplaced = sorted((c for c in eligible if not c.position), key=lambda c: c.name)
    choices += [Choice(courier, None) for courier in unplaced]
    return choices[:MAX_CHOICES]


def _may_take(order: WaitingOrder, courier: BoardCourier) -> bool:
    """What refusal_of asks again on the rows as they are when the assignment is posted."""
    return (
        courier.vehicle == order.vehicle
        and not (order.cod and courier.cash_over_limit)
        and courier.offered_orders in ((), (order.order_id,))
    )


def _nearest(order: WaitingOrder, couriers: list[BoardCourier]) -> list[BoardCourier]:
    """The MAX_COSTED couriers nearest the order's pickup, from their position or any stop
    of their run (all of them when no more): only these are costed by insertion."""
    if len(couriers) <= MAX_COSTED:
        return couriers
    points = [
        (index, lat, long)
        for index, courier in enumerate(couriers)
        for lat, long in [(courier.position.lat, courier.position.long)]
        + [(stop.lat, stop.long) for stop in courier.run]
    ]
    owners, lats, longs = (np.asarray(column) for column in zip(*points, strict=True))
    km = DistancesFrom(order.lat, order.long).km_to_many(lats, longs)
    reach = np.full(len(couriers), np.inf)
    np.minimum.at(reach, owners, km)
    nearest = np.argsort(reach, kind="stable")[:MAX_COSTED]
    return [couriers[index] for index in sorted(nearest)]


def added_seconds(order: WaitingOrder, courier: BoardCourier) -> int:
    """The riding seconds the order would add to the courier's run (from their position),
    its pickup and drops inserted where each adds least (dispatch/insertion.py); for a
    courier without a run, the ride to its pickup and through its drops."""
    run = courier.run
    places = [
        (courier.position.lat, courier.position.long),
        *((stop.lat, stop.long) for stop in run),
        (order.lat, order.long),
        *order.drop_places,
    ]
    matrix = travel_times().seconds(places, speed_kmh=settings.COURIER_SPEED_KMH)
    pickup_at = len(run) + 1
    inserted = insert_order(
        matrix,
        start=0,
        run=[(("run", n), n) for n in range(1, pickup_at)],
        pickup=("pickup", pickup_at),
        drops=[(("drop", n), pickup_at + n) for n in range(1, len(order.drop_places) + 1)],
    )
    return inserted.added_seconds


def refusal_of(*, order: Order, courier: Courier, now: datetime | None = None) -> str | None:
    """Why this courier may not be given this order by hand, in a sentence; None if they
    may. A courier carrying a run may be given more: the order joins their run where it
    costs least. What assign_by_hand refuses itself (inactive, another vehicle, over the
    cash limit) it says again there."""
    now = now or timezone.now()
    if courier.is_sandbox_test_driver:
        return (
            f"{courier} drives sandbox orders only: choose a real courier for live orders. "
            "Nothing changed."
        )
    if not Order.objects.filter(waiting_orders(), pk=order.pk).exists():
        return "This order no longer waits for a courier. Nothing changed."
    if courier.vehicle != order.vehicle:
        return (
            f"{courier} rides a {courier.vehicle}; this order needs a {order.vehicle}. "
            "Nothing changed."
        )
    if not (courier.online and courier.active):
        return f"{courier} is not online: choose a courier who is. Nothing changed."
    if order_has_cod(order) and couriers_over_cash_limit([courier.pk]):
        return cash_limit_refusal(courier)
    elsewhere = Offer.objects.filter(
        courier=courier, status=OfferStatus.OFFERED, expires_at__gt=now
    ).exclude(order=order)
    if elsewhere.exists():
        return (
            f"{courier} has another order's offer open: wait for their answer, or choose "
            "someone else. Nothing changed."
        )
    return None


def order_has_cod(order: Order) -> bool:
    """Whether a waiting drop of the order has cash to collect (docs/contract.md §23)."""
    return Drop.objects.filter(order=order, status=DropStatus.PENDING, cod_amount__gt=0).exists()
