"""Riding times between places (dispatch/travel.py): the straight line × ROAD_FACTOR."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dispatch.travel import Haversine, travel_times

PHNOM_PENH = (11.5564, 104.9282)


def test_riding_seconds_are_the_great_circle_grown_by_the_road_factor_at_the_speed():
    north = (PHNOM_PENH[0] + 0.1, PHNOM_PENH[1])  # 0.1° of latitude: 6371 × π / 1800 km
    east = (PHNOM_PENH[0], PHNOM_PENH[1] + 0.1)
    seconds = Haversine(road_factor=1.3).seconds([PHNOM_PENH, north, east], speed_kmh=25)
    assert seconds.dtype == np.int64 and seconds.shape == (3, 3)
    assert (np.diag(seconds) == 0).all() and (seconds == seconds.T).all()
    km = 6371.0 * math.radians(0.1) * 1.3
    assert seconds[0, 1] == round(km / 25 * 3600)  # 2,082 s
    # A degree of longitude is shorter away from the equator, by cos(latitude).
    assert seconds[0, 2] == pytest.approx(seconds[0, 1] * math.cos(math.radians(11.5564)), abs=1)


def test_twice_the_road_factor_or_half_the_speed_is_twice_the_time():
    places = [PHNOM_PENH, (11.60, 104.90), (11.50, 104.95)]
    base = Haversine(road_factor=1.0).seconds(places, speed_kmh=30)
    assert np.abs(Haversine(road_factor=2.0).seconds(places, speed_kmh=30) - 2 * base).max() <= 1
    assert np.abs(Haversine(road_factor=1.0).seconds(places, speed_kmh=15) - 2 * base).max() <= 1


def test_the_planner_rides_the_road_factor_of_the_settings(settings):
    settings.ROAD_FACTOR = 1.7
    assert travel_times() == Haversine(road_factor=1.7)
