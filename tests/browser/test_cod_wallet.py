"""The wallet page's cash on delivery in a browser at 360 and 1280 px (docs/contract.md §18):
what is held, Move to wallet, Simulate a payout; it fits, and axe finds nothing serious."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Membership
from tests.billing.cod_helpers import delivered_cod
from tests.billing.helpers import wallet_of
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits, page_opener
from tests.factories import UserFactory
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL = "owner@angkor.example"


@pytest.fixture
def shop(make_tenant):
    """Angkor Tea: two delivered sandbox drops whose courier collected 32.50 in all."""
    open_all_day()  # the live server runs on the real clock
    tenant = make_tenant(name="Angkor Tea", sandbox_balance="100.00")
    user = UserFactory(username=EMAIL, email=EMAIL)
    Membership.objects.create(user=user, business=tenant.business, is_owner=True)
    delivered_cod(Api(), tenant, {"TEA-1": "20.00", "TEA-2": "12.50"})
    return tenant


@pytest.mark.parametrize("width", [360, 1280])
def test_a_business_moves_collected_cash_and_simulates_a_payout(
    shop, browser, live_server, screenshot, width
):
    with page_opener(browser, live_server.url, email=EMAIL) as open_page:
        page = open_page(width)
        page.goto("/wallet/?environment=sandbox")
        expect(page.get_by_test_id("cod-owed")).to_have_text("32.50 USD")
        expect(page.get_by_test_id("cod-ledger").get_by_text("TEA-1")).to_be_visible()
        assert_fits(page, width)
        assert_accessible(page)
        screenshot(page, f"wallet-cod-{width}")

        before = wallet_of(shop).balance
        page.get_by_label("Amount to move").fill("30")
        page.get_by_role("button", name="Move to wallet").click()

        expect(page.get_by_text("Moved 30.00 of collected cash")).to_be_visible()
        expect(page.get_by_test_id("cod-owed")).to_have_text("2.50 USD")
        expect(page.get_by_test_id("balance")).to_have_text(f"{before + 30} USD")

        page.get_by_label("Amount to move").fill("2.51")
        page.get_by_role("button", name="Move to wallet").click()

        expect(page.get_by_text("Only 2.50 is owed.")).to_be_visible()
        page.get_by_role("button", name="Simulate a payout").click()

        expect(page.get_by_text("Simulated a payout of 2.50")).to_be_visible()
        expect(page.get_by_test_id("cod-owed")).to_have_text("0.00 USD")
        assert_fits(page, width)
