"""The ETA of docs/contract.md §14, on fixed clocks for each status (tracking/eta.py).

The demo drop is ~1.66 km from its shop: at 25 km/h that is 3 min 59 s of travel.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from core.formats import iso_z
from geo.geometry import haversine_km
from tests.factories import SHOP
from tests.tracking.helpers import THIS_AFTERNOON, advance, cancel, entries, place
from tracking.eta import EtaModel

T0 = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)  # the fixture clock: 10:00 in Phnom Penh
KM = 25.0  # one hour at COURIER_SPEED_KMH


def at(minutes: float) -> str:
    return (
        (T0 + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


@pytest.mark.parametrize(
    ("status", "picked_up_after", "now_after", "expected"),
    [
        # Waiting for a courier: dispatch 15 min after the pickup time, 5 + 60 + 5 to the drop.
        ("PENDING", None, 0, (15, 85)),
        ("SCHEDULED", None, 0, (15, 85)),
        ("ASSIGNED", None, 10, (15, 85)),
        # Dispatch overdue: the courier comes now at best.
        ("PENDING", None, 40, (40, 110)),
        # Picked up at +20: travel and the drop's handling from then.
        ("PICKED_UP", 20, 30, (20, 85)),
        # ... and late: the drop is now at best.
        ("PICKED_UP", 20, 90, (20, 90)),
    ],
)
def test_the_model_for_each_active_status(settings, status, picked_up_after, now_after, expected):
    settings.DISPATCH_MINUTES, settings.COURIER_SPEED_KMH, settings.HANDLING_MINUTES = 15, 25, 5
    picked_up = None if picked_up_after is None else T0 + timedelta(minutes=picked_up_after)

    eta = EtaModel().of(
        status=status,
        pickup_time=T0,
        picked_up_at=picked_up,
        km=KM,
        now=T0 + timedelta(minutes=now_after),
    )

    assert eta == {"pickup_at": at(expected[0]), "dropoff_at": at(expected[1])}


@pytest.mark.parametrize("status", ["DELIVERED", "FAILED", "CANCELLED"])
def test_no_eta_once_finished(status):
    assert EtaModel().of(status=status, pickup_time=T0, picked_up_at=T0, km=KM, now=T0) is None


def test_tracking_entries_carry_the_eta_through_the_lifecycle(open_for_business, alice, api):
    place(api, alice.sandbox_key, "E-1", "E-2")
    entry = entries(api.track(["E-1"], alice.sandbox_key))["E-1"]
    pickup_at = datetime.fromisoformat(entry["created_at"]) + timedelta(minutes=15)
    assert datetime.fromisoformat(entry["eta"]["pickup_at"]) == pickup_at
    travel_and_handling = datetime.fromisoformat(entry["eta"]["dropoff_at"]) - pickup_at
    assert timedelta(minutes=13) < travel_and_handling < timedelta(minutes=15)  # 10 + ~4

    open_for_business.move_to(T0 + timedelta(minutes=20))
    picked = entries(advance(api, alice.sandbox_key, "E-1", to="PICKED_UP"))["E-1"]
    picked_up_event = picked["events"][-1]
    assert picked_up_event["status"] == "PICKED_UP"
    assert picked["eta"]["pickup_at"] == picked_up_event["at"]

    delivered = entries(advance(api, alice.sandbox_key, "E-1"))["E-1"]
    cancelled = entries(cancel(api, alice.sandbox_key, "E-2"))["E-2"]
    assert delivered["eta"] is None and cancelled["eta"] is None


def _by_datetimes(model, *, pickup_time, picked_up_at, km, now):
    """The model in plain datetime arithmetic, as docs/contract.md §14 words it."""
    travel = timedelta(hours=km / model.speed_kmh)
    if picked_up_at is not None:
        dropoff = max(picked_up_at + travel + model.handling, now)
        return {"pickup_at": iso_z(picked_up_at), "dropoff_at": iso_z(dropoff)}
    pickup = max(pickup_time + model.dispatch, now)
    return {"pickup_at": iso_z(pickup), "dropoff_at": iso_z(pickup + 2 * model.handling + travel)}


def test_the_microsecond_arithmetic_gives_the_moments_datetimes_give():
    """tracking/eta.py counts in epoch microseconds for speed; every moment must be the one
    timedelta arithmetic gives, to the millisecond of the wire format: distances of less
    than a metre to beyond an hour's travel, fractions that round half to even, minute and
    day boundaries, and a late 'now'."""
    model = EtaModel()
    rng = random.Random(18)
    half_us_km = model.speed_kmh * 0.5 / 3_600_000_000  # half a microsecond of travel
    distances = [0.0, 1e-9, half_us_km, 3 * half_us_km, 25.0, 2500.0, 0.1 + 0.2]
    distances += [rng.uniform(0, 60) for _ in range(3000)]
    distances += [rng.uniform(0, 5000) for _ in range(1000)]
    boundary = datetime(2026, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)
    for i, km in enumerate(distances):
        pickup_time = boundary - timedelta(microseconds=rng.randrange(0, 10**11))
        now = pickup_time + timedelta(microseconds=rng.randrange(-(10**10), 10**10))
        picked_up_at = None if i % 3 else pickup_time + timedelta(seconds=rng.uniform(0, 5000))
        args = {"pickup_time": pickup_time, "picked_up_at": picked_up_at, "km": km, "now": now}
        status = "PENDING" if picked_up_at is None else "PICKED_UP"
        assert model.of(status=status, **args) == _by_datetimes(model, **args), args


def test_drops_in_their_first_status_get_exactly_the_model_eta(open_for_business, alice, api):
    """Tracking's shortcut for drops that have not moved (one start per pickup time, found by
    its text: tracking.selectors._Context._eta) gives the model's own moments, to the ms."""
    spots = [
        {"lat": 11.5696, "long": 104.9210},
        {"lat": 11.5800, "long": 104.9000},
        {"lat": 11.5500, "long": 104.9400},
        {"lat": 11.6064, "long": 104.9282},
    ]
    now_ids = [f"N-{i}" for i in range(len(spots))]
    later_ids = [f"L-{i}" for i in range(len(spots))]
    for ids, scheduled in ((now_ids, None), (later_ids, THIS_AFTERNOON)):
        for i, spot in zip(ids, spots, strict=True):
            place(api, alice.sandbox_key, i, scheduled_at=scheduled, **spot)

    tracked = entries(api.track(now_ids + later_ids, alice.sandbox_key))

    model = EtaModel()
    for ids, scheduled in ((now_ids, None), (later_ids, THIS_AFTERNOON)):
        for i, spot in zip(ids, spots, strict=True):
            entry = tracked[i]
            assert entry["status"] == ("SCHEDULED" if scheduled else "PENDING")
            pickup_time = datetime.fromisoformat(scheduled or entry["created_at"])
            km = haversine_km(SHOP["lat"], SHOP["long"], spot["lat"], spot["long"])
            expected = _by_datetimes(
                model, pickup_time=pickup_time, picked_up_at=None, km=km, now=T0
            )
            assert entry["eta"] == expected, i
