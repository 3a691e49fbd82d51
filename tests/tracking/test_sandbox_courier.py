"""The sandbox test driver as a simulated courier (docs/contract.md §20): the same
`driver.position` and `order.courier_position` events a real courier gives, along the
order's route (tracking/sandbox_driver.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from events.models import Event, EventType
from geo.geometry import haversine_km
from tests.factories import HOME, SHOP, batch, drop, group
from tests.tracking.helpers import advance
from tracking.scenarios import EN_ROUTE_AT, PICKED_UP_AT, run_due_scenarios

STEP = 10  # SANDBOX_STEP_SECONDS


@pytest.fixture
def sandbox(open_for_business, alice):
    return alice.sandbox_key


def tracked(api, key, client_order_id: str) -> dict:
    [entry] = api.track([client_order_id], key).json()["data"]["orders"]
    return entry


def near(position: dict, place: tuple[float, float], km: float = 0.01) -> bool:
    return haversine_km(position["lat"], position["long"], *place) < km


def point_along(start: dict, end: dict, share: float) -> tuple[float, float]:
    return (
        start["lat"] + (end["lat"] - start["lat"]) * share,
        start["long"] + (end["long"] - start["long"]) * share,
    )


def test_a_scenario_courier_reports_where_it_is_and_sends_the_event(sandbox, api, clock):
    body = batch(group({**drop("SIM-1"), "sandbox_scenario": "deliver"}))
    assert api.bulk(body, sandbox).status_code == 200
    positions = []
    for expected_share in (0.0, PICKED_UP_AT, EN_ROUTE_AT):
        clock.shift(timedelta(seconds=STEP))
        run_due_scenarios()
        entry = tracked(api, sandbox, "SIM-1")
        position = entry["driver"]["position"]
        assert entry["driver"]["name"] == "Sandbox Test Driver"
        assert near(position, point_along(SHOP, HOME, expected_share)), (expected_share, position)
        assert datetime.fromisoformat(position["at"].replace("Z", "+00:00"))
        positions.append(position)
    events = Event.objects.filter(type=EventType.ORDER_COURIER_POSITION).order_by("created_at")
    sent = [e.data["courier"]["position"] for e in events]
    # Picked up and en route: the courier moved, and the event says where to.
    assert [(p["lat"], p["long"]) for p in sent] == [(p["lat"], p["long"]) for p in positions[1:]]
    assert events[0].data["drops"][0]["client_order_id"] == "SIM-1"
    clock.shift(timedelta(seconds=STEP))
    run_due_scenarios()  # delivered: no position any more
    entry = tracked(api, sandbox, "SIM-1")
    assert entry["status"] == "DELIVERED" and entry["driver"]["position"] is None


def test_an_order_advanced_by_hand_has_its_courier_on_the_route(sandbox, api, clock):
    first = drop("R-1", lat=11.5650, long=104.9282)  # ~1 km north of the shop
    second = drop("R-2", lat=11.6000, long=104.9282)  # ~4.9 km north
    assert api.bulk(batch(group(second, first)), sandbox).status_code == 200
    assert advance(api, sandbox, "R-1", "R-2", to="ASSIGNED").status_code == 200
    for name in ("R-1", "R-2"):  # assigned: waiting at the pickup
        entry = tracked(api, sandbox, name)
        assert near(entry["driver"]["position"], (SHOP["lat"], SHOP["long"]))
    assert tracked(api, sandbox, "R-1")["stop_sequence"] == 1
    moved = advance(api, sandbox, "R-1", "R-2", to="PICKED_UP").json()["data"]["orders"]
    picked_up_at = {e["client_order_id"]: e["events"][-1]["at"] for e in moved}
    clock.shift(timedelta(minutes=6))  # the simulation moves in steps, not with the clock
    km_from_shop = {}
    for name in ("R-1", "R-2"):
        position = tracked(api, sandbox, name)["driver"]["position"]
        assert position["at"] == picked_up_at[name]
        km_from_shop[name] = haversine_km(position["lat"], position["long"], *SHOP.values())
    # 0.3 of each drop's way along the route: R-2's goes through R-1 (~1 km), then on.
    way_to_first = haversine_km(*SHOP.values(), 11.5650, 104.9282)
    way_to_second = way_to_first + haversine_km(11.5650, 104.9282, 11.6000, 104.9282)
    assert abs(km_from_shop["R-1"] - PICKED_UP_AT * way_to_first) < 0.01
    assert abs(km_from_shop["R-2"] - PICKED_UP_AT * way_to_second) < 0.01
    assert km_from_shop["R-2"] > way_to_first  # past the first stop, on the route
