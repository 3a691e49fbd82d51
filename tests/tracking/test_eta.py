"""The ETA of DESIGN.md §14, on fixed clocks for each status (tracking/eta.py).

The demo drop is ~1.66 km from its shop: at 25 km/h that is 3 min 59 s of travel.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.tracking.helpers import advance, cancel, entries, place
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
