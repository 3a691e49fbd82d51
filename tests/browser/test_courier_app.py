"""The courier app in a real browser (docs/couriers.md): a 390 × 844
phone with its location granted signs in, goes online (its position lands), sees the route,
picks up and delivers a COD drop and a PIN drop through courier.js and the JSON API, passes
axe and never scrolls sideways; a move made without network waits in the phone and lands
once when the network returns; an offer the dispatcher makes shows with its countdown, is
not answered offline, and accepted shows the route in stop order, or goes away when its time
is up; an offer the planner makes to a courier on a run shows in place, the stops it adds
marked, and accepted puts both shops' pickups on the route. The screenshots of
docs/couriers.md are taken here."""

from __future__ import annotations

import json
import os
import re
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Locator, Page, expect

import couriers.pages
from couriers.models import CourierPoint, CourierPosition
from couriers.services import provision_courier
from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from dispatch.offers import accept_offer
from dispatch.planner import plan_runs
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from orders.runs import run_of
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.dispatch.conftest import live_order, online_at
from tests.factories import SHOP, drop
from tests.reliability.batch_hold import open_all_day
from tracking.proof import MAX_PHOTO_BYTES
from tracking.services import cancel_drops_as_operator, move_drops_as_operator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

S = DropStatus
PHONE = {"width": 390, "height": 844}
WHERE = {"latitude": 11.5564, "longitude": 104.9282}  # Phnom Penh, where the demo region is
DOCS = Path(settings.BASE_DIR) / "docs" / "couriers"
PHOTO = Path(settings.BASE_DIR) / "tracking" / "assets" / "sandbox-proof.png"


@pytest.fixture
def phone(browser, live_server):
    """phone(): a new 390 px phone (its own cookies and storage) that shares its location."""
    contexts = []

    def open_phone(**options) -> Page:
        context = browser.new_context(
            base_url=live_server.url, viewport=PHONE, geolocation=WHERE,
            permissions=["geolocation"], **options,
        )  # fmt: skip
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_phone
    for context in contexts:
        context.close()


@pytest.fixture
def courier(transactional_db):
    return provision_courier(
        name="Dara Sok", phone="+85512340001", vehicle="motorbike", password=PASSWORD
    )


def sign_in(page: Page, courier) -> None:
    page.goto("/courier/")
    page.get_by_label("Phone").fill(courier.phone)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def wait_until(what: str, check: Callable[[], object], seconds: float = 10) -> object:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds} s: {what}")
        time.sleep(0.1)
    return found


def for_docs(page: Page, name: str, screenshot, part: Locator | None = None) -> None:
    """A screenshot for docs/couriers.md (the phone's screen as the courier sees it, the
    status dock at its bottom; or one part of the page), and one of the whole page in the
    run's folder. docs/couriers/ is written only when DOCS_SCREENSHOTS=1 is set, so that a
    test run leaves the repository as it found it."""
    if os.environ.get("DOCS_SCREENSHOTS") != "1":
        screenshot(page, name)
        return
    DOCS.mkdir(parents=True, exist_ok=True)
    if part is None:
        page.screenshot(path=str(DOCS / f"{name}.png"))
    else:
        part.screenshot(path=str(DOCS / f"{name}.png"))
    screenshot(page, name)


def stop_of(page: Page, one: Drop):
    return page.locator(f"#stop-{one.pk}")


