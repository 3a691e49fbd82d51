"""The operators' console in a real browser: the index opens on what waits,
approving shows the request and the money terms, switching live asks first, and the lists
fit a 1280 px window; on a phone the drops list keeps each id on one line and its times read
as the dashboard's, with the zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts import services
from accounts.models import Business, Stage
from billing import onboarding
from billing.models import EntryKind, Invoice
from billing.services import post_wallet_entry
from orders.models import Drop
from tests.browser.axe import assert_accessible
from tests.browser.helpers import admin_log_in
from tests.tracking.helpers import drop_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 360, "height": 800}
PHONE = {"width": 390, "height": 844}

# How many lines each cell's text takes: its client rects, by distinct top (an <a> and its
# text on one line share a top).
LINES_OF_CELLS = """(selector) => Object.fromEntries(
    [...document.querySelectorAll(selector)].map(cell => {
        const range = document.createRange();
        range.selectNodeContents(cell);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        return [cell.textContent.trim(), tops.size];
    })
)"""

# What scrolls sideways: the page itself, or a box that scrolls inside itself (Django wraps a
# list's table in an overflow-x: auto box, so a too-wide list scrolls there, not the page).
OVERFLOWING = """() => {
    const found = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) found.push(`page ${root.scrollWidth}`);
    for (const box of document.querySelectorAll('body *')) {
        const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
        if (scrolls && box.scrollWidth > box.clientWidth + 1) {
            found.push(`${box.tagName}.${box.className} ${box.scrollWidth}/${box.clientWidth}`);
        }
    }
    return found;
}"""


def asking_for_access(name: str, use_case: str, volume: int, hours_ago: int) -> Business:
    business = onboarding.create_business(name=name, email=f"owner@{name.split()[0].lower()}.kh")
    services.request_access(business=business, use_case=use_case, expected_monthly_volume=volume)
    asked = timezone.now() - timedelta(hours=hours_ago)
    Business.objects.filter(pk=business.pk).update(access_requested_at=asked)
    return business


def asking_for_live(make_tenant, name: str) -> Business:
    business = make_tenant(name=name, stage="approved").business
    Business.objects.filter(pk=business.pk).update(
        use_case="Pharmacy orders to homes across the city, 08:00 to 20:00.",
        expected_monthly_volume=1200,
        live_requested_at=timezone.now() - timedelta(hours=3),
    )
    return business


@pytest.fixture
def waiting(make_tenant) -> dict[str, Business]:
    """Two businesses waiting for approval, one asking for live, one live and quiet, and a
    live order waiting for a driver."""
    make_tenant(name="Angkor Quiet Traders", stage="live")
    bakery = make_tenant(name="Takhmao Bakery", stage="live").business
    for client_order_id in ("TB-1001", "TB-1002"):
        drop_in("PENDING", business=bakery, environment="live", client_order_id=client_order_id)
    return {
        "newer": asking_for_access(
            "Lotus Bakery", "Cakes to offices in BKK1, mornings only.", 450, hours_ago=2
        ),
        "older": asking_for_access(
            "Mango Express",
            "Same-day grocery deliveries in Phnom Penh from three dark stores; most drops "
            "are within 6 km, a few go out to Chbar Ampov and Sen Sok.",
            3000,
            hours_ago=26,
        ),
        "live": asking_for_live(make_tenant, "Kampot Pharmacy"),
    }


def item_names(page: Page, testid: str) -> list[str]:
    return page.get_by_test_id(testid).locator(".console-name").all_inner_texts()


def assert_fits(page: Page) -> None:
    assert page.evaluate(OVERFLOWING) == [], page.url


def test_the_index_opens_on_what_needs_doing(waiting, operator, page, screenshot):
    admin_log_in(page)

    expect(page.get_by_role("heading", name="Needs doing")).to_be_visible()
    approval = page.get_by_test_id("waiting-approval")
    expect(approval.get_by_role("heading", name="Waiting for approval 2")).to_be_visible()
    assert item_names(page, "waiting-approval") == ["Mango Express", "Lotus Bakery"]  # oldest first
    expect(approval).to_contain_text("Same-day grocery deliveries in Phnom Penh")
    expect(approval).to_contain_text("Expects 3000 drops a month")
    expect(approval).to_contain_text("1 day, 2 hours ago")
    live = page.get_by_test_id("waiting-live")
    expect(live.get_by_role("heading", name="Asked for live 1")).to_be_visible()
    assert item_names(page, "waiting-live") == ["Kampot Pharmacy"]
    expect(live).to_contain_text("prepaid wallet, 2.00 USD + 0.50 USD/km")
    expect(live.get_by_role("link", name="Enable live… Kampot Pharmacy")).to_be_visible()
    driver = page.get_by_test_id("waiting-driver")
    expect(driver.get_by_role("heading", name="Waiting for a driver 2")).to_be_visible()
    expect(driver).to_contain_text("for Takhmao Bakery: 1 drop, waiting since")
    expect(driver).to_contain_text("UTC+7")
    # Django's list of models is still there, below.
    expect(page.get_by_role("link", name="Businesses", exact=True)).to_be_visible()
    assert "Angkor Quiet Traders" not in page.content()
    assert_fits(page)
    screenshot(page, "index-1280")

    page.set_viewport_size(NARROW)
    assert_fits(page)
    screenshot(page, "index-360")

    page.set_viewport_size(WIDE)
    driver.get_by_role("link", name="All 2 waiting for a driver").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    expect(page.locator("#result_list")).to_contain_text("Takhmao Bakery")


def test_the_index_says_when_nothing_waits(operator, page, screenshot):
    admin_log_in(page)

    expect(page.get_by_test_id("waiting-approval")).to_contain_text(
        "No business is waiting for approval."
    )
    expect(page.get_by_test_id("waiting-live")).to_contain_text(
        "No business is waiting for live access."
    )
    screenshot(page, "index-empty")


@pytest.mark.parametrize("viewport", [NARROW, WIDE], ids=["360", "1280"])
def test_the_admin_index_passes_axe(waiting, operator, new_page, viewport):
    page = new_page()
    page.set_viewport_size(viewport)
    admin_log_in(page)
    expect(page.get_by_role("heading", name="Needs doing")).to_be_visible()

    assert_accessible(page)


def test_an_operator_approves_from_the_queue(waiting, operator, page, screenshot):
    admin_log_in(page)
    page.get_by_role("link", name="Approve… Mango Express").click()

    expect(page.get_by_role("heading", name="Approve Mango Express")).to_be_visible()
    expect(page.get_by_test_id("use-case")).to_contain_text("Same-day grocery deliveries")
    expect(page.get_by_test_id("expected-volume")).to_have_text("3000 drops a month")
    expect(page.get_by_role("heading", name="Billing and pricing, in USD")).to_be_visible()
    for label, unit in [
        ("Base fee", "USD per drop"),
        ("Per km fee", "USD per km beyond the included km"),
    ]:
        box = page.get_by_label(label)
        expect(box).to_have_accessible_description(unit)
        expect(page.locator(f"#{box.get_attribute('id')}_unit")).to_have_text(unit)
    expect(page.get_by_test_id("sandbox-credit")).to_contain_text(
        "Approving credits their sandbox wallet with 100.00 USD"
    )
    assert_accessible(page)
    assert_fits(page)
    screenshot(page, "approve-1280")
    page.set_viewport_size(NARROW)
    assert_fits(page)
    screenshot(page, "approve-360")
    page.set_viewport_size(WIDE)

    page.get_by_label("Base fee").fill("2.50")
    page.get_by_label("Per km fee").fill("0.40")
    page.get_by_role("button", name="Approve").click()

    expect(
        page.get_by_text("Mango Express approved; the sandbox wallet was credited.")
    ).to_contain_text("With 100.00 USD of sandbox credit they can try the API now.")
    assert Business.objects.get(pk=waiting["older"].pk).stage == Stage.APPROVED
    page.goto("/admin/")
    assert item_names(page, "waiting-approval") == ["Lotus Bakery"]


def test_enable_live_asks_for_confirmation(waiting, operator, page, screenshot):
    business = waiting["live"]
    admin_log_in(page)
    page.get_by_role("link", name="Enable live… Kampot Pharmacy").click()

    # The confirmation: what it means and how they are billed; nothing has happened yet.
    expect(
        page.get_by_role("heading", name="Enable live access for Kampot Pharmacy?")
    ).to_be_visible()
    consequence = page.locator(".console-consequence")
    expect(consequence).to_contain_text(
        "They will be able to make live keys and send live orders, billed from their prepaid "
        "live wallet, at 2.00 USD a drop plus 0.50 USD a km."
    )
    expect(consequence).to_contain_text("Their live wallet holds 0.00 USD")
    assert Business.objects.get(pk=business.pk).stage == Stage.APPROVED
    assert_accessible(page)
    screenshot(page, "enable-live-confirm")

    # Cancel goes back to the business, unchanged.
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name="Onboarding moves")).to_be_visible()
    assert Business.objects.get(pk=business.pk).stage == Stage.APPROVED

    # From the business page: the button opens the same confirmation; Confirm acts.
    page.get_by_role("button", name="Enable live…").click()
    expect(
        page.get_by_role("heading", name="Enable live access for Kampot Pharmacy?")
    ).to_be_visible()
    page.get_by_role("button", name="Confirm").click()

    expect(page.get_by_text("Live access enabled for Kampot Pharmacy.")).to_be_visible()
    expect(page.get_by_text("enable live done")).to_have_count(0)
    assert Business.objects.get(pk=business.pk).stage == Stage.LIVE
    screenshot(page, "enable-live-done")
    page.goto("/admin/")
    expect(page.get_by_test_id("waiting-live")).to_contain_text(
        "No business is waiting for live access."
    )


def test_enable_live_is_not_offered_before_the_business_asks(
    make_tenant, operator, page, screenshot
):
    business = make_tenant(name="Not Yet Asking", stage="approved").business
    admin_log_in(page)
    page.goto(f"/admin/accounts/business/{business.pk}/change/")

    moves = page.locator("#onboarding-moves")
    expect(moves.get_by_role("button", name="Suspend…")).to_be_visible()
    expect(moves.get_by_role("button", name=re.compile("Enable live"))).to_have_count(0)
    expect(moves).to_contain_text("Enable live appears once the business asks for live access")
    screenshot(page, "business-not-asking")


def test_suspend_asks_for_confirmation(make_tenant, operator, page):
    business = make_tenant(name="Kep Crab", stage="live").business
    admin_log_in(page)
    page.goto(f"/admin/accounts/business/{business.pk}/change/")

    page.get_by_role("button", name="Suspend…").click()
    expect(page.get_by_role("heading", name="Suspend Kep Crab?")).to_be_visible()
    assert Business.objects.get(pk=business.pk).stage == Stage.LIVE
    page.get_by_role("button", name="Confirm").click()

    expect(
        page.get_by_text("Kep Crab is suspended; its API keys answer 403 until it is reactivated.")
    ).to_be_visible()
    assert Business.objects.get(pk=business.pk).stage == Stage.SUSPENDED


def test_the_lists_fit_1280_px(make_tenant, operator, page, screenshot):
    """Every list an operator reads daily, with long names, fits without a horizontal scroll."""
    for n, name in enumerate(
        [
            "Phnom Penh Fresh Noodle and Dumpling Delivery Company",
            "Siem Reap Angkor Artisan Handicrafts Export Cooperative",
            "Battambang Rice Traders",
        ]
    ):
        tenant = make_tenant(name=name, stage="live", live_balance="250.00")
        # A business's own id may be one long word.
        drop_in(
            "PENDING", business=tenant.business, client_order_id=f"PP2026NOODLEDUMPLING{n:016d}"
        )
        drop_in(
            "DELIVERED",
            business=tenant.business,
            environment="live",
            client_order_id=f"PP-2026-11-LIVE-{n:04d}",
        )
        services.create_api_key(
            business=tenant.business,
            environment="sandbox",
            label="Warehouse integration, staging server in Singapore",
        )
        post_wallet_entry(
            business=tenant.business,
            environment="live",
            amount=Decimal("-12.50"),
            kind=EntryKind.ADJUSTMENT,
            note="Correction of a double bank transfer received on 2026-11-20 from ABA Bank",
        )
    invoiced = make_tenant(name="Takeo Office Supplies Wholesale", billing="invoiced").business
    Invoice.objects.create(
        business=invoiced, environment="live", period="2026-10", accrued=Decimal("1234.50")
    )
    asking_for_access(
        "Kampong Cham Riverside Organic Vegetables",
        "Vegetables from the farm to restaurants.",
        800,
        hours_ago=5,
    )
    asking_for_live(make_tenant, "Kampot Pepper and Salt Online Store")
    admin_log_in(page)

    for path in [
        "/admin/accounts/business/",
        "/admin/accounts/apikey/",
        "/admin/orders/order/",
        "/admin/orders/drop/",
        "/admin/orders/batch/",
        "/admin/billing/wallet/",
        "/admin/billing/ledgerentry/",
        "/admin/billing/invoice/",
    ]:
        page.goto(path)
        expect(page.locator("#result_list")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280, path
        assert_fits(page)
        screenshot(page, path.strip("/").replace("/", "-"))

    page.goto("/admin/accounts/business/?waiting=live")
    expect(page.locator("#result_list")).to_contain_text("Kampot Pepper and Salt Online Store")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)


def test_the_drops_list_keeps_ids_whole_on_a_phone(make_tenant, operator, page, screenshot):
    business = make_tenant(
        name="Phnom Penh Fresh Noodle and Dumpling Delivery Company", stage="live"
    ).business
    ids = ["PP2026NOODLEDUMPLING0000000000000001", "PP-2026-11-LIVE-0001", "C-42"]
    for client_order_id in ids:
        drop_in("PENDING", business=business, environment="live", client_order_id=client_order_id)
    moment = datetime(2026, 11, 25, 12, 38, tzinfo=UTC)  # 19:38 in Phnom Penh
    Drop.objects.update(created_at=moment, updated_at=moment)
    admin_log_in(page)
    page.set_viewport_size(PHONE)

    page.goto("/admin/orders/drop/")

    lines = page.evaluate(LINES_OF_CELLS, "#result_list .field-client_order_id")
    assert lines == dict.fromkeys(ids, 1)
    created = page.locator("#result_list td.field-created_at")
    expect(created).to_have_text(["25 Nov 2026, 19:38\u00a0UTC+7"] * 3)
    assert set(page.evaluate(LINES_OF_CELLS, "#result_list td.field-created_at").values()) == {1}
    # The list scrolls sideways in its own box; the page does not.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "drops-390")
    page.locator("#changelist-form .results").evaluate(
        "box => { box.scrollLeft = box.scrollWidth; }"
    )
    screenshot(page, "drops-390-scrolled")

    page.get_by_role("link", name="PP-2026-11-LIVE-0001").click()
    expect(page.locator(".field-created_at .readonly")).to_have_text(
        "25 Nov 2026, 19:38\u00a0UTC+7"
    )
    screenshot(page, "drop-390")


def test_the_approve_form_asks_for_net_days_only_for_a_monthly_invoice(waiting, operator, page):
    business = waiting["newer"]
    admin_log_in(page)
    page.goto(f"/admin/accounts/business/{business.pk}/approve/")
    billing, net_days = page.get_by_label("Billing model"), page.get_by_label("Net days")

    expect(billing).to_have_value("wallet")
    expect(net_days).to_be_hidden()  # a prepaid wallet has no credit terms
    billing.select_option("invoiced")
    expect(net_days).to_be_visible()
    expect(net_days).to_be_enabled()
    net_days.fill("14")
    assert_accessible(page)
    billing.select_option("wallet")
    expect(net_days).to_be_hidden()
    billing.select_option("invoiced")
    page.get_by_role("button", name="Approve").click()

    expect(page.get_by_text("Lotus Bakery approved; billed by invoice")).to_be_visible()
    business.refresh_from_db()
    assert (business.billing_model, business.net_days) == ("invoiced", 14)
    # The business page shows its net days the same way.
    page.get_by_label("Billing model").select_option("wallet")
    expect(page.get_by_label("Net days")).to_be_hidden()
    page.get_by_label("Billing model").select_option("invoiced")
    expect(page.get_by_label("Net days")).to_have_value("14")
