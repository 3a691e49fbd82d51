"""A courier's run in the courier API and the app's pages (docs/contract.md §21, docs/couriers.md
"Your run"): the orders of two businesses on one run, their pickups and drops in the order to
ride; a stop's number its place in the run, in a move's answer too; a pickup done once its
parcels are taken; an offer to a courier who already has a run, with the stops it adds marked
and the minutes it adds."""

from __future__ import annotations

import math
import re

import pytest
from django.test import Client

from dispatch.models import Offer, OfferStatus
from dispatch.offers import accept_offer
from dispatch.planner import plan_runs
from orders.models import Order
from tests.couriers.conftest import PASSWORD
from tests.dispatch.conftest import NEAR, courier_near, live_order, shop  # noqa: F401
from tests.factories import SHOP, drop

# Two shops 300 m apart, their drops a few hundred metres north.
NEXT_SHOP = (SHOP["lat"] + 0.0027, SHOP["long"])


def near_drop(ref: str, north: float = 0.004, **recipient) -> dict:
    """A drop `north` degrees north of the shop, its recipient's fields as given."""
    return drop(ref, lat=SHOP["lat"] + north, long=SHOP["long"] + 0.003, **recipient)


def shop_order(api, tenant, shop_name: str, *drops_in, at=(SHOP["lat"], SHOP["long"])) -> Order:
    """A live order of the tenant, picked up at `shop_name` (at `at`), waiting for a courier."""
    order = live_order(api, tenant, *drops_in)
    Order.objects.filter(pk=order.pk).update(
        pickup_name=shop_name,
        pickup_lat=at[0],
        pickup_long=at[1],
        pickup_address={"complete_address": f"{shop_name}, St 51, Phnom Penh"},
    )
    return Order.objects.get(pk=order.pk)


def lead_of(courier) -> Offer:
    return Offer.objects.get(courier=courier, status=OfferStatus.OFFERED, lead=True)


def signed_in(courier) -> Client:
    client = Client()
    answer = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert answer.status_code == 302
    return client


def planned_and_accepted(courier) -> Offer:
    plan_runs()
    lead = lead_of(courier)
    accept_offer(courier=courier, offer_id=lead.bundle)
    return lead


@pytest.fixture
def two_shops_run(api, shop, make_tenant, courier_near):  # noqa: F811 (fixtures imported above)
    """Dara carries a run of two orders of two businesses: Lotus Bakery's (two drops) and
    Next Door Shop's (one drop), in the planner's order."""
    other = make_tenant(name="Next Door Shop", live_balance="500.00")
    courier, client = courier_near(NEAR, "Dara Sok")
    bakery = shop_order(
        api, shop, "Lotus Bakery",
        near_drop("L-1", name="Sreyneang Phan"), near_drop("L-2", 0.006, name="Kosal Meas"),
    )  # fmt: skip
    next_door = shop_order(
        api, other, "Next Door Shop", near_drop("N-1", 0.005, name="Vanna Kim"), at=NEXT_SHOP
    )
    lead = planned_and_accepted(courier)
    assert {row.order_id for row in Offer.objects.filter(bundle=lead.bundle)} == {
        bakery.pk,
        next_door.pk,
    }
    return courier, client, bakery, next_door, lead


def stop_keys(stops: list[dict]) -> list[tuple]:
    return [(s["kind"], s["pass_order_id"], s["drop_id"]) for s in stops]


def test_a_run_of_two_businesses_orders_is_one_route_in_the_order_to_ride(two_shops_run):
    courier, client, bakery, next_door, lead = two_shops_run

    route = client.get("/route").json()["data"]["route"]

    stops = route["stops"]
    assert stop_keys(stops) == stop_keys(lead.stops)  # the order the courier accepted
    assert [s["stop_number"] for s in stops] == list(range(1, len(stops) + 1)) == [1, 2, 3, 4, 5]
    pickups = {s["pass_order_id"]: s for s in stops if s["kind"] == "pickup"}
    assert pickups[str(bakery.pk)]["name"] == "Lotus Bakery"
    assert pickups[str(next_door.pk)]["name"] == "Next Door Shop"
    assert pickups[str(next_door.pk)]["address"] == "Next Door Shop, St 51, Phnom Penh"
    assert pickups[str(next_door.pk)]["drop_id"] is None and not pickups[str(bakery.pk)]["done"]
    for order in (bakery, next_door):  # each order's pickup comes before its drops
        first_drop = min(s["stop_number"] for s in stops if s["drop_id"] and
                         s["pass_order_id"] == str(order.pk))  # fmt: skip
        assert pickups[str(order.pk)]["stop_number"] < first_drop
    names = {s["client_order_id"]: s["name"] for s in stops if s["kind"] == "drop"}
    assert names == {"L-1": "Sreyneang", "L-2": "Kosal", "N-1": "Vanna"}
    assert route["run_id"] == str(Order.objects.get(pk=bakery.pk).run_id)


