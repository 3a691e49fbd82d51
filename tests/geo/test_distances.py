"""geo.geometry: the haversine distance, and the same distances from one point to many."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from geo.geometry import EARTH_RADIUS_KM, DistancesFrom, haversine_km


def textbook_haversine_km(lat1: float, long1: float, lat2: float, long2: float) -> float:
    """The formula as written everywhere, every term computed for the pair."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(long2 - long1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def test_two_points_of_phnom_penh_about_1_2_km_apart():
    assert haversine_km(11.5696, 104.921, 11.5637, 104.9311) == pytest.approx(1.2, abs=0.1)
    assert haversine_km(11.5696, 104.921, 11.5696, 104.921) == 0.0


def test_distances_from_one_point_are_the_textbook_formula_to_the_last_bit():
    """Tracking and pricing compute a distance per drop from its pickup's precomputed terms
    (tracking/selectors.py, orders/decisions.py); each must be exactly the textbook
    formula's, or an ETA could move by a millisecond and a price by a cent."""
    rng = random.Random(18)
    for _ in range(200):
        lat, long = rng.uniform(-89, 89), rng.uniform(-179, 179)
        origin = DistancesFrom(lat, long)
        for _ in range(20):
            there = (lat + rng.uniform(-0.5, 0.5), long + rng.uniform(-0.5, 0.5))
            if rng.random() < 0.1:
                there = (rng.uniform(-90, 90), rng.uniform(-180, 180))
            expected = textbook_haversine_km(lat, long, *there)
            assert origin.km(*there) == expected
            assert haversine_km(lat, long, *there) == expected


def test_distances_to_many_points_at_once_are_the_one_off_distances():
    here = DistancesFrom(11.5564, 104.9282)
    lats = np.array([11.5564, 11.60, 11.50, -33.87, 11.5564])
    longs = np.array([104.9282, 104.93, 104.85, 151.21, 104.9282 + 180])
    many = here.km_to_many(lats, longs)
    one_off = [here.km(lat, long) for lat, long in zip(lats, longs, strict=True)]
    assert np.allclose(many, one_off, rtol=0, atol=1e-9)
    assert many[0] == 0 and many[3] > 6000
