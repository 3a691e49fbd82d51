"""geo.geometry: the haversine distance, and the same distances from one point to many."""

from __future__ import annotations

import random

import pytest

from geo.geometry import DistancesFrom, haversine_km


def test_two_points_of_phnom_penh_about_1_2_km_apart():
    assert haversine_km(11.5696, 104.921, 11.5637, 104.9311) == pytest.approx(1.2, abs=0.1)
    assert haversine_km(11.5696, 104.921, 11.5696, 104.921) == 0.0


def test_distances_from_one_point_are_haversine_km_to_the_last_bit():
    """Tracking computes a distance per drop from its order's pickup (tracking/selectors.py);
    each must be exactly the one haversine_km gives, or an ETA could move by a millisecond."""
    rng = random.Random(18)
    for _ in range(200):
        lat, long = rng.uniform(-89, 89), rng.uniform(-179, 179)
        origin = DistancesFrom(lat, long)
        for _ in range(20):
            there = (lat + rng.uniform(-0.5, 0.5), long + rng.uniform(-0.5, 0.5))
            if rng.random() < 0.1:
                there = (rng.uniform(-90, 90), rng.uniform(-180, 180))
            assert origin.km(*there) == haversine_km(lat, long, *there)
