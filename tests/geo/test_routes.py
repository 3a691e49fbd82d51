"""geo.routes.sequence_stops: the stop order of docs/contract.md §21 (docs/dispatch.md
"Stop order"). Pure Python: no database.

Hand-made cases are laid out in km east and north of a point of Phnom Penh, where the
answer can be seen; random orders are checked against the exact optimum
(tests/geo/optimal_routes.py).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from datetime import UTC, datetime, timedelta

import pytest

from geo.routes import Stop, sequence_stops
from tests.geo.optimal_routes import (
    brute_force_km,
    held_karp_km,
    random_order,
    random_orders,
    route_length_km,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SPEED_KMH, HANDLING_MINUTES = 25.0, 5.0
ORIGIN_LAT, ORIGIN_LONG = 11.55, 104.92
KM_PER_DEGREE = 111.195  # of latitude, on the haversine's sphere


def at(east_km: float, north_km: float) -> tuple[float, float]:
    """The point `east_km` east and `north_km` north of the origin (close enough over a
    few km for the cases' answers to be plain)."""
    cos_lat = math.cos(math.radians(ORIGIN_LAT))
    return (
        ORIGIN_LAT + north_km / KM_PER_DEGREE,
        ORIGIN_LONG + east_km / (KM_PER_DEGREE * cos_lat),
    )


def stop(east_km: float, north_km: float = 0.0, *, due_minutes: float | None = None) -> Stop:
    window_end = None if due_minutes is None else START + timedelta(minutes=due_minutes)
    return Stop(*at(east_km, north_km), window_end)


def order_of(drops: list[Stop], pickup=None, handling_minutes=HANDLING_MINUTES) -> list[int]:
    return sequence_stops(
        pickup or at(0, 0),
        drops,
        start_at=START,
        speed_kmh=SPEED_KMH,
        handling_minutes=handling_minutes,
    )


def windows_missed(pickup, drops: list[Stop], order: list[int]) -> int:
    """How many windows the courier misses riding `order`: each drop reached after the
    ride so far at SPEED_KMH and HANDLING_MINUTES per drop before it."""
    missed, minutes, here = 0, 0.0, pickup
    for position, index in enumerate(order):
        there = (drops[index].lat, drops[index].long)
        minutes += route_length_km(here, [Stop(*there)], [0]) / SPEED_KMH * 60
        reached = START + timedelta(minutes=minutes + HANDLING_MINUTES * position)
        if drops[index].window_end is not None and reached > drops[index].window_end:
            missed += 1
        here = there
    return missed


def crosses_itself(points: list[tuple[float, float]]) -> bool:
    """Whether two legs of the path (not neighbours) cross, in the plane of the points."""

    def turn(a, b, c) -> float:
        return (c[1] - a[1]) * (b[0] - a[0]) - (b[1] - a[1]) * (c[0] - a[0])

    legs = list(itertools.pairwise(points))
    return any(
        turn(a, c, d) * turn(b, c, d) < 0 and turn(a, b, c) * turn(a, b, d) < 0
        for n, (a, b) in enumerate(legs)
        for c, d in legs[n + 2 :]
    )


def test_no_drop_and_one_drop():
    assert order_of([]) == []
    assert order_of([stop(3, 4)]) == [0]


def test_a_line_of_drops_is_ridden_from_the_pickup_outwards():
    drops = [stop(3), stop(1), stop(4), stop(2)]
    assert order_of(drops) == [1, 3, 0, 2]


def test_a_drop_behind_the_pickup_is_taken_first_when_that_is_shorter():
    """The nearest drop is ahead (1 km east), so nearest neighbour rides east to 4 km and
    back 5.2 km to the drop 1.2 km west: 9.2 km. Going west first is 6.4 km."""
    drops = [stop(1), stop(2), stop(3), stop(4), stop(-1.2)]
    order = order_of(drops)
    assert order == [4, 0, 1, 2, 3]
    assert route_length_km(at(0, 0), drops, order) == pytest.approx(6.4, abs=0.01)
    assert route_length_km(at(0, 0), drops, order) == brute_force_km(at(0, 0), drops)


def nearest_neighbour(points: list[tuple[float, float]]) -> list[int]:
    """The plain nearest neighbour path from (0, 0), in the plane (what 2-opt starts from)."""
    here, left, path = (0.0, 0.0), list(range(len(points))), []
    while left:
        nearest = min(left, key=lambda i: (math.dist(here, points[i]), i))
        path.append(nearest)
        left.remove(nearest)
        here = points[nearest]
    return path


def test_2_opt_uncrosses_the_nearest_neighbour_path():
    """Nearest neighbour rides 0, 4, 1, 2, 3 here, and its legs 4→1 and 2→3 cross; the
    route must be the shortest there is, which never crosses itself."""
    layout = [(-1, -2), (-4, -3), (-4, -4), (-3, 0), (-1, -3)]
    drops = [stop(*point) for point in layout]
    greedy = nearest_neighbour(layout)
    assert greedy == [0, 4, 1, 2, 3]
    assert crosses_itself([(0, 0), *(layout[i] for i in greedy)])

    order = order_of(drops)
    assert not crosses_itself([(0, 0), *(layout[i] for i in order)])
    assert route_length_km(at(0, 0), drops, order) == pytest.approx(
        brute_force_km(at(0, 0), drops), abs=1e-9
    )


def test_a_greedy_first_step_does_not_trap_the_route():
    """The nearest drop (1, 1 km south-west) leads nearest neighbour to sweep west first
    and come back east (20.9 km even after 2-opt and Or-opt); the shortest route rides
    north-east first and sweeps back west: 19.2 km."""
    layout = [(-4, -5), (-4, -2), (-1, -1), (2, 2), (5, -1)]
    drops = [stop(*point) for point in layout]
    assert nearest_neighbour(layout)[0] == 2
    order = order_of(drops)
    assert order == [3, 4, 2, 1, 0]
    assert route_length_km(at(0, 0), drops, order) == pytest.approx(
        brute_force_km(at(0, 0), drops), abs=1e-9
    )


def test_held_karp_and_brute_force_agree_on_the_exact_optimum():
    rng = random.Random(7)
    for drops in [1, 2, 3, 4, 5, 6, 7, 7]:
        pickup, stops = random_order(rng, drops)
        assert held_karp_km(pickup, stops) == pytest.approx(
            brute_force_km(pickup, stops), rel=1e-12
        )


def test_random_orders_are_within_3_percent_of_the_optimum_on_average_10_at_worst():
    """The short version of bench/routes.py: 150 orders of 2 to 9 drops in the demo area."""
    ratios = []
    for pickup, drops in random_orders(seed=1032, count=150):
        order = order_of(drops, pickup=pickup)
        assert sorted(order) == list(range(len(drops)))
        ratios.append(route_length_km(pickup, drops, order) / held_karp_km(pickup, drops))
    assert min(ratios) > 1 - 1e-9  # the optimum is a lower bound: the measure is sound
    assert statistics.fmean(ratios) <= 1.03
    assert max(ratios) <= 1.10


# Three drops east at 1, 2, 3 km and one 4 km west: east first is 10 km, west first 11 km.
# At 25 km/h with 5 minutes a drop, east first reaches the west drop at 24 + 15 = 39 min;
# west first, at 9.6 min.
EAST_THEN_WEST = [0, 1, 2, 3]
WEST_FIRST = [3, 0, 1, 2]


def east_and_west(due_minutes: float | None) -> list[Stop]:
    return [stop(1), stop(2), stop(3), stop(-4, due_minutes=due_minutes)]


def test_a_window_the_shortest_route_would_miss_puts_that_drop_first():
    assert order_of(east_and_west(None)) == EAST_THEN_WEST
    assert order_of(east_and_west(due_minutes=30)) == WEST_FIRST


def test_the_handling_of_the_drops_before_counts_toward_a_window():
    """Riding alone, east first reaches the west drop at 24 min, within 30; with 5 minutes
    at each of the three drops before it, at 39."""
    assert order_of(east_and_west(due_minutes=30), handling_minutes=0) == EAST_THEN_WEST
    assert order_of(east_and_west(due_minutes=30), handling_minutes=5) == WEST_FIRST


def test_a_window_nobody_can_meet_leaves_the_route_as_without_it():
    """The west drop is 9.6 minutes away: a window ending at 5 is missed whatever the
    order, so it must not drag the courier west first."""
    assert order_of(east_and_west(due_minutes=5)) == EAST_THEN_WEST


def test_windows_are_never_missed_more_than_the_best_order_misses():
    """Random orders of 2 to 6 drops, two in five with a window ending 10 to 90 minutes
    after the start: the route misses no more windows than the best of every order does,
    and is about as short as the shortest of those (within 3% on average; the search
    keeps to routes that miss no more, so it can stop short of the best: 25% at worst)."""
    rng, ratios = random.Random(3217), []
    for _ in range(120):
        pickup, plain = random_order(rng, rng.randint(2, 6))
        drops = [
            stop._replace(window_end=START + timedelta(minutes=rng.uniform(10, 90)))
            if rng.random() < 0.4
            else stop
            for stop in plain
        ]
        order = order_of(drops, pickup=pickup)
        best = min(
            itertools.permutations(range(len(drops))),
            key=lambda o: (windows_missed(pickup, drops, o), route_length_km(pickup, drops, o)),
        )
        assert windows_missed(pickup, drops, order) == windows_missed(pickup, drops, best)
        ratios.append(route_length_km(pickup, drops, order) / route_length_km(pickup, drops, best))
    assert statistics.fmean(ratios) <= 1.03
    assert max(ratios) <= 1.25


def test_the_same_drops_give_the_same_order_and_ties_go_to_the_lower_index():
    for pickup, drops in random_orders(seed=5, count=30):
        assert order_of(drops, pickup=pickup) == order_of(list(drops), pickup=pickup)
    # 1 km east and 1 km west: either first is 3 km.
    assert order_of([stop(1), stop(-1)]) == [0, 1]
    assert order_of([stop(-1), stop(1)]) == [0, 1]
    assert order_of([stop(2, 2), stop(2, 2), stop(2, 2)]) == [0, 1, 2]


def test_a_speed_of_zero_is_refused():
    with pytest.raises(ValueError, match="speed_kmh"):
        sequence_stops(at(0, 0), [stop(1)], start_at=START, speed_kmh=0, handling_minutes=5)
