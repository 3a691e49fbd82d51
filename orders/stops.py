"""Stop order (docs/contract.md §21): each order's drops numbered in the order a courier
visits them, with the ride from the pickup through the stops before each one.

Sequenced before the dispatcher offers an order, and again when one of its drops is
cancelled or moved before pickup. Only an order none of whose drops is picked up yet is
(re)sequenced: once the courier rides, the route is theirs. The drops still to carry get
1..n; a cancelled drop none. One read and one write for any number of orders.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce

from core.rows import Shape
from core.writes import update_rows
from geo.geometry import DistancesFrom
from geo.routes import Stop, sequence_stops
from orders.models import Drop
from orders.statuses import NOT_PICKED_UP, DropStatus

# The route is made of the drops a courier will carry from the pickup: NOT_PICKED_UP ones.
# A drop past these has left the pickup: its order keeps the route it has.
BEFORE_PICKUP = NOT_PICKED_UP | {DropStatus.CANCELLED}

# The rule is built for a courier's round (2-9 drops: under 2 ms); its search grows fast
# with the drops (25: ~60 ms, 40: ~0.6 s). A pickup group larger than this is no round one
# courier rides: it keeps no stop order, and its ETAs count straight from the pickup
# (docs/dispatch.md).
MAX_ROUTE_DROPS = 25

# A drop as its order's route is made from it: where it goes, by when, and where and when
# its order leaves the pickup.
ROUTE_DROP = Shape(
    "RouteDrop",
    pk="pk",
    order_id="order_id",
    status="status",
    lat="lat",
    long="long",
    window_end="window_end",
    pickup_lat=F("order__pickup_lat"),
    pickup_long=F("order__pickup_long"),
    leaves_at=Coalesce("order__pickup_scheduled_at", "order__created_at"),
)


def sequence_orders(order_ids: Iterable[UUID], *, now: datetime) -> int:
    """Number the drops of these orders in stop order; how many drops were written."""
    by_order: dict[UUID, list] = defaultdict(list)
    rows = (
        Drop.objects.filter(order_id__in=list(order_ids))
        .order_by("pk")
        .values_list(*ROUTE_DROP.expressions)
    )
    for row in ROUTE_DROP.rows(rows):
        by_order[row.order_id].append(row)
    written: list[tuple] = []
    for drops in by_order.values():
        carried = sum(row.status in NOT_PICKED_UP for row in drops)
        if carried <= MAX_ROUTE_DROPS and all(row.status in BEFORE_PICKUP for row in drops):
            written += _sequenced(drops, now)
    update_rows(Drop, ("stop_sequence", "route_km"), written)
    return len(written)


def lock_routes_of(drop_ids: Iterable[UUID]) -> None:
    """Lock every drop of these drops' orders, in pk order as every mover locks drops
    (tracking.lifecycle): a cancel or edit that will renumber its order's route holds the
    whole route first, so it never waits for a drop while holding another's lock."""
    orders = Drop.objects.filter(pk__in=list(drop_ids)).values("order_id")
    route = Drop.objects.select_for_update().filter(order_id__in=orders).order_by("pk")
    list(route.values_list("pk", flat=True))


def resequence(order_ids: Iterable[UUID], *, now: datetime) -> int:
    """Renumber the routes of those of these orders already sequenced (a drop of theirs was
    cancelled or moved); their drops must be locked (lock_routes_of). Drops written."""
    sequenced = (
        Drop.objects.filter(order_id__in=list(order_ids), stop_sequence__isnull=False)
        .values_list("order_id", flat=True)
        .distinct()
    )
    ids = list(sequenced)
    return sequence_orders(ids, now=now) if ids else 0


def sequence_unsequenced(order_ids: Iterable[UUID], *, locked: set[UUID], now: datetime) -> int:
    """Sequence those of these orders that have no route yet and all of whose drops the
    caller holds locked (`locked`): one read; an order with a drop it does not hold keeps
    no route rather than wait for a lock while holding others. Drops written."""
    rows = Drop.objects.filter(order_id__in=list(order_ids)).values_list(
        "order_id", "pk", "stop_sequence"
    )
    whole: dict[UUID, bool] = {}
    for order_id, pk, sequence in rows:
        whole[order_id] = whole.get(order_id, True) and pk in locked and sequence is None
    ready = [order_id for order_id, ok in whole.items() if ok]
    return sequence_orders(ready, now=now) if ready else 0


def _sequenced(rows: list, now: datetime) -> list[tuple]:
    """One order's drops (ROUTE_DROP rows) as (pk, stop_sequence, route_km) (cancelled
    ones: none, none)."""
    carried = [row for row in rows if row.status in NOT_PICKED_UP]
    first = rows[0]  # the order's pickup and leaving time are on each of its drops' rows
    pickup = (first.pickup_lat, first.pickup_long)
    handling = settings.HANDLING_MINUTES
    leaves = max(first.leaves_at, now) + timedelta(minutes=settings.DISPATCH_MINUTES + handling)
    visit = sequence_stops(
        pickup,
        [Stop(row.lat, row.long, row.window_end) for row in carried],
        start_at=leaves,
        speed_kmh=settings.COURIER_SPEED_KMH,
        handling_minutes=handling,
    )
    place: dict[UUID, tuple] = {row.pk: (row.pk, None, None) for row in rows}
    km, here = 0.0, pickup
    for sequence, index in enumerate(visit, start=1):
        row = carried[index]
        km += DistancesFrom(*here).km(row.lat, row.long)
        here = (row.lat, row.long)
        place[row.pk] = (row.pk, sequence, km)
    return list(place.values())
