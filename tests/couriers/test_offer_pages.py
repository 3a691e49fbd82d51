"""The offer in the courier app's pages, /courier/ (docs/couriers.md, "The offer"): the card
of an online courier (what it adds, the run's stops in order, the minutes, when it expires),
accept (the drops are theirs, the route shows in stop order), decline, an offer gone, another
courier's offer (404), CSRF; all by plain form posts, as without JavaScript."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from couriers.services import set_online
from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from geo.geometry import haversine_km
from orders.models import DropStatus, Order
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.dispatch.conftest import FAR, NEAR, courier_near, live_order, shop  # noqa: F401
from tests.factories import SHOP, drop
from tracking.services import cancel_drops_as_operator

GONE = "This offer is gone: it expired or was taken."
# Three drops around the shop, so that stop order and distances mean something.
PLACES = [(11.5700, 104.9200), (11.5450, 104.9350), (11.5600, 104.9100)]


def signed_in(courier) -> Client:
    client = Client()
    answer = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert answer.status_code == 302
    return client


@pytest.fixture
def offered(api, shop, courier_near):  # noqa: F811 (the fixtures imported above)
    """Dara (near) is offered an order of three drops; Sophea is online farther away."""
    dara, _ = courier_near(NEAR, "Dara Sok")
    sophea, _ = courier_near(FAR, "Sophea Chan")
    drops = [drop(f"O-{n}", lat=lat, long=long) for n, (lat, long) in enumerate(PLACES)]
    order = live_order(api, shop, *drops)
    dispatch_waiting()
    offer = Offer.objects.get(order=order, status=OfferStatus.OFFERED)
    assert offer.courier_id == dara.pk
    return order, offer, dara, sophea


def card_of(html: str) -> str:
    found = re.search(r"<div data-offer .*?</div>", html, re.S)
    return found.group(0) if found else ""


def test_the_card_shows_the_pickup_the_stops_in_order_and_the_expiry(offered):
    order, offer, dara, _ = offered
    html = signed_in(dara).get("/courier/").content.decode()
    card = card_of(html)
    assert "<strong>Pickup · Shop</strong> · 3 drops" in card
    assert f"{SHOP['lat']},{SHOP['long']}" in card  # no address: where it is
    expires = timezone.localtime(offer.expires_at).strftime("%H:%M:%S")
    assert "Expires at <time datetime=" in card and f">{expires}</time>" in card
    left = int(re.search(r'data-seconds-left="(\d+)"', card).group(1))
    assert 50 <= left <= 60
    # The run in stop order, each stop with its distance from the one before, pickup first;
    # nothing marked new (the courier has no run: it is all new). One order at a time from
    # the dispatcher: no minutes said.
    here, expected = (SHOP["lat"], SHOP["long"]), ["Stop 1 · Pickup · Shop"]
    for number, one in enumerate(order.drops.order_by("stop_sequence"), start=2):
        km = haversine_km(*here, one.lat, one.long)
        expected.append(f"Stop {number} · Drop for Shop · {km:.1f} km from stop {number - 1}")
        here = (one.lat, one.long)
    assert re.findall(r"<li>(.*?)</li>", card.split('class="offer-stops"')[1]) == expected
    assert 'class="new"' not in card and " min</strong>" not in card
    assert f'action="/courier/offers/{offer.pk}/accept"' in card
    assert f'action="/courier/offers/{offer.pk}/decline"' in html
    assert html.count('name="csrfmiddlewaretoken"') >= 3  # accept, decline, and the others
    assert re.search(r"data-no-offer hidden>No job offered", html)
    assert "data-wants-offer" not in html  # nothing to poll for while one shows


def test_the_card_says_the_minutes_an_offer_adds(offered):
    order, offer, dara, _ = offered
    Offer.objects.filter(pk=offer.pk).update(extra_seconds=12 * 60 + 5)

    card = card_of(signed_in(dara).get("/courier/").content.decode())

    assert "<strong>+13 min</strong> to your day" in card  # a started minute counts


def test_the_card_reads_the_pickups_address_as_text(offered):
    order, _, dara, _ = offered
    Order.objects.filter(pk=order.pk).update(
        pickup_address={"complete_address": "St 271, Toul Kork", "city": "Phnom Penh"}
    )

    card = card_of(signed_in(dara).get("/courier/").content.decode())

    assert '<p class="address">St 271, Toul Kork</p>' in card
    assert "complete_address" not in card


def test_no_card_offline_or_without_an_offer(offered, api, shop):  # noqa: F811
    order, offer, dara, sophea = offered
    waiting = signed_in(sophea).get("/courier/").content.decode()
    assert card_of(waiting) == "" and 'data-wants-offer="true"' in waiting
    assert re.search(r"data-no-offer>No job offered", waiting)
    # Offline (which declined the offer): no card, and no polling.
    set_online(courier=dara, online=False)
    offline = signed_in(dara).get("/courier/").content.decode()
    assert card_of(offline) == "" and "data-wants-offer" not in offline
    # Online again on a route, no offer: the route, no card, and the page asks for one (the
    # planner adds to runs).
    set_online(courier=dara, online=True)
    assigned_drops(api, shop, dara)
    on_route = signed_in(dara).get("/courier/").content.decode()
    assert card_of(on_route) == "" and 'data-wants-offer="true"' in on_route
    assert 'id="route"' in on_route


def test_accepting_assigns_the_drops_and_shows_the_route_in_stop_order(offered):
    order, offer, dara, _ = offered
    client = signed_in(dara)
    answer = client.post(f"/courier/offers/{offer.pk}/accept")
    assert answer.status_code == 302 and answer["Location"] == "/courier/#route"
    assert set(order.drops.values_list("status", flat=True)) == {DropStatus.ASSIGNED}
    order.refresh_from_db()
    assert order.driver_id == dara.pk
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.ACCEPTED
    html = client.get("/courier/").content.decode()
    assert card_of(html) == "" and 'id="route"' in html
    shown = re.findall(r'id="stop-([0-9a-f-]{36})"', html)
    assert shown == [
        str(pk) for pk in order.drops.order_by("stop_sequence").values_list("pk", flat=True)
    ]
    assert "<h2>Stop 1 · Pickup · Shop</h2>" in html  # then the drops, numbered on
    assert [f"<h2>Stop {n} · " in html for n in (2, 3, 4)] == [True, True, True]
    # The phone posts again (a double tap): the same answer, nothing more.
    assert client.post(f"/courier/offers/{offer.pk}/accept").status_code == 302


def test_declining_asks_nothing_and_the_next_courier_gets_it(offered):
    order, offer, dara, sophea = offered
    client = signed_in(dara)
    answer = client.post(f"/courier/offers/{offer.pk}/decline")
    assert answer.status_code == 302 and answer["Location"] == "/courier/"
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.DECLINED
    html = client.get("/courier/").content.decode()
    assert card_of(html) == "" and 'data-wants-offer="true"' in html
    assert set(order.drops.values_list("status", flat=True)) == {DropStatus.PENDING}
    dispatch_waiting()
    assert Offer.objects.get(order=order, status=OfferStatus.OFFERED).courier_id == sophea.pk


@pytest.mark.parametrize("how", ["expired", "declined", "cancelled"])
def test_an_offer_gone_says_so_and_the_page_has_no_card(offered, clock, how):
    order, offer, dara, _ = offered
    client = signed_in(dara)
    if how == "expired":
        clock.move_to(timezone.now() + timedelta(seconds=61))
    elif how == "declined":
        client.post(f"/courier/offers/{offer.pk}/decline")
    else:
        cancel_drops_as_operator(
            drop_ids=list(order.drops.values_list("pk", flat=True)), actor="op"
        )
    answer = client.post(f"/courier/offers/{offer.pk}/accept")
    html = answer.content.decode()
    assert answer.status_code == 409
    assert re.search(rf'<p class="notice" id="notice" role="status">{GONE}</p>', html)
    assert card_of(html) == "" and "/accept" not in html
    assert order.drops.filter(status=DropStatus.ASSIGNED).count() == 0
    order.refresh_from_db()
    assert order.driver_id is None


def test_someone_elses_offer_is_404_and_nothing_changes(offered):
    order, offer, _, sophea = offered
    client = signed_in(sophea)
    paths = [f"/courier/offers/{offer.pk}/{answer}" for answer in ("accept", "decline")]
    paths += [f"/courier/offers/{uuid.uuid4()}/accept", "/courier/offers/nope/accept"]
    for path in paths:
        assert client.post(path).status_code == 404, path
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.OFFERED
    assert set(order.drops.values_list("status", flat=True)) == {DropStatus.PENDING}


def test_answering_takes_the_csrf_token_and_a_session(offered):
    order, offer, dara, _ = offered
    client = Client(enforce_csrf_checks=True)
    client.cookies = signed_in(dara).cookies  # the session; this client checks CSRF
    assert client.post(f"/courier/offers/{offer.pk}/accept").status_code == 403
    assert client.post(f"/courier/offers/{offer.pk}/decline").status_code == 403
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.OFFERED
    # Signed out: back to the sign-in page, nothing answered.
    stranger = Client().post(f"/courier/offers/{offer.pk}/accept")
    assert stranger.status_code == 302 and stranger["Location"] == "/courier/"
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.OFFERED
    # With the page's own token, the same post is taken.
    html = client.get("/courier/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    answer = client.post(f"/courier/offers/{offer.pk}/accept", {"csrfmiddlewaretoken": token})
    assert answer.status_code == 302
    assert set(order.drops.values_list("status", flat=True)) == {DropStatus.ASSIGNED}


def test_going_offline_by_the_page_declines_the_open_offer(offered):
    _, offer, dara, _ = offered
    client = signed_in(dara)
    assert client.post("/courier/status", {"online": "false"}).status_code == 302
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.DECLINED
