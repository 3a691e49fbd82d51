"""A courier's run (docs/contract.md §21): the stops of every order they carry, in the order
to ride, other businesses' orders included.

A run's stops are each order's pickup and its drops. The pickup is to do while a drop of the
order waits to be picked up (ASSIGNED); a drop while the courier still carries it (ASSIGNED,
PICKED_UP, RETURNING, or FAILED to be returned: back to the pickup). Done stops stay in the
run, at their place, until the order leaves it (nothing left to carry).

The order to ride is the stops' run positions: written when the courier accepts an offer
(the planner's order, dispatch/planner.py) or is given an order by hand (inserted where it
costs least). A stop without a position (an order given before runs existed) comes after
those with one: by its order's creation, the pickup first, then its drops in stop order.
Every order of one run shares a `run_id` while the run has a stop to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple
from uuid import UUID

from django.db.models import Exists, OuterRef, Q

from core.ids import uuid7
from core.rows import Shape
from core.writes import update_rows
from orders.models import Drop, DropStatus, Order, UndeliverableAction
from orders.statuses import NOT_PICKED_UP, STILL_TO_CARRY

PICKUP, DROP = "pickup", "drop"
# A stop placed after every stop with a run position.
UNPLACED = 10**9

# A drop of a run, with what its order's pickup stop needs.
RUN_DROP = Shape(
    "RunDrop",
    drop_id="pk",
    order_id="order_id",
    status="status",
    undeliverable_action="undeliverable_action",
    lat="lat",
    long="long",
    weight_kg="parcel_weight_kg",
    stop_sequence="stop_sequence",
    run_position="run_position",
    window_start="window_start",
    window_end="window_end",
    pickup_lat="order__pickup_lat",
    pickup_long="order__pickup_long",
    pickup_run_position="order__pickup_run_position",
    order_created_at="order__created_at",
    pickup_scheduled_at="order__pickup_scheduled_at",
    route_km="route_km",
    vehicle="order__vehicle",
    run_id="order__run_id",
)


class RunStop(NamedTuple):
    """One stop of a run: an order's pickup (`drop_id` None) or one of its drops."""

    kind: str
    order_id: UUID
    drop_id: UUID | None
    lat: float
    long: float
    status: str  # the drop's; a pickup's: ASSIGNED while to do, PICKED_UP once done
    to_do: bool
    position: int | None


def on_a_run(courier_id) -> Q:
    """Orders on the courier's run: theirs, with a drop still to carry."""
    to_carry = Drop.objects.filter(order_id=OuterRef("pk")).filter(
        Q(status__in=STILL_TO_CARRY)
        | Q(status=DropStatus.FAILED, undeliverable_action=UndeliverableAction.RETURN)
    )
    return Q(driver_id=courier_id) & Q(Exists(to_carry))


def run_drops(courier_ids: Iterable) -> dict:
    """RUN_DROP rows of these couriers' runs, by courier id: one query."""
    ids = list(courier_ids)
    on_run = Order.objects.filter(on_a_run(OuterRef("order__driver_id")), pk=OuterRef("order_id"))
    rows = (
        Drop.objects.filter(order__driver_id__in=ids)
        .filter(Exists(on_run))
        .values_list("order__driver_id", *RUN_DROP.expressions)
    )
    by_courier: dict = {courier_id: [] for courier_id in ids}
    for courier_id, *values in rows:
        by_courier[courier_id].append(RUN_DROP.Row._make(values))
    return by_courier


def stops_of(drops: Sequence) -> list[RunStop]:
    """A run's stops, in the order to ride, from its RUN_DROP rows."""
    by_order: dict = {}
    for drop in drops:
        by_order.setdefault(drop.order_id, []).append(drop)
    stops = []
    for order_drops in by_order.values():
        first = order_drops[0]
        stops.append((_key(first.pickup_run_position, first, 0, 0), _pickup_stop(order_drops)))
        for drop in order_drops:
            stops.append((_key(drop.run_position, drop, 1, drop.stop_sequence), _drop_stop(drop)))
    return [stop for _, stop in sorted(stops, key=lambda pair: pair[0])]


def _pickup_stop(order_drops: Sequence) -> RunStop:
    first = order_drops[0]
    waiting = any(drop.status in NOT_PICKED_UP for drop in order_drops)
    status = DropStatus.ASSIGNED if waiting else DropStatus.PICKED_UP
    return RunStop(
        PICKUP, first.order_id, None, first.pickup_lat, first.pickup_long, status, waiting,
        first.pickup_run_position,
    )  # fmt: skip


def _key(position, drop, kind_rank: int, sequence) -> tuple:
    return (
        UNPLACED if position is None else position,
        drop.order_created_at,
        str(drop.order_id),
        kind_rank,
        sequence or 0,
        str(drop.drop_id),
    )


def _drop_stop(drop) -> RunStop:
    back = drop.status == DropStatus.RETURNING or (
        drop.status == DropStatus.FAILED and drop.undeliverable_action == UndeliverableAction.RETURN
    )
    lat, long = (drop.pickup_lat, drop.pickup_long) if back else (drop.lat, drop.long)
    to_do = drop.status in STILL_TO_CARRY or back
    return RunStop(
        DROP, drop.order_id, drop.drop_id, lat, long, drop.status, to_do, drop.run_position
    )


def run_of(courier_id) -> list[RunStop]:
    """The courier's run, in the order to ride (empty without one)."""
    return stops_of(run_drops([courier_id])[courier_id])


def run_id_of(courier_id) -> UUID | None:
    """The id of the courier's run, None without one."""
    return (
        Order.objects.filter(on_a_run(courier_id), run_id__isnull=False)
        .values_list("run_id", flat=True)
        .first()
    )


def write_run_order(courier_id, stops: Sequence[tuple[str, UUID, UUID | None]]) -> UUID:
    """Number the courier's run in this order of (kind, order id, drop id) stops, 1..n, and
    give every order on it the run's id (a new one for a run that had none); the run's
    stops not named keep their place after these. The run's id."""
    run_id = run_id_of(courier_id) or uuid7()
    orders = {order_id for _, order_id, _ in stops}
    pickups = {order_id: n for n, (kind, order_id, _) in enumerate(stops, 1) if kind == PICKUP}
    drops = {drop_id: n for n, (kind, _, drop_id) in enumerate(stops, 1) if kind == DROP}
    _number(Order, pickups, "pickup_run_position")
    _number(Drop, drops, "run_position")
    Order.objects.filter(on_a_run(courier_id) | Q(pk__in=orders, driver_id=courier_id)).update(
        run_id=run_id
    )
    return run_id


def _number(model, positions: dict, field: str) -> None:
    """Each row's run position, in one statement (core.writes.update_rows)."""
    update_rows(model, (field,), list(positions.items()))


def leave_runs(order_ids: Iterable) -> int:
    """These orders leave the run they were on (taken back from their courier): no run id,
    no positions."""
    ids = list(order_ids)
    Drop.objects.filter(order_id__in=ids).update(run_position=None)
    return Order.objects.filter(pk__in=ids).update(run_id=None, pickup_run_position=None)


def to_do(stops: Iterable[RunStop]) -> list[RunStop]:
    """The stops still to ride, in order."""
    return [stop for stop in stops if stop.to_do]
