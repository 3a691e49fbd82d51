"""Stop order on the wire (docs/contract.md §21): each tracking entry's stop_sequence, the
ETA along the route, renumbering after a cancel or an edit before pickup, the courier's
route in that order."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer
from tests.dispatch.conftest import NEAR, live_order
from tests.factories import drop
from tests.tracking.test_edits import edited, patch
from tracking.services import cancel_drops_as_operator

# From the test shop northward: the batch lists them far first.
FAR = drop("FAR", lat=11.600, long=104.930)
MID = drop("MID", lat=11.580, long=104.930)
NEAR_DROP = drop("NEAR", lat=11.565, long=104.930)


def entries(api, shop) -> dict[str, dict]:
    answer = api.track(["FAR", "MID", "NEAR"], shop.live_key)
    assert answer.status_code == 200, answer.content
    return {e["client_order_id"]: e for e in answer.json()["data"]["orders"]}


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_entries_carry_the_stop_sequence_and_the_eta_counts_the_stops_before(
    api, shop, courier_near
):
    courier_near(NEAR)
    order = live_order(api, shop, FAR, MID, NEAR_DROP)
    before = entries(api, shop)
    assert {e["stop_sequence"] for e in before.values()} == {None}
    dispatch_waiting()
    after = entries(api, shop)
    assert {c: e["stop_sequence"] for c, e in after.items()} == {"NEAR": 1, "MID": 2, "FAR": 3}
    km = dict(order.drops.values_list("client_order_id", "route_km"))
    handling = timedelta(minutes=settings.HANDLING_MINUTES)
    speed = settings.COURIER_SPEED_KMH
    # Between two consecutive stops: the ride between them and the handling of the earlier.
    for earlier, later in (("NEAR", "MID"), ("MID", "FAR")):
        gap = moment(after[later]["eta"]["dropoff_at"]) - moment(
            after[earlier]["eta"]["dropoff_at"]
        )
        expected = timedelta(hours=(km[later] - km[earlier]) / speed) + handling
        assert abs(gap - expected) < timedelta(milliseconds=2), (earlier, later, gap, expected)
    # The last stop is later than its straight-line ETA before it was sequenced.
    assert after["FAR"]["eta"]["dropoff_at"] > before["FAR"]["eta"]["dropoff_at"]


def test_a_cancel_before_pickup_renumbers_the_route(api, shop, courier_near):
    courier_near(NEAR)
    order = live_order(api, shop, FAR, MID, NEAR_DROP)
    dispatch_waiting()
    cancel_drops_as_operator(drop_ids=[order.drops.get(client_order_id="NEAR").pk], actor="op")
    after = entries(api, shop)
    assert {c: e["stop_sequence"] for c, e in after.items()} == {
        "NEAR": None,
        "MID": 1,
        "FAR": 2,
    }


def test_an_edit_that_moves_a_drop_before_pickup_renumbers_the_route(api, shop, courier_near):
    courier_near(NEAR)
    order = live_order(api, shop, FAR, MID, NEAR_DROP)
    dispatch_waiting()
    Offer.objects.all().delete()  # the edit comes while the order still waits
    far = order.drops.get(client_order_id="FAR")
    body = {"dropoff": {"lat": 11.560, "long": 104.929}}  # next door to the shop now
    entry = edited(patch(api, far.pk, body, shop.live_key))
    assert entry["stop_sequence"] == 1
    after = entries(api, shop)
    assert {c: e["stop_sequence"] for c, e in after.items()} == {"FAR": 1, "NEAR": 2, "MID": 3}


def test_the_courier_route_follows_the_stop_order(api, shop, courier_near):
    _, client = courier_near(NEAR)
    live_order(api, shop, FAR, MID, NEAR_DROP)
    dispatch_waiting()
    offer = client.get("/offer").json()["data"]["offer"]
    route = client.post(f"/offers/{offer['offer_id']}/accept", {}).json()["data"]["route"]
    drops = [s for s in route["stops"] if s["kind"] == "drop"]
    assert route["stops"][0]["kind"] == "pickup"
    assert [s["client_order_id"] for s in drops] == ["NEAR", "MID", "FAR"]
    assert [s["stop_sequence"] for s in drops] == [1, 2, 3]


def test_a_group_larger_than_a_round_keeps_no_stop_order(api, shop, courier_near):
    from orders.stops import MAX_ROUTE_DROPS

    courier_near(NEAR)
    many = [drop(f"M-{i}", lat=11.56 + i * 0.001, long=104.93) for i in range(MAX_ROUTE_DROPS + 1)]
    order = live_order(api, shop, *many)
    run = dispatch_waiting()
    assert len(run.offers) == 1  # offered all the same
    assert set(order.drops.values_list("stop_sequence", flat=True)) == {None}
    order.drops.filter(client_order_id="M-0").update(status="CANCELLED")
    from django.utils import timezone

    from orders.stops import sequence_orders

    assert sequence_orders([order.pk], now=timezone.now()) == MAX_ROUTE_DROPS + 1
