"""The one-order-at-a-time dispatcher (docs/dispatch.md): every live order waiting for a
courier is offered to the nearest free eligible one. It is the benchmark's baseline
(DISPATCH_PLANNER "nearest"); its steps 1-6 are the planner's too (dispatch/planner.py).

One run (the periodic job of core/schedule.py, on whichever worker takes the slot; several
may run at once) does, set-based, whatever the number of orders:

1. expires the open offers whose time is up (their orders wait again);
2. closes the waiting orders with nothing left to carry (every drop cancelled);
3. takes the waiting orders (live, no courier, a PENDING drop, no open offer) with
   `FOR UPDATE SKIP LOCKED`, and of them only those whose drops it can lock at once (a
   cancel or edit in flight keeps its order for the next run): a second worker takes
   others, and the dispatcher never waits on a lock, so it never deadlocks with a mover;
4. flags the ones waiting longer than DISPATCH_ESCALATE_MINUTES;
5. numbers the drops of those not yet sequenced (orders/stops.py);
6. reads the candidates in one indexed query: online, active, real couriers whose last
   position is under DISPATCH_POSITION_MINUTES old and inside a box around the pickups,
   holding no open offer and no route, locked `SKIP LOCKED` too;
7. offers each order, at-risk windows first and then oldest first, to the nearest
   candidate of its vehicle within DISPATCH_RADIUS_KM who was never offered it (an order
   with cash to collect: not one holding more than COURIER_CASH_LIMIT), one order per
   courier, and writes the offers in one statement.
The constraints of dispatch.models stand behind every step.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from accounts.models import Environment
from billing.custody import couriers_over_cash_limit
from core.ids import uuid7
from core.rows import Shape
from dispatch.models import Offer, OfferStatus
from geo.geometry import DistancesFrom
from orders.couriers import ORDER_STILL_TO_CARRY, courier_model, position_model
from orders.models import Drop, DropStatus, Order, WindowStatus
from orders.statuses import INITIAL_STATUSES
from orders.stops import sequence_orders

KM_PER_DEGREE = 111.195
# Served first (and listed first on the board, dispatch/board.py): a drop whose window is at
# risk, or already missed.
AT_RISK = (WindowStatus.AT_RISK, WindowStatus.MISSED)


@dataclass
class Run:
    """What one run did: the counts operators and the benchmark read."""

    expired: int = 0
    closed: int = 0
    waiting: int = 0
    flagged: int = 0
    candidates: int = 0
    offers: list[Offer] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Waiting:
    """An order to offer, as the matching reads it."""

    order_id: UUID
    lat: float
    long: float
    vehicle: str
    rank: tuple  # smaller first: at risk, earliest window end, oldest
    cod: bool = False  # a drop with cash to collect: never offered over the cash limit


def dispatch_waiting(*, now: datetime | None = None, limit: int = 2000) -> Run:
    """One run of the dispatcher (see the module's docstring)."""
    now = now or timezone.now()
    run = Run(expired=expire_offers(now))
    run.closed = close_orders_with_nothing_to_carry()
    with transaction.atomic():
        orders, run.flagged = take_waiting(now, limit)
        run.waiting = len(orders)
        if not orders:
            return run
        waiting = waiting_of(orders)
        couriers = lock_candidates(waiting, now)
        run.candidates = len(couriers)
        # Couriers holding more cash than COURIER_CASH_LIMIT get no COD order (§23).
        with_cod = any(w.cod for w in waiting)
        over = couriers_over_cash_limit(c.courier_id for c in couriers) if with_cod else set()
        run.offers = match(waiting, couriers, tried=tried_pairs(orders), now=now, over_limit=over)
        Offer.objects.bulk_create(run.offers)
    return run


def take_waiting(now: datetime, limit: int) -> tuple[list[Order], int]:
    """Steps 3-5, in the caller's transaction: the waiting orders this run takes (locked),
    the overdue among them flagged, those without stop order sequenced; and how many were
    flagged."""
    orders = lock_waiting_orders(limit)
    if not orders:
        return orders, 0
    flagged = flag_overdue(orders, now)
    unsequenced = [o.pk for o in orders if not o.sequenced]
    if unsequenced:
        sequence_orders(unsequenced, now=now)
    return orders, flagged


def expire_offers(now: datetime) -> int:
    """Open offers past their time become expired: their orders wait for the next courier."""
    return Offer.objects.filter(status__among=(OfferStatus.OFFERED,), expires_at__lte=now).update(
        status=OfferStatus.EXPIRED, answered_at=now
    )


def close_orders_with_nothing_to_carry() -> int:
    """Waiting orders none of whose drops will ever wait for a courier leave the queue."""
    # Still in a status it was created in: it will wait for a courier.
    alive = Drop.objects.filter(order_id=OuterRef("pk"), status__in=INITIAL_STATUSES)
    return _queue().filter(~Exists(alive)).update(dispatch_closed=True)


def _queue():
    return Order.objects.filter(
        driver__isnull=True, environment=Environment.LIVE, dispatch_closed=False
    )


def lock_waiting_orders(limit: int) -> list[Order]:
    """The waiting orders this run takes: row-locked, skipping those another run or a mover
    holds, and those with a drop locked by a mover right now."""
    pending = Drop.objects.filter(order_id=OuterRef("pk"), status=DropStatus.PENDING)
    open_offer = Offer.objects.filter(
        order_id=OuterRef("pk"), status__in=[OfferStatus.OFFERED, OfferStatus.ACCEPTED]
    )
    sequenced = Drop.objects.filter(order_id=OuterRef("pk"), stop_sequence__isnull=False)
    orders = list(
        _queue()
        .filter(Exists(pending))
        .exclude(Exists(open_offer))
        .annotate(sequenced=Exists(sequenced))
        .order_by("created_at", "pk")
        .select_for_update(skip_locked=True, of=("self",))[:limit]
    )
    ids = [order.pk for order in orders]
    every = defaultdict(int)
    for order_id in Drop.objects.filter(order_id__in=ids).values_list("order_id", flat=True):
        every[order_id] += 1
    locked = defaultdict(int)
    free = Drop.objects.filter(order_id__in=ids).select_for_update(skip_locked=True)
    for order_id in free.values_list("order_id", flat=True):
        locked[order_id] += 1
    return [order for order in orders if locked[order.pk] == every[order.pk]]


def flag_overdue(orders: list[Order], now: datetime) -> int:
    """Orders nobody accepted within DISPATCH_ESCALATE_MINUTES of waiting are flagged once."""
    since = now - timedelta(minutes=settings.DISPATCH_ESCALATE_MINUTES)
    overdue = [
        order.pk
        for order in orders
        if order.dispatch_flagged_at is None
        and (order.pickup_scheduled_at or order.created_at) <= since
    ]
    return Order.objects.filter(pk__in=overdue).update(dispatch_flagged_at=now)


def waiting_of(orders: list[Order]) -> list[Waiting]:
    """The orders in the order they are served: a drop at risk first, then the earliest
    window end, then the oldest."""
    risk: dict[UUID, tuple] = {}
    cod: set[UUID] = set()
    rows = Drop.objects.filter(
        order_id__in=[o.pk for o in orders], status=DropStatus.PENDING
    ).values_list("order_id", "window_status", "window_end", "cod_amount")
    for order_id, window_status, window_end, cod_amount in rows:
        if cod_amount:
            cod.add(order_id)
        at_risk = window_status in AT_RISK
        mine = (0 if at_risk else 1, window_end.timestamp() if window_end else math.inf)
        risk[order_id] = min(risk.get(order_id, mine), mine)
    waiting = [
        Waiting(
            order.pk,
            order.pickup_lat,
            order.pickup_long,
            order.vehicle,
            (*risk.get(order.pk, (1, math.inf)), order.created_at.timestamp()),
            order.pk in cod,
        )
        for order in orders
    ]
    return sorted(waiting, key=lambda w: w.rank)


# A courier who may be offered an order, as the matching reads them.
CANDIDATE = Shape(
    "Candidate",
    courier_id="pk",
    vehicle="vehicle",
    lat="position__lat",
    long="position__long",
    shift_ends_at="shift_ends_at",
)


def lock_candidates(waiting: list[Waiting], now: datetime, *, with_runs: bool = False) -> list:
    """Every courier who may be offered one of these orders (CANDIDATE rows): one query over
    the position index's box around all the pickups. Without `with_runs`, only those holding
    no route (one order at a time)."""
    radius = settings.DISPATCH_RADIUS_KM
    lats = [w.lat for w in waiting]
    longs = [w.long for w in waiting]
    lat_pad = radius / KM_PER_DEGREE
    widest = max(abs(min(lats) - lat_pad), abs(max(lats) + lat_pad))
    long_pad = radius / (KM_PER_DEGREE * max(math.cos(math.radians(widest)), 0.01))
    holds_offer = Offer.objects.filter(courier_id=OuterRef("pk"), status=OfferStatus.OFFERED)
    holds_route = Order.objects.filter(ORDER_STILL_TO_CARRY, driver_id=OuterRef("pk"))
    fresh = now - timedelta(minutes=settings.DISPATCH_POSITION_MINUTES)
    inside = position_model().objects.filter(
        courier_id=OuterRef("pk"),
        at__gte=fresh,
        lat__range=(min(lats) - lat_pad, max(lats) + lat_pad),
        long__range=(min(longs) - long_pad, max(longs) + long_pad),
    )
    couriers = (
        courier_model()
        .objects.filter(Exists(inside), online=True, active=True)
        .filter(is_sandbox_test_driver=False)
        .exclude(Exists(holds_offer))
    )
    if not with_runs:
        couriers = couriers.exclude(Exists(holds_route))
    couriers = (
        couriers.select_for_update(skip_locked=True, of=("self",))
        .order_by("pk")
        .values_list(*CANDIDATE.expressions)
    )
    return CANDIDATE.rows(couriers)


def tried_pairs(orders: list[Order]) -> set[tuple[UUID, int]]:
    """(order, courier) pairs already offered: never offered twice (offer_once_per_courier)."""
    rows = Offer.objects.filter(order_id__in=[o.pk for o in orders])
    return set(rows.values_list("order_id", "courier_id"))


def match(
    waiting: list[Waiting],
    couriers: list,
    *,
    tried: set,
    now: datetime,
    over_limit: set[int] | frozenset[int] = frozenset(),
) -> list[Offer]:
    """Greedy, in the orders' rank: each takes the nearest free candidate of its vehicle
    within DISPATCH_RADIUS_KM it was never offered to, and for an order with cash to collect
    not one over the cash limit (`over_limit`). Distances by numpy, one vector per order over
    all candidates."""
    if not couriers:
        return []
    ids = [courier.courier_id for courier in couriers]
    index_of = {courier_id: index for index, courier_id in enumerate(ids)}
    tried_by: dict[UUID, list[int]] = defaultdict(list)
    for order_id, courier_id in tried:
        if courier_id in index_of:
            tried_by[order_id].append(index_of[courier_id])
    vehicles = np.array([courier.vehicle for courier in couriers])
    lats = np.array([courier.lat for courier in couriers], dtype=float)
    longs = np.array([courier.long for courier in couriers], dtype=float)
    free = np.ones(len(ids), dtype=bool)
    under_limit = np.array([courier_id not in over_limit for courier_id in ids], dtype=bool)
    expires = now + timedelta(seconds=settings.OFFER_SECONDS)
    offers = []
    for order in waiting:
        usable = free & (vehicles == order.vehicle)
        if order.cod:
            usable &= under_limit
        usable[tried_by.get(order.order_id, [])] = False
        km = DistancesFrom(order.lat, order.long).km_to_many(lats, longs)
        usable &= km <= settings.DISPATCH_RADIUS_KM
        if not usable.any():
            continue
        nearest = int(np.argmin(np.where(usable, km, np.inf)))
        free[nearest] = False
        offer_id = uuid7()  # an offer of one order: its own bundle
        offers.append(
            Offer(
                id=offer_id,
                bundle=offer_id,
                order_id=order.order_id,
                courier_id=ids[nearest],
                status=OfferStatus.OFFERED,
                created_at=now,
                expires_at=expires,
            )
        )
    return offers
