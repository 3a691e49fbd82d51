"""The courier's day in a real browser at 390 px (docs/couriers.md): a cancellation by the
shop said in words within one check of the route and the stop drawn again without its
Picked up button; a move confirmed in words; moves made without network counted while they
wait ("2 moves waiting to send") and each made once when it returns; the day's done stops
page; axe clean on both."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

import couriers.pages
from orders.models import DeliveryEvent, Drop, DropStatus
from tests.browser import test_courier_app as courier_app
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.browser.test_courier_app import for_docs, sign_in, stop_of
from tests.couriers.conftest import assigned_drops
from tests.factories import drop
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

S = DropStatus
WIDTH = 390
# The courier app's fixtures: a 360 px phone sharing its location, and Dara, a courier.
phone, courier = courier_app.phone, courier_app.courier


def at_390(page: Page) -> Page:
    page.set_viewport_size({"width": WIDTH, "height": 844})
    return page


def by_id(drops):
    return sorted(drops, key=lambda d: d.client_order_id)


def test_a_cancellation_by_the_shop_is_said_in_words_within_one_check(
    make_tenant, api, courier, phone, monkeypatch, screenshot
):
    monkeypatch.setattr(couriers.pages, "ROUTE_CHECK_SECONDS", 1)
    open_all_day()
    shop = make_tenant(name="Lotus Bakery")
    gone, kept = by_id(
        assigned_drops(
            api, shop, courier, drop("X-1", name="Dara Chea"), drop("X-2", name="Sokha Lim")
        )
    )
    page = at_390(phone())
    sign_in(page, courier)
    expect(stop_of(page, gone).get_by_role("button", name="Picked up")).to_be_visible()
    with page.expect_response(lambda r: "/api/v1/courier/route" in r.url) as checked:
        pass
    assert checked.value.request.headers["if-none-match"].startswith('"')
    assert checked.value.status == 304  # nothing changed yet

    answer = api.post("/orders/cancel", {"identifiers": ["X-1"]}, shop.key("sandbox"))
    assert answer.status_code == 200

    changes = page.get_by_role("region", name="Your route changed")
    expect(changes).to_contain_text(
        "Lotus Bakery cancelled the delivery to Dara: don't pick it up.", timeout=5_000
    )
    expect(stop_of(page, gone).locator(".status")).to_have_text("Cancelled")
    expect(stop_of(page, gone).get_by_role("button", name="Picked up")).to_have_count(0)
    expect(stop_of(page, kept).get_by_role("button", name="Picked up")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    for_docs(page, "changed", screenshot)
    assert_fits(page, WIDTH)
    time.sleep(2.5)  # more checks: the change is said once
    expect(changes.get_by_role("listitem")).to_have_count(1)
    changes.get_by_role("button", name="OK").click()
    expect(changes).to_be_hidden()


def test_a_move_is_confirmed_in_words(make_tenant, api, courier, phone):
    open_all_day()
    (cash,) = assigned_drops(
        api, make_tenant(name="Lotus Bakery"), courier,
        {**drop("CF-1", name="Sreyneang Phan"), "cod": {"amount": "12.50"}},
    )  # fmt: skip
    page = at_390(phone())
    sign_in(page, courier)
    stop_of(page, cash).get_by_role("button", name="Picked up").click()
    expect(page.locator("#confirmation")).to_contain_text("Picked up the parcel for Sreyneang at")
    stop = stop_of(page, cash)
    stop.get_by_label("Cash collected: 12.50 USD").check()
    stop.get_by_role("button", name="Delivered").click()
    confirmation = page.locator("#confirmation")
    expect(confirmation).to_contain_text("Delivered to Sreyneang at")
    expect(confirmation).to_contain_text("— cash 12.50 USD collected.")
    assert_fits(page, WIDTH)


def test_moves_made_offline_are_counted_and_each_lands_once(make_tenant, api, courier, phone):
    open_all_day()
    one, other = assigned_drops(api, make_tenant(name="Lotus Bakery"), courier)
    page = at_390(phone())
    sign_in(page, courier)
    page.context.set_offline(True)
    stop_of(page, one).get_by_role("button", name="Picked up").click()
    expect(page.locator("#waiting")).to_have_text("1 move waiting to send")
    stop_of(page, other).get_by_role("button", name="Picked up").click()
    expect(page.locator("#waiting")).to_have_text("2 moves waiting to send")
    time.sleep(1)
    assert Drop.objects.filter(status=S.PICKED_UP).count() == 0

    page.context.set_offline(False)
    expect(page.locator("#waiting")).to_be_hidden()
    for each in (one, other):
        expect(stop_of(page, each).locator(".status")).to_have_text("Picked up")
    expect(page.locator("#confirmation")).to_contain_text("Picked up the parcel for")
    page.reload()  # a page load sends what waits: nothing does any more
    expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")
    time.sleep(0.5)
    for each in (one, other):
        assert DeliveryEvent.objects.filter(drop_id=each.pk, status=S.PICKED_UP).count() == 1


@pytest.mark.parametrize("screen", ["changes", "history"])
def test_the_changes_and_the_history_page_pass_axe_at_390_px(
    make_tenant, api, courier, phone, monkeypatch, screenshot, screen
):
    monkeypatch.setattr(couriers.pages, "ROUTE_CHECK_SECONDS", 1)
    open_all_day()
    shop = make_tenant(name="Lotus Bakery")
    cash, gone = by_id(
        assigned_drops(
            api, shop, courier,
            {**drop("AX-1", name="Dara Chea"), "cod": {"amount": "3.00"}},
            drop("AX-2", name="Sokha Lim"),
        )
    )  # fmt: skip
    # axe goes into the page as a script of its own, which the app's CSP rightly refuses.
    page = at_390(phone(bypass_csp=True))
    sign_in(page, courier)
    if screen == "changes":
        api.post("/orders/cancel", {"identifiers": ["AX-2"]}, shop.key("sandbox"))
        expect(page.get_by_role("region", name="Your route changed")).to_be_visible()
    else:
        stop_of(page, cash).get_by_role("button", name="Picked up").click()
        stop = stop_of(page, cash)
        stop.get_by_label("Cash collected: 3.00 USD").check()
        stop.get_by_role("button", name="Delivered").click()
        expect(page.locator("#confirmation")).to_contain_text("Delivered to Dara")
        page.get_by_role("link", name="Today's done stops").click()
        expect(page.get_by_role("heading", name="Done stops")).to_be_visible()
        expect(page.get_by_text("Cash collected this day: 3.00 USD")).to_be_visible()
        expect(page.locator("[data-done-stop]")).to_have_count(1)
    screenshot(page, screen)
    assert_accessible(page)
    assert_fits(page, WIDTH)
