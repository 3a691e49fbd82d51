"""The dispatch board's data (docs/contract.md §21, docs/operator.md "Dispatch board"): the
live orders waiting for a courier, most urgent first, and the couriers online.

Read set-based, whatever the numbers: one query for the waiting orders (each one's drops,
window and open offer come as correlated subqueries, not a query per order), one more to
count them only when they pass the cap, and one for the couriers with their latest
position and state. Which courier an operator may give an order by hand is worked out from
those rows, with no query of its own; `refusal_of` checks a hand assignment again, on the
rows as they are when it is posted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from uuid import UUID

from django.conf import settings
from django.db.models import Count, Exists, F, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Environment
from billing.custody import cash_limit_refusal, couriers_over_cash_limit, over_cash_limit
from dispatch.dispatcher import AT_RISK
from dispatch.models import Offer, OfferStatus
from geo.geometry import DistancesFrom
from orders.couriers import ORDER_STILL_TO_CARRY, Courier, courier_model
from orders.models import Drop, DropStatus, Order
from orders.statuses import NOT_PICKED_UP

# The page and its data view show at most this many of each; past it they say how many wait.
MAX_ORDERS = 200
MAX_COURIERS = 500
# The hand-assignment menu of an order lists its nearest eligible couriers, at most this many.
MAX_CHOICES = 15


class CourierState(StrEnum):
    FREE = "free"  # may be given an order
    OFFERED = "offered"  # holds an open offer: their answer is awaited
    ON_ROUTE = "on_route"  # carries an order: never given a second


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
class BoardCourier:
    courier_id: int
    name: str
    vehicle: str
    state: CourierState
    offered_order: UUID | None  # the order of their open offer
    position: Position | None
    # Their order an operator may take back (assigned, nothing of it picked up yet).
    order_to_take_back: UUID | None = None
    # Holds more cash than COURIER_CASH_LIMIT: given no COD order until they hand it over.
    cash_over_limit: bool = False


@dataclass(frozen=True, slots=True)
class Choice:
    """A courier an operator may give the order to, and how far they are from its pickup."""

    courier: BoardCourier
    km: float | None  # None: no position known


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
    rows = (
        Order.objects.filter(waiting_orders())
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
        )  # fmt: skip
    )
    return [_waiting_order(*row) for row in rows[: MAX_ORDERS + 1]]


def _waiting_order(*row) -> WaitingOrder:
    *fields, cod, courier, courier_id, expires_at = row
    offer = OpenOffer(courier, courier_id, expires_at) if courier_id is not None else None
    return WaitingOrder(*fields, offer=offer, cod=cod)


def _online_couriers() -> Q:
    return Q(online=True, active=True, is_sandbox_test_driver=False)


def _couriers(now: datetime) -> list[BoardCourier]:
    """The couriers online (real and active), by name; MAX_COURIERS + 1 of them."""
    on_route = Order.objects.filter(ORDER_STILL_TO_CARRY, driver_id=OuterRef("pk"))
    offer = Offer.objects.filter(
        courier_id=OuterRef("pk"), status=OfferStatus.OFFERED, expires_at__gt=now
    )
    rows = (
        courier_model()
        .objects.filter(_online_couriers())
        .annotate(on_route=Exists(on_route), offered_order=Subquery(offer.values("order_id")[:1]))
        .annotate(takeable=Subquery(_orders_to_take_back().values("pk")[:1]))
        .annotate(over_cash=over_cash_limit(OuterRef("pk")))
        .order_by("name", "pk")
        .values_list(
            "pk",
            "name",
            "vehicle",
            "on_route",
            "offered_order",
            "takeable",
            "over_cash",
            "position__lat",
            "position__long",
            "position__at",
        )  # fmt: skip
    )
    live_since = now - timedelta(minutes=settings.DISPATCH_POSITION_MINUTES)
    couriers = []
    for pk, name, vehicle, on_route, offered, takeable, over, lat, long, at in rows[
        : MAX_COURIERS + 1
    ]:
        if on_route:
            state = CourierState.ON_ROUTE
        else:
            state = CourierState.OFFERED if offered else CourierState.FREE
        position = Position(lat, long, at, live=at >= live_since) if at is not None else None
        couriers.append(
            BoardCourier(
                pk, name, vehicle, state, offered, position, takeable, cash_over_limit=over
            )
        )
    return couriers


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
    """Whom the order may be given to, nearest first (those with no position last), at
    most MAX_CHOICES: free couriers of its vehicle, and the one it is offered to now."""
    distances = DistancesFrom(order.lat, order.long)
    choices = [
        Choice(courier, distances.km(courier.position.lat, courier.position.long))
        if courier.position
        else Choice(courier, None)
        for courier in couriers
        if courier.vehicle == order.vehicle
        and not (order.cod and courier.cash_over_limit)
        and (
            courier.state == CourierState.FREE
            or (courier.state == CourierState.OFFERED and courier.offered_order == order.order_id)
        )
    ]
    choices.sort(key=lambda c: (c.km is None, c.km or 0.0, c.courier.name))
    return choices[:MAX_CHOICES]


def refusal_of(*, order: Order, courier: Courier, now: datetime | None = None) -> str | None:
    """Why this courier may not be given this order by hand, in a sentence; None if they
    may. What assign_by_hand refuses itself (inactive, on a route) it says again there."""
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
