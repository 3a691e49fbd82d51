"""The order a courier visits an order's drops in (docs/contract.md §21, docs/dispatch.md
"Stop order"): pure Python, no database.

The rule: nearest neighbour from the pickup, improved by 2-opt (and Or-opt moves) on
haversine distances; drops with the earliest window end go first when a window would
otherwise be missed. The route is an open path: it starts at the pickup and ends at the
last drop, with no way back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from itertools import chain, pairwise
from typing import NamedTuple

from geo.geometry import DistancesFrom

# Length changes smaller than this (a millimetre) are float noise, not an improvement:
# accepting them could swap two equal routes for ever.
EPSILON_KM = 1e-6

Path = list[int]  # node numbers: 0 the pickup, then drops, the end node last
Move = tuple[int, int, int, bool]  # (i, j, k, reversed): see _applied
Cost = tuple[int, float]  # (windows missed, length in km)


class Stop(NamedTuple):
    """A drop to visit: where it is, and when its drop-off window ends (None: no window)."""

    lat: float
    long: float
    window_end: datetime | None = None


def sequence_stops(
    pickup: tuple[float, float],
    drops: Sequence[Stop],
    *,
    start_at: datetime,
    speed_kmh: float,
    handling_minutes: float,
) -> list[int]:
    """The visiting order of `drops`, as indexes into it, for a courier leaving `pickup`
    (lat, long) at `start_at`.

    The shortest route first: nearest neighbour from the pickup, and the same with each
    other drop as the first stop, each improved by 2-opt and Or-opt moves while one
    makes it shorter; the shortest wins. A drop is reached at start_at + the ride there
    (haversine km at `speed_kmh`) + `handling_minutes` for each drop before it; its
    window is met when it is reached by `window_end`. When the shortest route would miss
    a window, routes compare by (windows missed, length): the same moves go on, from the
    route that misses fewest and from the windowed drops by earliest end (then nearest
    neighbour), taken only when they miss fewer windows, or as many and are shorter. A
    window no route can meet (the drop is out of reach by its end even as the first
    stop) counts for none, so it never bends the route. Deterministic: ties go to the
    lower index. The choices and their figures: docs/dispatch.md, docs/decisions.md.
    """
    if speed_kmh <= 0:
        raise ValueError("speed_kmh must be above 0.")
    if len(drops) < 2:
        return list(range(len(drops)))
    problem = _Problem(pickup, drops, start_at, speed_kmh, handling_minutes)
    local_optima = [_improve(problem, start, windows=False) for start in _starts(problem)]
    shortest = min(local_optima, key=problem.length)
    if problem.misses(shortest) == 0:
        return _drop_indexes(shortest)
    # A window would be missed: the same search on (misses, length), from the route above
    # that misses fewest and from the windowed drops by earliest end.
    starts = (min(local_optima, key=problem.cost), _earliest_end_first(problem))
    best = min((_improve(problem, start, windows=True) for start in starts), key=problem.cost)
    return _drop_indexes(best)


def _drop_indexes(path: Path) -> list[int]:
    return [node - 1 for node in path[1:-1]]


class _Problem:
    """One order's nodes: 0 the pickup, 1..n the drops, n + 1 an end at distance 0 from
    every node (so that an open path is a closed one's formulas, and the last drop can
    move like any other). `due` is each drop's window end in minutes after the start,
    None for no window or one no route can meet."""

    def __init__(
        self,
        pickup: tuple[float, float],
        drops: Sequence[Stop],
        start_at: datetime,
        speed_kmh: float,
        handling_minutes: float,
    ) -> None:
        points = [pickup, *((drop.lat, drop.long) for drop in drops)]
        self.distances = _distance_matrix(points)
        self.drop_nodes = list(range(1, len(points)))
        self.end = len(points)
        self.minutes_per_km = 60.0 / speed_kmh
        self.handling_minutes = handling_minutes
        self.due = [None] + [
            self._reachable_due(node, drop, start_at) for node, drop in enumerate(drops, 1)
        ]
        self.has_windows = any(due is not None for due in self.due)

    def _reachable_due(self, node: int, drop: Stop, start_at: datetime) -> float | None:
        if drop.window_end is None:
            return None
        due = (drop.window_end - start_at).total_seconds() / 60
        earliest = self.distances[0][node] * self.minutes_per_km
        return due if earliest <= due else None

    def length(self, path: Path) -> float:
        row = self.distances
        return sum(row[a][b] for a, b in zip(path, path[1:], strict=False))

    def misses(self, path: Path) -> int:
        if not self.has_windows:
            return 0
        missed, minutes = 0, 0.0
        for position in range(1, len(path) - 1):
            node = path[position]
            minutes += self.distances[path[position - 1]][node] * self.minutes_per_km
            due = self.due[node]
            if due is not None and minutes + self.handling_minutes * (position - 1) > due:
                missed += 1
        return missed

    def cost(self, path: Path) -> Cost:
        return self.misses(path), self.length(path)

    def length_only(self, path: Path) -> Cost:
        return 0, self.length(path)


def _distance_matrix(points: list[tuple[float, float]]) -> list[list[float]]:
    """Haversine km between every two points, each pair worked out once, plus the end
    node's row and column of zeros."""
    size = len(points) + 1
    matrix = [[0.0] * size for _ in range(size)]
    for i, (lat, long) in enumerate(points):
        origin = DistancesFrom(lat, long)
        for j in range(i + 1, len(points)):
            matrix[i][j] = matrix[j][i] = origin.km(*points[j])
    return matrix


