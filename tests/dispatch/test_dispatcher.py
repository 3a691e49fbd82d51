"""The dispatcher (docs/contract.md §21): who is offered a waiting live order, and what
happens when they say no, say nothing, or nobody can take it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from orders.models import Drop, DropStatus
from tests.dispatch.conftest import FAR, NEAR, OUT_OF_REACH, live_order, online_at
from tests.factories import drop
from tracking.services import cancel_drops_as_operator, move_drops_as_operator


def offers_of(order) -> list[tuple[int, str]]:
    return list(
        order.offers.order_by("created_at", "courier_id").values_list("courier_id", "status")
    )


def test_a_waiting_order_is_offered_to_the_nearest_eligible_courier(api, shop, courier_near):
    far, _ = courier_near(FAR, "Far Away")
    near, _ = courier_near(NEAR, "Close By")
    order = live_order(api, shop)
    run = dispatch_waiting()
    assert run.waiting == 1 and len(run.offers) == 1
    [offer] = Offer.objects.filter(order=order)
    assert offer.courier_id == near.pk and offer.status == OfferStatus.OFFERED
    seconds = (offer.expires_at - offer.created_at).total_seconds()
    assert seconds == 60  # OFFER_SECONDS
    assert far.offers.count() == 0
    # Offered once: the next run leaves it with its courier.
    assert dispatch_waiting().offers == []


def test_only_online_active_real_couriers_of_the_vehicle_with_a_fresh_position_qualify(
    api, shop, courier_near, make_courier
):
    from couriers.models import Driver
    from tracking.services import sandbox_test_driver

    stale, _ = courier_near(NEAR, "Stale")
    online_at(stale, NEAR, at=timezone.now() - timedelta(minutes=6))
    from couriers.models import CourierPosition

    CourierPosition.objects.filter(courier=stale).update(at=timezone.now() - timedelta(minutes=6))
    offline, _ = courier_near(NEAR, "Offline")
    Driver.objects.filter(pk=offline.pk).update(online=False)
    inactive, _ = courier_near(NEAR, "Inactive")
    Driver.objects.filter(pk=inactive.pk).update(active=False)
    car, _ = courier_near(NEAR, "Car", vehicle="car")
    courier_near(OUT_OF_REACH, "Too Far")
    test_driver = sandbox_test_driver()
    online_at(test_driver, NEAR)
    order = live_order(api, shop)  # a motorbike order
    assert dispatch_waiting().offers == []
    assert Offer.objects.count() == 0
    rider, _ = courier_near(FAR, "Rider")
    dispatch_waiting()
    assert offers_of(order) == [(rider.pk, OfferStatus.OFFERED)]
    assert car.offers.count() == 0


def test_a_courier_holding_a_route_or_an_offer_is_not_offered_another(api, shop, courier_near):
    busy, _ = courier_near(NEAR, "Busy")
    first = live_order(api, shop)
    dispatch_waiting()
    assert offers_of(first) == [(busy.pk, OfferStatus.OFFERED)]
    second = live_order(api, shop)
    assert dispatch_waiting().offers == []  # busy holds an offer
    Offer.objects.filter(order=first).update(status=OfferStatus.WITHDRAWN)
    ids = list(first.drops.values_list("pk", flat=True))
    move_drops_as_operator(drop_ids=ids, to=DropStatus.ASSIGNED, actor="op", driver=busy)
    assert dispatch_waiting().offers == []  # busy holds a route
    free, _ = courier_near(FAR, "Free")
    dispatch_waiting()
    assert offers_of(second) == [(free.pk, OfferStatus.OFFERED)]


def test_a_decline_or_an_expiry_passes_the_order_on_never_twice_to_one_courier(
    api, shop, courier_near
):
    first, first_client = courier_near(NEAR, "First")
    second, _ = courier_near(FAR, "Second")
    order = live_order(api, shop)
    dispatch_waiting()
    [offer] = Offer.objects.filter(order=order)
    answer = first_client.post(f"/offers/{offer.pk}/decline", {})
    assert answer.status_code == 200 and answer.json()["data"]["status"] == "declined"
    dispatch_waiting()
    assert offers_of(order) == [(first.pk, "declined"), (second.pk, "offered")]
    # The second says nothing: the offer expires, and nobody is left who was not asked.
    later = timezone.now() + timedelta(seconds=61)
    run = dispatch_waiting(now=later)
    assert run.expired == 1 and run.offers == []
    assert offers_of(order) == [(first.pk, "declined"), (second.pk, "expired")]
    third, _ = courier_near(FAR, "Third")
    dispatch_waiting(now=later)
    assert offers_of(order)[-1] == (third.pk, "offered")


def test_an_order_nobody_accepts_within_ten_minutes_is_flagged_once(api, shop, courier_near):
    order = live_order(api, shop)
    assert dispatch_waiting().flagged == 0
    later = timezone.now() + timedelta(minutes=10, seconds=1)
    assert dispatch_waiting(now=later).flagged == 1
    order.refresh_from_db()
    assert order.dispatch_flagged_at == later
    assert dispatch_waiting(now=later + timedelta(minutes=1)).flagged == 0


def test_an_order_with_every_drop_cancelled_leaves_the_queue(api, shop, courier_near):
    order = live_order(api, shop)
    cancel_drops_as_operator(drop_ids=list(order.drops.values_list("pk", flat=True)), actor="op")
    run = dispatch_waiting()
    assert run.closed == 1 and run.waiting == 0
    order.refresh_from_db()
    assert order.dispatch_closed


def test_drops_are_sequenced_before_the_offer_and_the_offer_shows_them(api, shop, courier_near):
    _, client = courier_near(NEAR)
    # The farther drop first in the batch: stop order puts the nearer one first.
    far = drop("FAR", lat=11.60, long=104.93)
    near = drop("NEAR", lat=11.565, long=104.93)
    order = live_order(api, shop, far, near)
    dispatch_waiting()
    sequence = dict(order.drops.values_list("client_order_id", "stop_sequence"))
    assert sequence == {"NEAR": 1, "FAR": 2}
    km = dict(order.drops.values_list("client_order_id", "route_km"))
    assert 0 < km["NEAR"] < km["FAR"]
    offer = client.get("/offer").json()["data"]["offer"]
    [offered] = offer["orders"]
    assert [d["stop_sequence"] for d in offered["drops"]] == [1, 2]
    in_order = [str(order.drops.get(client_order_id=c).pk) for c in ("NEAR", "FAR")]
    assert [d["drop_id"] for d in offered["drops"]] == in_order
    assert offered["vehicle"] == "motorbike" and offered["pickup"]["name"]
    # The run it makes: the pickup, then the drops in stop order.
    assert [(s["kind"], s["drop_id"]) for s in offer["stops"]] == [
        ("pickup", None),
        *[("drop", drop_id) for drop_id in in_order],
    ]


def test_sandbox_orders_are_never_dispatched(api, shop, courier_near):
    courier_near(NEAR)
    from tests.factories import batch, group

    assert api.bulk(batch(group(drop())), shop.sandbox_key).status_code == 200
    assert dispatch_waiting().waiting == 0
    assert Drop.objects.filter(environment="sandbox").count() == 1


def test_a_run_makes_as_many_queries_for_many_orders_and_couriers_as_for_few(
    api, shop, courier_near
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from dispatch.models import Offer

    def queries_of_a_run(orders: int, couriers: int) -> int:
        Offer.objects.all().delete()
        for i in range(couriers):
            courier_near((NEAR[0] + i * 0.002, NEAR[1]), f"C{orders}-{i}")
        for _ in range(orders):
            live_order(api, shop)
        with CaptureQueriesContext(connection) as run:
            made = dispatch_waiting().offers
        assert len(made) == Offer.objects.count() >= couriers
        return len(run.captured_queries)

    few = queries_of_a_run(1, 1)
    many = queries_of_a_run(8, 6)
    assert many == few, (few, many)
