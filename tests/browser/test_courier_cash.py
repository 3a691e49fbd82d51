"""The courier app's cash in hand in a real browser (docs/couriers.md "Cash in hand"): the
home page's figure, then today's collections drop by drop at 390 px, fitting the phone and
passing axe."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.billing.custody_helpers import delivered_by
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.browser.test_courier_app import courier, for_docs, phone, sign_in  # noqa: F401 (fixtures)
from tests.reliability.batch_hold import open_all_day

# ruff: noqa: F811 (the fixtures imported above, named again as the test's arguments)
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_cash_in_hand_shows_on_home_and_opens_today_s_collections_at_390_px(
    make_tenant,
    api,
    courier,
    phone,
    screenshot,
):
    open_all_day()
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    delivered_by(api, shop, courier, "30.00", "12.50")
    # axe goes into the page as a script of its own, which the app's CSP rightly refuses.
    page = phone(bypass_csp=True)
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, courier)

    expect(page.locator("[data-cash-in-hand]")).to_have_text("42.50 USD")
    page.locator("[data-cash-link]").click()

    card = page.locator("[data-cash]")
    expect(card.locator("[data-in-hand]")).to_have_text("42.50 USD")
    expect(card.locator("[data-collected-today]")).to_have_text("42.50 USD")
    expect(page.locator("[data-cash-entry]")).to_have_count(2)
    expect(page.locator("[data-cash-entry]").first).to_contain_text("Lotus Bakery")
    for_docs(page, "cash", screenshot)
    assert_accessible(page)
    assert_fits(page, 390)
