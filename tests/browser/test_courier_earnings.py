"""The courier app's earnings in a real browser (docs/couriers.md "Earnings"): from the home
page's link to the day's pay at 390 px, each part and the total, fitting the phone and
passing axe."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.browser.test_courier_app import courier, for_docs, phone, sign_in  # noqa: F401 (fixtures)
from tests.couriers.conftest import PASSWORD, CourierClient
from tests.couriers.earning import bring_back, deliver, live_run, make_plans
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_days_earnings_open_from_home_and_fit_390_px(
    make_tenant,
    api,
    courier,  # noqa: F811 (the fixture imported above)
    phone,  # noqa: F811
    screenshot,
):
    open_all_day()
    make_plans()
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    token = api.post("/courier/session", {"phone": courier.phone, "password": PASSWORD}, None)
    client = CourierClient(api, token.json()["data"]["token"])
    first, second = live_run(api, shop, courier, 1.2, 3.4)
    (back,) = live_run(api, shop, courier, 2.0)
    deliver(client, first)
    deliver(client, second)
    bring_back(client, back)
    # axe goes into the page as a script of its own, which the app's CSP rightly refuses.
    page = phone(bypass_csp=True)
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, courier)

    page.get_by_role("link", name="Today's earnings").click()

    card = page.locator("[data-earnings]")
    expect(card.get_by_role("row", name="Delivered · 2 drops 2.50")).to_be_visible()
    expect(card.get_by_role("row", name="Returns · 1 0.60")).to_be_visible()
    # Runs of 3.40 and 2.00 km: 1.19 + 0.70 at 0.35 a km.
    expect(card.get_by_role("row", name="Runs · 5.40 km 1.89")).to_be_visible()
    expect(card.locator("[data-total]")).to_have_text("4.99 USD")
    for_docs(page, "earnings", screenshot)
    assert_accessible(page)
    assert_fits(page, 390)
    page.get_by_role("link", name="← Day before").click()
    expect(card.locator("[data-total]")).to_have_text("0.00 USD")
