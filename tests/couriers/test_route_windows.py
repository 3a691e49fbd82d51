"""A drop's window on the courier's route (docs/couriers.md "Your run"): the API's stop carries
it as tracking does, and the app says when to hand over, in Phnom Penh time, never before."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop

# The clock of open_for_business reads Monday 2026-11-23 10:00 in Phnom Penh (03:00 UTC).
WINDOW = {"start": "2026-11-23T14:00:00+07:00", "end": "2026-11-23T16:30:00+07:00"}


@pytest.fixture
def route(open_for_business, alice, api, dara):
    courier, client = dara
    drops = assigned_drops(
        api, alice, courier, {**drop("W-1"), "dropoff_window": WINDOW}, drop("W-2")
    )
    windowed, plain = sorted(drops, key=lambda one: one.client_order_id)
    stops = client.get("/route").json()["data"]["route"]["stops"]
    return courier, {stop["drop_id"]: stop for stop in stops}, windowed, plain


def test_the_route_stop_carries_its_drops_window(route):
    _, stops, windowed, plain = route
    assert stops[str(windowed.pk)]["dropoff_window"] == {
        "start": "2026-11-23T07:00:00.000Z",
        "end": "2026-11-23T09:30:00.000Z",
    }
    assert stops[str(plain.pk)]["dropoff_window"] is None
    pickups = [stop for stop in stops.values() if stop["kind"] == "pickup"]
    assert pickups and all(stop["dropoff_window"] is None for stop in pickups)


def test_the_app_says_when_to_hand_over(route):
    courier, _, windowed, plain = route
    app = Client()
    app.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    html = app.get("/courier/").content.decode()
    said = (
        'Hand over between <time datetime="2026-11-23T07:00:00.000Z">14:00</time> and 16:30, '
        "not before"
    )
    assert html.count(said) == 1
    cards = {card.split('"', 1)[0]: card for card in html.split('id="stop-')[1:]}
    assert said in cards[str(windowed.pk)] and "Hand over" not in cards[str(plain.pk)]
