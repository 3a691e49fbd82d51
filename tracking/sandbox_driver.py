"""The sandbox test driver as a simulated courier (docs/contract.md §14, §20): sandbox
integrators see the same `driver.position` as a real courier's, at the place the simulated
courier has reached on the order's route.

The route is the one a real courier rides: the pickup, then the order's drops in stop order
(orders/stops.py) up to this drop; straight from the pickup when the order has no stop order.
How far along it the courier is:
- a drop a scenario walks (tracking/scenarios.py) is at its `courier_progress`, the fraction
  of the way the scenario has reached (0 assigned, 0.3 picked up, 0.7 en route);
- a drop advanced by hand the same by its status: assigned at the pickup, picked up 0.3 of
  the way.
The position's `at` is the drop's last move: the simulation moves in steps, so two reads
between steps give the same entry (as a real courier's stored position does).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import F

from geo.geometry import haversine_km
from orders.models import Drop, DropStatus
from orders.statuses import ON_THE_WAY

Place = tuple[float, float]
# How far along the way the simulated courier is at each step (tracking/scenarios.py).
PICKED_UP_AT = 0.3
EN_ROUTE_AT = 0.7


def simulated_positions(rows, orders: dict, moves: dict) -> dict[str, dict]:
    """`{lat, long, at}` by drop id for the rows (DROP_SEEN) on the way with the sandbox test
    driver; one query for their orders' routes, only when one is past a first stop."""
    simulated = [row for row in rows if row.status in ON_THE_WAY and orders[row.order_id].simulated]
    if not simulated:
        return {}
    # A first stop's way is straight from the pickup: only later ones need the stops before.
    moving = {row.order_id for row in simulated if (row.stop_sequence or 1) > 1}
    routes: dict[str, list[tuple[str, Place]]] = defaultdict(list)
    if moving:
        for order_id, pk, lat, long in (
            Drop.objects.filter(order_id__in=moving, stop_sequence__isnull=False)
            .order_by("order_id", F("stop_sequence").asc(), "pk")
            .values_list("order_id", "pk", "lat", "long")
        ):
            routes[str(order_id)].append((str(pk), (lat, long)))
    positions = {}
    for row in simulated:
        pickup = orders[row.order_id].pickup
        path = _path((pickup["lat"], pickup["long"]), routes.get(row.order_id, []), row)
        share = row.courier_progress
        if share is None:
            share = 0.0 if row.status == DropStatus.ASSIGNED else PICKED_UP_AT
        lat, long = _along(path, share * _length(path))
        last_move = moves.get(row.drop_id)
        positions[row.drop_id] = {"lat": lat, "long": long, "at": last_move[-1]["at"]}
    return positions


def _path(pickup: Place, route: list[tuple[str, Place]], row) -> list[Place]:
    """The pickup, then the route's stops up to this drop; straight there without a route."""
    path = [pickup]
    for drop_id, place in route:
        path.append(place)
        if drop_id == row.drop_id:
            return path
    return [pickup, (row.lat, row.long)]


def _length(path: list[Place]) -> float:
    return sum(haversine_km(*a, *b) for a, b in zip(path, path[1:], strict=False))


def _along(path: list[Place], km: float) -> Place:
    """The point `km` along the path, each leg taken as straight between its ends."""
    for start, end in zip(path, path[1:], strict=False):
        leg = haversine_km(*start, *end)
        if km <= leg and leg > 0:
            share = km / leg
            return (start[0] + (end[0] - start[0]) * share, start[1] + (end[1] - start[1]) * share)
        km -= leg
    return path[-1]