def test_the_page_shows_the_run_pickups_and_drops_in_the_order_to_ride(two_shops_run):
    courier, client, bakery, next_door, lead = two_shops_run
    stops = client.get("/route").json()["data"]["route"]["stops"]

    html = signed_in(courier).get("/courier/").content.decode()

    ids = re.findall(r'<li class="card stop[^"]*" id="((?:pickup|stop)-[0-9a-f-]{36})"', html)
    assert ids == [
        f"pickup-{s['pass_order_id']}" if s["kind"] == "pickup" else f"stop-{s['drop_id']}"
        for s in stops
    ]
    headings = re.findall(r"<h2>(Stop \d+ · [^<]*)</h2>", html)
    expected = []
    for s in stops:
        what = f"Pickup · {s['name']}" if s["kind"] == "pickup" else s["name"]
        expected.append(f"Stop {s['stop_number']} · {what}")
    assert headings == expected
    assert '<p class="address">Next Door Shop, St 51, Phnom Penh</p>' in html
    # At each pickup: what to take there (its order's parcels), a call and the ways to ride.
    bakery_pickup = _part(html, f"pickup-{bakery.pk}")
    to_take = [s["client_order_id"] for s in stops if s["drop_id"] and
               s["pass_order_id"] == str(bakery.pk)]  # fmt: skip
    assert sorted(to_take) == ["L-1", "L-2"]
    assert f"Take 2 parcels: <strong>{', '.join(to_take)}</strong>" in bakery_pickup
    assert "N-1" not in bakery_pickup
    assert 'href="tel:+85512345678">Call the shop</a>' in bakery_pickup
    assert f"geo:{SHOP['lat']},{SHOP['long']}" in bakery_pickup
    assert "Take 1 parcel: <strong>N-1</strong>" in _part(html, f"pickup-{next_door.pk}")
    assert 'value="PICKED_UP"' not in bakery_pickup  # the move stays on each drop


def test_a_pickup_is_shown_done_once_its_parcels_are_picked_up(two_shops_run):
    courier, client, bakery, next_door, _ = two_shops_run
    for one in bakery.drops.all():
        assert client.move(one.pk, to="PICKED_UP").status_code == 200

    html = signed_in(courier).get("/courier/").content.decode()
    route = client.get("/route").json()["data"]["route"]

    done = _part(html, f"pickup-{bakery.pk}")
    assert re.search(rf'<li class="card stop pickup done" id="pickup-{bakery.pk}"', html)
    assert "Picked up" in done and "Take " not in done
    assert "Navigate" not in done and "tel:" not in done
    assert "Take 1 parcel: <strong>N-1</strong>" in _part(html, f"pickup-{next_door.pk}")
    pickups = {s["pass_order_id"]: s for s in route["stops"] if s["kind"] == "pickup"}
    assert pickups[str(bakery.pk)]["done"] and pickups[str(bakery.pk)]["status"] == "PICKED_UP"
    assert not pickups[str(next_door.pk)]["done"]


def test_a_done_pickup_keeps_its_way_there_while_a_parcel_goes_back_to_it(two_shops_run):
    courier, client, bakery, next_door, _ = two_shops_run
    failed, other = sorted(bakery.drops.all(), key=lambda d: d.client_order_id)
    for one in (failed, other):
        assert client.move(one.pk, to="PICKED_UP").status_code == 200
    assert client.move(failed.pk, to="FAILED", reason="REFUSED").status_code == 200

    html = signed_in(courier).get("/courier/").content.decode()

    pickup = _part(html, f"pickup-{bakery.pk}")
    assert re.search(rf'<li class="card stop pickup" id="pickup-{bakery.pk}"', html)  # not grey
    assert "Picked up" in pickup and "Take " not in pickup
    assert "Bring back 1 parcel: <strong>L-1</strong>" in pickup
    assert "Navigate" in pickup and f"geo:{SHOP['lat']},{SHOP['long']}" in pickup
    assert 'value="RETURNING"' in _part(html, f"stop-{failed.pk}")