def _starts(problem: _Problem) -> list[Path]:
    """The routes the search starts from: the nearest neighbour route from the pickup;
    the same with each other drop as the first stop (one greedy first step is what most
    often traps 2-opt far from the best route)."""
    distances, drops = problem.distances, problem.drop_nodes
    nearest = _nearest_neighbour(distances, [0], drops)
    starts = [nearest]
    for first in drops:
        if first != nearest[1]:
            starts.append(_nearest_neighbour(distances, [0, first], _without(drops, first)))
    return starts


def _without(nodes: list[int], node: int) -> list[int]:
    return [other for other in nodes if other != node]


def _nearest_neighbour(distances: list[list[float]], path: Path, left: list[int]) -> Path:
    """`path` extended by always riding to the nearest drop not yet visited (ties: the
    lower index), then closed with the end node."""
    path, left = list(path), list(left)
    while left:
        row = distances[path[-1]]
        nearest = min(left, key=lambda node: (row[node], node))
        path.append(nearest)
        left.remove(nearest)
    return [*path, len(distances) - 1]


def _earliest_end_first(problem: _Problem) -> Path:
    """The drops with a window that can be met, by earliest end (ties: the lower index),
    then the others by nearest neighbour from the last of them."""
    windowed = sorted(
        (node for node in problem.drop_nodes if problem.due[node] is not None),
        key=lambda node: (problem.due[node], node),
    )
    rest = [node for node in problem.drop_nodes if problem.due[node] is None]
    return _nearest_neighbour(problem.distances, [0, *windowed], rest)


def _improve(problem: _Problem, path: Path, *, windows: bool) -> Path:
    """2-opt and Or-opt moves, the first that makes the cost strictly better each time,
    until none does (a local optimum). The cost is (windows missed, length), or the length
    alone when `windows` is false."""
    cost_of = problem.cost if windows else problem.length_only
    cost = cost_of(path)
    while (better := _first_improvement(problem.distances, path, cost, cost_of)) is not None:
        path, cost = better
    return path


def _first_improvement(
    distances: list[list[float]], path: Path, cost: Cost, cost_of: Callable[[Path], Cost]
) -> tuple[Path, Cost] | None:
    """The first move, in a fixed order, that makes (misses, length) strictly better. A
    move's length change is known without building the route; the route is built and its
    windows checked only when it could be better: shorter, or some window now missed."""
    bound = -EPSILON_KM if cost[0] == 0 else math.inf
    for delta, move in _moves(distances, path, bound):
        candidate = _applied(path, move)
        new_cost = cost_of(candidate)
        if new_cost[0] < cost[0] or (new_cost[0] == cost[0] and delta < -EPSILON_KM):
            return candidate, new_cost
    return None


def _moves(distances: list[list[float]], path: Path, bound: float) -> Iterator[tuple[float, Move]]:
    """Every 2-opt move (reverse path[i..j]) and Or-opt move (take the run path[i..j], of
    any length, and put it after path[k], as it is or reversed) that changes the length by
    less than `bound`, with that change. The pickup (first) and the end node (last) never
    move. (The distances are symmetric: d[a][b] is d[b][a].)"""
    d, last = distances, len(path) - 2
    legs = [d[a][b] for a, b in pairwise(path)]  # legs[k]: from path[k] to path[k + 1]
    for i in range(1, last):
        row_before, row_first = d[path[i - 1]], d[path[i]]
        for j in range(i + 1, last + 1):
            delta = row_before[path[j]] + row_first[path[j + 1]] - legs[i - 1] - legs[j]
            if delta < bound:
                yield delta, (i, j, -1, True)
    for i in range(1, last + 1):
        row_before, row_first = d[path[i - 1]], d[path[i]]
        for j in range(i, last + 1):
            row_tail = d[path[j]]
            removed = row_before[path[j + 1]] - legs[i - 1] - legs[j]
            for k in chain(range(i - 1), range(j + 1, last + 1)):
                left, right, gap = path[k], path[k + 1], removed - legs[k]
                if (delta := gap + row_first[left] + row_tail[right]) < bound:
                    yield delta, (i, j, k, False)
                if j > i and (delta := gap + row_tail[left] + row_first[right]) < bound:
                    yield delta, (i, j, k, True)


def _applied(path: Path, move: Move) -> Path:
    """The route after a move of _moves: k = -1 reverses path[i..j] in place; otherwise
    path[i..j] (reversed if asked) goes after path[k]."""
    i, j, k, reverse = move
    segment = path[i : j + 1][::-1] if reverse else path[i : j + 1]
    if k < 0:
        return path[:i] + segment + path[j + 1 :]
    rest = path[:i] + path[j + 1 :]
    at = k + 1 if k < i else k + 1 - len(segment)
    return rest[:at] + segment + rest[at:]
