"""The exact shortest stop order, and random orders in the demo area, shared by
tests/geo/test_routes.py and bench/routes.py (docs/dispatch.md "Stop order").

Two exact solvers of the open path (from the pickup through every drop, no way back):
Held-Karp's dynamic programme, fast enough for the 9 drops of the bench, and brute force
over permutations, the check on the first (the test makes both agree).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import permutations

from geo.demo import PHNOM_PENH
from geo.geometry import haversine_km
from geo.routes import Stop

Point = tuple[float, float]


def demo_bounds() -> tuple[float, float, float, float]:
    """(south, west, north, east) of the demo service area, geo/demo.py's box."""
    ring = PHNOM_PENH["coordinates"][0]
    longs, lats = [x for x, _ in ring], [y for _, y in ring]
    return min(lats), min(longs), max(lats), max(longs)


def random_order(rng: random.Random, drops: int) -> tuple[Point, list[Stop]]:
    """A pickup and `drops` drops (no windows) uniform in the demo area."""
    south, west, north, east = demo_bounds()

    def point() -> Point:
        return rng.uniform(south, north), rng.uniform(west, east)

    return point(), [Stop(*point(), None) for _ in range(drops)]


def random_orders(seed: int, count: int) -> list[tuple[Point, list[Stop]]]:
    """`count` orders of 2 to 9 drops (uniform), the same for the same seed."""
    rng = random.Random(seed)
    return [random_order(rng, rng.randint(2, 9)) for _ in range(count)]


def distances_km(pickup: Point, drops: Sequence[Stop]) -> list[list[float]]:
    points = [pickup, *((drop.lat, drop.long) for drop in drops)]
    return [[haversine_km(*a, *b) for b in points] for a in points]


def route_length_km(pickup: Point, drops: Sequence[Stop], order: Sequence[int]) -> float:
    """The ride from the pickup through the drops in `order` (indexes into drops)."""
    points = [pickup, *((drops[i].lat, drops[i].long) for i in order)]
    return sum(haversine_km(*a, *b) for a, b in zip(points, points[1:], strict=False))


def held_karp_km(pickup: Point, drops: Sequence[Stop]) -> float:
    """The shortest open path's length, exact: best[set][j] is the shortest ride from the
    pickup through the drops of `set` (a bit mask), ending at drop j."""
    d, n = distances_km(pickup, drops), len(drops)
    if n == 0:
        return 0.0
    best = [[float("inf")] * n for _ in range(1 << n)]
    for j in range(n):
        best[1 << j][j] = d[0][j + 1]
    for mask in range(1, 1 << n):
        row = best[mask]
        for j in range(n):
            here = row[j]
            if here == float("inf"):
                continue
            from_j = d[j + 1]
            for k in range(n):
                if not mask & (1 << k):
                    bigger = best[mask | (1 << k)]
                    if here + from_j[k + 1] < bigger[k]:
                        bigger[k] = here + from_j[k + 1]
    return min(best[(1 << n) - 1])


def brute_force_km(pickup: Point, drops: Sequence[Stop]) -> float:
    """The shortest open path's length, exact, by trying every order (small n only)."""
    return min(route_length_km(pickup, drops, order) for order in permutations(range(len(drops))))