def test_a_moves_answer_numbers_the_stop_by_its_place_in_the_run(two_shops_run):
    courier, client, bakery, next_door, _ = two_shops_run
    (last,) = next_door.drops.all()
    stops = client.get("/route").json()["data"]["route"]["stops"]
    place = next(s["stop_number"] for s in stops if s["drop_id"] == str(last.pk))

    answer = client.move(last.pk, to="PICKED_UP")

    assert answer.status_code == 200, answer.content
    stop = answer.json()["data"]["stop"]
    assert (
        stop["stop_number"]
        == place
        == stop_keys(stops).index(("drop", str(next_door.pk), str(last.pk))) + 1
    )
    assert stop["stop_sequence"] == 1  # its place among its own order's drops, as in tracking
    html = signed_in(courier).get("/courier/").content.decode()
    assert f"<h2>Stop {place} · Vanna</h2>" in _part(html, f"stop-{last.pk}")


@pytest.fixture
def offered_more(api, shop, make_tenant, courier_near):  # noqa: F811
    """Dara carries Lotus Bakery's order; the planner offers her Next Door Shop's too."""
    other = make_tenant(name="Next Door Shop", live_balance="500.00")
    courier, client = courier_near(NEAR, "Dara Sok")
    bakery = shop_order(api, shop, "Lotus Bakery", near_drop("L-1", name="Sreyneang Phan"))
    planned_and_accepted(courier)
    next_door = shop_order(
        api, other, "Next Door Shop",
        near_drop("N-1", 0.005), near_drop("N-2", 0.007), at=NEXT_SHOP,
    )  # fmt: skip
    plan_runs()
    lead = lead_of(courier)
    assert lead.order_id == next_door.pk and lead.extra_seconds > 0
    return courier, client, bakery, next_door, lead


def test_an_offer_to_a_courier_with_a_run_says_what_it_adds_in_the_api(offered_more):
    courier, client, bakery, next_door, lead = offered_more

    offer = client.get("/offer").json()["data"]["offer"]

    assert offer["offer_id"] == str(lead.bundle)
    assert [o["pass_order_id"] for o in offer["orders"]] == [str(next_door.pk)]
    assert offer["orders"][0]["pickup"]["name"] == "Next Door Shop"
    assert len(offer["orders"][0]["drops"]) == 2
    assert stop_keys(offer["stops"]) == stop_keys(lead.stops)
    assert {s["pass_order_id"] for s in offer["stops"]} == {str(bakery.pk), str(next_door.pk)}
    assert offer["extra_minutes"] == math.ceil(lead.extra_seconds / 60) > 0


def test_the_card_shows_on_a_run_with_the_added_stops_marked_and_the_minutes(offered_more):
    courier, client, bakery, next_door, lead = offered_more

    html = signed_in(courier).get("/courier/").content.decode()

    card = re.search(r"<div data-offer .*?data-no-offer", html, re.S).group(0)
    assert 'id="route"' in html  # the run, and the offer beside it
    assert re.search(r"Pickup · Next Door Shop</strong> · 2 drops", card)
    assert "Lotus Bakery</strong>" not in card  # what it adds only
    minutes = math.ceil(lead.extra_seconds / 60)
    assert f"<strong>+{minutes} min</strong>" in card
    items = re.findall(r"<li[^>]*>(.*?)</li>", card.split('class="offer-stops"')[1], re.S)
    assert len(items) == len(lead.stops) == 5
    for stop, item in zip(lead.stops, items, strict=True):
        added = stop["pass_order_id"] == str(next_door.pk)
        assert ('class="new"' in item) is added, (stop, item)
        if stop["kind"] == "pickup":
            shop_name = "Next Door Shop" if added else "Lotus Bakery"
            assert f"Pickup · {shop_name}" in item
        elif added:
            assert "Drop for Next Door Shop" in item
        else:
            assert "Sreyneang" in item  # a stop of the run: its recipient, as on the route
    assert f'action="/courier/offers/{lead.bundle}/accept"' in card
    assert "data-wants-offer" not in html


def test_accepting_on_a_run_adds_the_orders_in_the_offered_order(offered_more):
    courier, client, bakery, next_door, lead = offered_more
    phone = signed_in(courier)

    answer = phone.post(f"/courier/offers/{lead.bundle}/accept")

    assert answer.status_code == 302 and answer["Location"] == "/courier/#route"
    route = client.get("/route").json()["data"]["route"]
    assert stop_keys(route["stops"]) == stop_keys(lead.stops)
    html = phone.get("/courier/").content.decode()
    assert f'id="pickup-{next_door.pk}"' in html and f'id="pickup-{bakery.pk}"' in html
    assert "<div data-offer " not in html and 'data-wants-offer="true"' in html


def _part(html: str, element_id: str) -> str:
    """The html of one stop of the route: from its id to the next stop."""
    start = html.index(f'id="{element_id}"')
    end = html.find('<li class="card stop', start)
    return html[start : end if end != -1 else len(html)]