def test_a_courier_goes_online_and_delivers_a_cod_drop_and_a_pin_drop(
    make_tenant, api, courier, phone, screenshot
):
    open_all_day()
    shop = make_tenant(name="Lotus Bakery")
    drops = assigned_drops(
        api, shop, courier,
        {**drop("CA-1", name="Sreyneang Phan"), "notes": "Blue gate, second floor",
         "cod": {"amount": "12.50"}},
        {**drop("PI-1", name="Kosal Meas"), "dropoff_verification": {"pin": True}},
    )  # fmt: skip
    cash, pinned = sorted(drops, key=lambda d: d.client_order_id)
    page = phone()
    page.goto("/courier/")
    for_docs(page, "sign-in", screenshot)
    sign_in(page, courier)
    expect(page.get_by_text("No job offered")).to_be_visible()
    expect(stop_of(page, cash).get_by_text("Collect 12.50 USD in cash")).to_be_visible()
    expect(stop_of(page, cash).get_by_role("link", name="Call Sreyneang")).to_have_attribute(
        "href", f"tel:{cash.recipient_phone}"
    )
    assert_fits(page, PHONE["width"])

    page.get_by_role("button", name="Go online").click()
    expect(page.get_by_text("You are online")).to_be_visible()
    position = wait_until(
        "the phone's position stored",
        lambda: CourierPosition.objects.filter(courier=courier).first(),
    )
    assert (position.lat, position.long) == pytest.approx((WHERE["latitude"], WHERE["longitude"]))
    for_docs(page, "route", screenshot)

    for one in (cash, pinned):
        stop_of(page, one).get_by_role("button", name="Picked up").click()
        expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")

    stop = stop_of(page, cash)
    stop.get_by_label("Received by").fill("Sreyneang")
    stop.get_by_role("button", name="Delivered").click()
    expect(stop.get_by_role("alert")).to_have_text(
        "Collect the cash first, then tick “Cash collected”."
    )
    stop.get_by_label("Cash collected: 12.50 USD").check()
    stop.get_by_label("Photo (optional)").set_input_files(str(PHOTO))
    for_docs(page, "deliver", screenshot, part=stop)
    stop.get_by_role("button", name="Delivered").click()
    expect(stop_of(page, cash).locator(".status")).to_have_text("Delivered")
    cash.refresh_from_db()
    assert cash.status == S.DELIVERED and cash.cod_collected_at is not None
    assert cash.pod_photo and cash.pod_received_by == "Sreyneang"

    stop = stop_of(page, pinned)
    wrong = "0000" if pinned.dropoff_pin != "0000" else "1111"
    stop.get_by_label("PIN from the recipient").fill(wrong)
    stop.get_by_role("button", name="Delivered").click()
    expect(stop.get_by_role("alert")).to_have_text("Wrong PIN (1 wrong so far).")
    stop.get_by_label("PIN from the recipient").fill(pinned.dropoff_pin)
    stop.get_by_role("button", name="Delivered").click()
    expect(page.get_by_role("heading", name="No route yet")).to_be_visible()
    assert Drop.objects.get(pk=pinned.pk).status == S.DELIVERED
    assert_fits(page, PHONE["width"])


def test_a_move_made_offline_waits_and_lands_once_when_the_network_returns(
    make_tenant, api, courier, phone, screenshot
):
    open_all_day()
    one, other = assigned_drops(api, make_tenant(name="Lotus Bakery"), courier)
    page = phone()
    sign_in(page, courier)
    page.context.set_offline(True)
    stop_of(page, one).get_by_role("button", name="Picked up").click()
    expect(page.locator("#waiting")).to_have_text("1 move waiting to send")
    expect(stop_of(page, one).get_by_text("Waiting to send: Picked up")).to_be_visible()
    for_docs(page, "waiting", screenshot)
    time.sleep(1)  # nothing leaves the phone while it has no network
    assert Drop.objects.get(pk=one.pk).status == S.ASSIGNED

    page.context.set_offline(False)
    wait_until("the queued move made", lambda: Drop.objects.get(pk=one.pk).status == S.PICKED_UP)
    expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")
    expect(page.locator("#waiting")).to_be_hidden()
    page.reload()  # a page load sends what waits: nothing does any more
    expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")
    time.sleep(0.5)
    assert DeliveryEvent.objects.filter(drop_id=one.pk, status=S.PICKED_UP).count() == 1
    assert Drop.objects.get(pk=other.pk).status == S.ASSIGNED


@pytest.mark.parametrize("screen", ["sign-in", "route"])
def test_the_courier_app_passes_axe_at_390_px(make_tenant, api, courier, phone, screen):
    open_all_day()
    drops = assigned_drops(
        api, make_tenant(name="Lotus Bakery"), courier,
        {**drop("AX-1"), "cod": {"amount": "3.00"}, "dropoff_verification": {"pin": True}},
        drop("AX-2"),
    )  # fmt: skip
    cash = next(d for d in drops if d.client_order_id == "AX-1")
    # axe goes into the page as a script of its own, which the app's CSP rightly refuses.
    page = phone(bypass_csp=True)
    if screen == "sign-in":
        page.goto("/courier/")
    else:
        sign_in(page, courier)
        stop_of(page, cash).get_by_role("button", name="Picked up").click()
        expect(stop_of(page, cash).get_by_label("PIN from the recipient")).to_be_visible()
    assert_accessible(page)
    assert_fits(page, PHONE["width"])


