"""Riding times between places, for the planner (docs/dispatch.md "The solver").

One interface, TravelTimes: a road-network engine (OSRM, Valhalla) can replace the straight
line without the planner changing. The one in use is Haversine: great-circle km grown by
ROAD_FACTOR (streets are not straight), ridden at the vehicle's speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from django.conf import settings

from geo.geometry import EARTH_RADIUS_KM

Place = tuple[float, float]  # (lat, long) in degrees


class TravelTimes(Protocol):
    def seconds(self, places: Sequence[Place], *, speed_kmh: float) -> np.ndarray:
        """A square int64 matrix of riding seconds from each place (row) to each (column),
        0 on the diagonal."""
        ...


@dataclass(frozen=True)
class Haversine:
    """Great-circle km × road_factor at the speed; every pair at once, by numpy."""

    road_factor: float

    def km(self, places: Sequence[Place]) -> np.ndarray:
        """Road km between every pair: the great-circle distance × road_factor."""
        points = np.radians(np.asarray(places, dtype=np.float64).reshape(-1, 2))
        lats, longs = points[:, 0], points[:, 1]
        dlat = lats[None, :] - lats[:, None]
        dlong = longs[None, :] - longs[:, None]
        cosines = np.cos(lats)
        a = np.sin(dlat / 2) ** 2 + cosines[:, None] * cosines[None, :] * np.sin(dlong / 2) ** 2
        great_circle = 2 * EARTH_RADIUS_KM * np.arcsin(np.minimum(1.0, np.sqrt(a)))
        return great_circle * self.road_factor

    def seconds(self, places: Sequence[Place], *, speed_kmh: float) -> np.ndarray:
        if speed_kmh <= 0:
            raise ValueError("speed_kmh must be above 0.")
        riding = np.rint(self.km(places) * (3600.0 / speed_kmh)).astype(np.int64)
        np.fill_diagonal(riding, 0)
        return riding


def travel_times() -> TravelTimes:
    """The riding times the planner uses: the straight line × ROAD_FACTOR."""
    return Haversine(road_factor=settings.ROAD_FACTOR)
