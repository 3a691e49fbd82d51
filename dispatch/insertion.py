"""Inserting an order into a run where it costs least (docs/contract.md §21): the dispatch
board's hand assignment, and the planner's second choice for an order its solver gave to a
courier who may not have it.

A run is a start place and its stops' places in riding order; an order is its pickup and its
drops. The pickup goes where it adds the least riding time, then each drop, farthest first,
where it adds the least after the pickup. Riding times come from a square matrix
(dispatch/travel.py) over the places named by index.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Insertion:
    """The run with the order in it (stop tokens in riding order) and the seconds it adds."""

    stops: list[Hashable]
    added_seconds: int


def ride_seconds(matrix: np.ndarray, start: int, places: Sequence[int]) -> int:
    """Riding seconds from the start through these places in order."""
    total, here = 0, start
    for place in places:
        total += int(matrix[here, place])
        here = place
    return total


def insert_order(
    matrix: np.ndarray,
    *,
    start: int,
    run: Sequence[tuple[Hashable, int]],
    pickup: tuple[Hashable, int] | None,
    drops: Sequence[tuple[Hashable, int]],
) -> Insertion:
    """The run (`(token, place)` stops after `start`) with the order's pickup (None: already
    on board) and drops inserted where each adds least, the pickup before its drops."""
    stops = list(run)
    before = ride_seconds(matrix, start, [place for _, place in stops])
    earliest = 0
    if pickup is not None:
        earliest = _best_slot(matrix, start, stops, pickup[1], 0) + 1
        stops.insert(earliest - 1, pickup)
    far_first = sorted(drops, key=lambda drop: -int(matrix[start, drop[1]]))
    for drop in far_first:
        slot = _best_slot(matrix, start, stops, drop[1], earliest)
        stops.insert(slot, drop)
    after = ride_seconds(matrix, start, [place for _, place in stops])
    return Insertion([token for token, _ in stops], after - before)


def _best_slot(matrix: np.ndarray, start: int, stops: list, place: int, earliest: int) -> int:
    """The index at which `place` adds the least riding time, not before `earliest`."""
    best, best_cost = len(stops), None
    for slot in range(earliest, len(stops) + 1):
        before = start if slot == 0 else stops[slot - 1][1]
        cost = int(matrix[before, place])
        if slot < len(stops):
            after = stops[slot][1]
            cost += int(matrix[place, after]) - int(matrix[before, after])
        if best_cost is None or cost < best_cost:
            best, best_cost = slot, cost
    return best