def test_the_online_bar_sits_at_the_foot_of_a_short_page_at_390_px(courier, phone):
    """Under "No route yet" the page is short: the bar with Go online is still where the
    thumb is, at the foot of the screen, not in the middle of it."""
    page = phone()
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, courier)
    expect(page.get_by_role("heading", name="No route yet")).to_be_visible()

    dock = page.get_by_role("contentinfo", name="Status").bounding_box()
    main = page.locator("main").bounding_box()
    scrolls = page.evaluate("document.documentElement.scrollHeight > window.innerHeight")

    assert abs(dock["y"] + dock["height"] - 844) < 1, dock
    assert main["y"] + main["height"] <= dock["y"] + 1  # nothing hidden under it
    assert not scrolls  # the short page fits: the bar is not pushed below the screen
    assert_fits(page, 390)


def test_positions_taken_offline_wait_and_go_in_batches_when_the_network_returns(
    courier, phone, monkeypatch, settings
):
    # One point a second, at most two a request: the same queue as 15 s and 100, sooner.
    monkeypatch.setattr(couriers.pages, "POSITION_SECONDS", 1)
    settings.MAX_COURIER_POINTS = 2
    page = phone()
    sign_in(page, courier)
    page.get_by_role("button", name="Go online").click()
    expect(page.get_by_text("You are online")).to_be_visible()
    wait_until("the first position", lambda: CourierPosition.objects.filter(courier=courier))
    page.context.set_offline(True)
    expect(page.locator("#waiting")).to_have_text(re.compile(r"^[5-9] positions waiting"))
    sent = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/courier/location") else None)
    page.context.set_offline(False)
    expect(page.locator("#waiting")).to_be_hidden()
    # Every point waiting went, two at a time at most, and each was stored once.
    bodies = [json.loads(r.post_data)["points"] for r in sent]
    assert len(bodies) >= 3 and all(1 <= len(points) <= 2 for points in bodies)
    stored = CourierPoint.objects.filter(courier=courier)
    assert stored.count() == stored.values("at").distinct().count() >= 6


