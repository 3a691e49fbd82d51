"""A courier's offer on the API (docs/contract.md §20, §21): see it, accept it (the route),
decline it; a gone offer is 409 OFFER_GONE, another courier's 404; a phone may send twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from couriers.models import Driver
from couriers.services import deactivate_courier, set_online
from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from orders.models import DeliveryEvent, DropStatus
from tests.dispatch.conftest import FAR, NEAR, live_order
from tracking.services import cancel_drops_as_operator


def code_of(response) -> str:
    return response.json()["error"]["code"]


@pytest.fixture
def offered(api, shop, courier_near):
    """An order offered to Dara (nearest), with Sophea online farther away."""
    dara, dara_client = courier_near(NEAR, "Dara Sok")
    sophea, sophea_client = courier_near(FAR, "Sophea Chan")
    order = live_order(api, shop)
    dispatch_waiting()
    offer = Offer.objects.get(order=order)
    assert offer.courier_id == dara.pk
    return order, offer, dara_client, sophea_client


def test_the_offer_is_shown_to_its_courier_only(offered):
    order, offer, dara, sophea = offered
    shown = dara.get("/offer").json()["data"]["offer"]
    [offered] = shown["orders"]
    assert shown["offer_id"] == str(offer.pk) and offered["pass_order_id"] == str(order.pk)
    assert shown["expires_at"].endswith("Z") and len(offered["drops"]) == 2
    assert sophea.get("/offer").json()["data"] == {"offer": None}


def test_accepting_assigns_every_drop_and_answers_the_route_and_again_the_same(offered):
    order, offer, dara, _ = offered
    answer = dara.post(f"/offers/{offer.pk}/accept", {})
    assert answer.status_code == 200, answer.content
    route = answer.json()["data"]["route"]
    assert {s["pass_order_id"] for s in route["stops"]} == {str(order.pk)}
    assert [s["kind"] for s in route["stops"]] == ["pickup", "drop", "drop"]
    assert [s["stop_sequence"] for s in route["stops"][1:]] == [1, 2]
    assert [s["stop_number"] for s in route["stops"]] == [1, 2, 3]
    assert set(order.drops.values_list("status", flat=True)) == {DropStatus.ASSIGNED}
    order.refresh_from_db()
    assert order.driver_id == offer.courier_id
    actors = set(DeliveryEvent.objects.filter(drop__order=order).values_list("actor", flat=True))
    assert actors == {f"courier:{offer.courier_id}"}
    again = dara.post(f"/offers/{offer.pk}/accept", {})  # the phone retries
    assert again.status_code == 200 and again.json()["data"]["route"] == route
    assert DeliveryEvent.objects.filter(drop__order=order).count() == 2  # assigned once each
    assert dara.get("/offer").json()["data"] == {"offer": None}


def test_another_couriers_offer_is_404_and_a_malformed_id_too(offered):
    _, offer, _, sophea = offered
    for path in (f"/offers/{offer.pk}/accept", f"/offers/{offer.pk}/decline", "/offers/x/accept"):
        answer = sophea.post(path, {})
        assert answer.status_code == 404 and code_of(answer) == "NOT_FOUND", path
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.OFFERED


def test_an_expired_or_declined_offer_is_gone(offered, clock):
    _, offer, dara, _ = offered
    clock.move_to(timezone.now() + timedelta(seconds=61))
    answer = dara.post(f"/offers/{offer.pk}/accept", {})
    assert answer.status_code == 409 and code_of(answer) == "OFFER_GONE"
    assert answer.json()["error"]["message"]
    assert set(offer.order.drops.values_list("status", flat=True)) == {DropStatus.PENDING}


def test_a_declined_offer_cannot_be_accepted_and_declining_twice_is_the_same(offered):
    _, offer, dara, _ = offered
    assert dara.post(f"/offers/{offer.pk}/decline", {}).status_code == 200
    again = dara.post(f"/offers/{offer.pk}/decline", {})
    assert again.status_code == 200 and again.json()["data"]["status"] == "declined"
    answer = dara.post(f"/offers/{offer.pk}/accept", {})
    assert answer.status_code == 409 and code_of(answer) == "OFFER_GONE"


def test_an_offer_whose_drops_were_cancelled_is_hidden_and_gone(offered):
    order, offer, dara, _ = offered
    cancel_drops_as_operator(drop_ids=list(order.drops.values_list("pk", flat=True)), actor="op")
    assert dara.get("/offer").json()["data"] == {"offer": None}
    answer = dara.post(f"/offers/{offer.pk}/accept", {})
    assert answer.status_code == 409 and code_of(answer) == "OFFER_GONE"
    order.refresh_from_db()
    assert order.driver_id is None


def test_going_offline_declines_the_open_offer(offered):
    _, offer, dara, _ = offered
    assert dara.post("/status", {"online": False}).status_code == 200
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.DECLINED


def test_going_offline_is_one_service_whoever_calls_it(offered):
    _, offer, _, _ = offered
    assert set_online(courier=offer.courier, online=False) is False
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.DECLINED


def test_deactivating_a_courier_declines_their_open_offer(offered):
    _, offer, _, _ = offered
    deactivate_courier(courier=offer.courier)
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.DECLINED
    assert not Driver.objects.get(pk=offer.courier_id).online


def test_business_keys_are_401_on_offers(offered, api, shop):
    _, offer, _, _ = offered
    answer = api.get("/courier/offer", shop.live_key)
    assert answer.status_code == 401
    answer = api.post(f"/courier/offers/{offer.pk}/accept", {}, shop.live_key)
    assert answer.status_code == 401