def noise_png(width: int, height: int) -> bytes:
    """A PNG of random pixels: it does not compress, so it is as big as a camera's photo."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")
    )  # fmt: skip


def test_a_camera_photo_over_5_mb_is_made_smaller_and_kept(
    make_tenant, api, courier, phone, tmp_path
):
    open_all_day()
    (one,) = assigned_drops(api, make_tenant(name="Lotus Bakery"), courier, drop("PH-1"))
    photo = tmp_path / "camera.png"
    photo.write_bytes(noise_png(2000, 1500))
    assert photo.stat().st_size > MAX_PHOTO_BYTES  # the API would refuse it as it is
    page = phone()
    sign_in(page, courier)
    stop_of(page, one).get_by_role("button", name="Picked up").click()
    stop = stop_of(page, one)
    stop.get_by_label("Photo (optional)").set_input_files(str(photo))
    stop.get_by_role("button", name="Delivered").click()
    expect(page.get_by_role("heading", name="No route yet")).to_be_visible()
    one.refresh_from_db()
    assert one.status == S.DELIVERED and one.pod_photo.name.endswith(".jpg")
    assert one.pod_photo.size < MAX_PHOTO_BYTES / 2


def online_with_a_position(page: Page, courier) -> None:
    page.get_by_role("button", name="Go online").click()
    expect(page.get_by_text("You are online")).to_be_visible()
    wait_until("the phone's position", lambda: CourierPosition.objects.filter(courier=courier))


def test_an_offer_comes_counts_down_and_accepting_shows_the_route_in_stop_order(
    make_tenant, api, courier, phone, screenshot, monkeypatch
):
    open_all_day()
    monkeypatch.setattr(couriers.pages, "OFFER_POLL_SECONDS", 1)  # 10 s in use: sooner
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    page = phone()
    sign_in(page, courier)
    online_with_a_position(page, courier)
    expect(page.get_by_text("One shows here as soon as it comes")).to_be_visible()
    places = [(11.5700, 104.9200), (11.5450, 104.9350), (11.5600, 104.9100)]
    order = live_order(
        api, shop, *[drop(f"OF-{n}", lat=lat, long=long) for n, (lat, long) in enumerate(places)]
    )
    assert len(dispatch_waiting().offers) == 1  # to this courier: the only one online
    offer = Offer.objects.get(order=order, courier=courier)

    card = page.locator("#offer")  # the page asks every second and shows it: no tap
    expect(card.get_by_role("button", name="Accept")).to_be_visible()
    expect(card.get_by_role("timer")).to_have_text(re.compile(r"^Expires in 0:[0-5]\d \(at "))
    expect(card.locator(".offer-pickup")).to_have_text("Pickup · Shop · 3 drops")
    expect(card.locator(".offer-stops li")).to_have_count(4)  # the pickup, then its drops
    expect(card.locator(".offer-stops li").first).to_have_text("Stop 1 · Pickup · Shop")
    expect(card.locator(".offer-stops li").nth(1)).to_have_text(
        re.compile(r"^Stop 2 · Drop for Shop · \d+\.\d km from stop 1$")
    )
    assert_fits(page, PHONE["width"])
    for_docs(page, "offer", screenshot)
    # axe goes into the page as a script of its own, which the app's CSP rightly refuses.
    checker = phone(bypass_csp=True)
    sign_in(checker, courier)
    expect(checker.get_by_role("button", name="Accept")).to_be_visible()
    assert_accessible(checker)

    page.context.set_offline(True)  # an answer is never queued: the offer would expire
    card.get_by_role("button", name="Accept").click()
    expect(page.locator("#notice")).to_have_text(
        "No network: the offer cannot be answered offline."
    )
    time.sleep(0.5)
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.OFFERED
    page.context.set_offline(False)
    card.get_by_role("button", name="Accept").click()
    expect(page.get_by_role("heading", name="Your route")).to_be_visible()
    expect(page.locator("#offer").get_by_role("button")).to_have_count(0)
    in_stop_order = [
        str(pk) for pk in order.drops.order_by("stop_sequence").values_list("pk", flat=True)
    ]
    assert (
        page.locator("li.stop[data-drop]").evaluate_all(
            "(stops) => stops.map((s) => s.dataset.drop)"
        )
        == in_stop_order
    )
    assert set(order.drops.values_list("status", flat=True)) == {S.ASSIGNED}
    assert Offer.objects.get(pk=offer.pk).status == OfferStatus.ACCEPTED


def test_an_offer_goes_away_when_its_time_is_up(
    make_tenant, api, courier, phone, monkeypatch, settings
):
    open_all_day()
    monkeypatch.setattr(couriers.pages, "OFFER_POLL_SECONDS", 1)
    settings.OFFER_SECONDS = 4
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    page = phone()
    sign_in(page, courier)
    online_with_a_position(page, courier)
    live_order(api, shop)
    assert len(dispatch_waiting().offers) == 1
    expect(page.get_by_role("button", name="Accept")).to_be_visible()
    expect(page.locator("#notice")).to_have_text("The offer expired.")
    expect(page.get_by_role("button", name="Accept")).to_have_count(0)
    expect(page.get_by_role("button", name="Decline")).to_have_count(0)
    expect(page.get_by_text("No job offered")).to_be_visible()
    time.sleep(2)  # it keeps asking, and an expired offer never comes back
    expect(page.locator("#notice")).to_have_text("The offer expired.")


def test_an_offer_gone_meanwhile_says_so_and_leaves(make_tenant, api, courier, phone, monkeypatch):
    open_all_day()
    monkeypatch.setattr(couriers.pages, "OFFER_POLL_SECONDS", 1)
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    page = phone()
    sign_in(page, courier)
    online_with_a_position(page, courier)
    order = live_order(api, shop)
    assert len(dispatch_waiting().offers) == 1
    expect(page.get_by_role("button", name="Accept")).to_be_visible()
    cancel_drops_as_operator(drop_ids=list(order.drops.values_list("pk", flat=True)), actor="op")
    page.get_by_role("button", name="Accept").click()
    expect(page.locator("#notice")).to_have_text("This offer is gone: it expired or was taken.")
    expect(page.get_by_role("button", name="Accept")).to_have_count(0)
    expect(page.get_by_text("No job offered")).to_be_visible()
    order.refresh_from_db()
    assert order.driver_id is None


def test_an_offer_to_a_courier_on_a_run_shows_in_place_and_adds_to_the_route(
    make_tenant, api, courier, phone, screenshot, monkeypatch
):
    open_all_day()
    monkeypatch.setattr(couriers.pages, "OFFER_POLL_SECONDS", 1)
    bakery = make_tenant(name="Lotus Bakery", live_balance="100.00")
    next_door = make_tenant(name="Next Door Shop", live_balance="100.00")
    online_at(courier, (WHERE["latitude"], WHERE["longitude"]))
    north = (SHOP["lat"] + 0.004, SHOP["long"] + 0.003)
    carried_drop = drop("RB-1", name="Sreyneang Phan", lat=north[0], long=north[1])
    first = live_order(api, bakery, carried_drop)
    Order.objects.filter(pk=first.pk).update(pickup_name="Lotus Bakery")
    plan_runs()
    lead = Offer.objects.get(courier=courier, lead=True, status=OfferStatus.OFFERED)
    accept_offer(courier=courier, offer_id=lead.bundle)
    (carried,) = first.drops.all()
    move_drops_as_operator(drop_ids=[carried.pk], to=S.PICKED_UP, actor="op", driver=courier)
    page = phone()
    sign_in(page, courier)
    stop = stop_of(page, carried)
    stop.get_by_label("Received by").fill("Sreyneang")  # mid-delivery when the offer comes
    expect(page.locator(f"#pickup-{first.pk}")).to_have_class(re.compile(r"\bdone\b"))

    second = live_order(
        api, next_door,
        drop("RN-1", lat=north[0] + 0.001, long=north[1]),
        drop("RN-2", lat=north[0] + 0.003, long=north[1]),
    )  # fmt: skip
    Order.objects.filter(pk=second.pk).update(pickup_name="Next Door Shop")
    plan_runs()
    offer = Offer.objects.get(courier=courier, lead=True, status=OfferStatus.OFFERED)
    assert offer.order_id == second.pk

    card = page.locator("#offer")
    expect(card.get_by_role("button", name="Accept")).to_be_visible()
    expect(card.locator(".offer-pickup")).to_have_text("Pickup · Next Door Shop · 2 drops")
    expect(card.get_by_text(re.compile(r"^\+\d+ min$"))).to_be_visible()
    expect(card.locator(".offer-stops li")).to_have_count(4)  # Sreyneang's drop, and 3 new
    expect(card.locator(".offer-stops .new")).to_have_count(3)
    expect(card.locator(".offer-stops li", has_text="Sreyneang")).not_to_contain_text("new")
    expect(stop.get_by_label("Received by")).to_have_value("Sreyneang")  # drawn in place
    assert_fits(page, PHONE["width"])
    for_docs(page, "offer-on-a-run", screenshot, part=card)
    checker = phone(bypass_csp=True)  # axe's script, which the app's CSP rightly refuses
    sign_in(checker, courier)
    expect(checker.get_by_role("button", name="Accept")).to_be_visible()
    assert_accessible(checker)

    card.get_by_role("button", name="Accept").click()
    expect(page.locator("#offer").get_by_role("button")).to_have_count(0)
    expect(page.locator(f"#pickup-{second.pk}")).to_contain_text("Pickup · Next Door Shop")
    shown = page.locator("li.stop").evaluate_all("(stops) => stops.map((s) => s.id)")
    assert shown == [
        f"pickup-{s.order_id}" if s.drop_id is None else f"stop-{s.drop_id}"
        for s in run_of(courier.pk)
    ]
    assert shown[0] == f"pickup-{first.pk}"  # done, at its place
    assert set(second.drops.values_list("status", flat=True)) == {S.ASSIGNED}
