"""The whole onboarding journey in a real browser: sign up to a live key, with an operator."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Business, Stage
from tests.browser.helpers import PASSWORD, admin_log_in, bulk, call_api, nav
from tests.factories import batch, drop, group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SANDBOX_KEY = re.compile(r"^svc_test_[A-Za-z0-9]{40}$")
LIVE_KEY = re.compile(r"^svc_live_[A-Za-z0-9]{40}$")


def generate_key(page: Page, environment: str, label: str) -> str:
    page.goto("/keys/")
    page.get_by_label(environment).check()
    page.get_by_label("Label").fill(label)
    page.get_by_role("button", name="Generate key").click()
    new_key = page.get_by_test_id("new-key")
    expect(new_key).to_contain_text("you will not see it again")
    return page.locator("#new-key-value").input_value()


def open_business_in_admin(page: Page, name: str) -> None:
    page.goto("/admin/accounts/business/")
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name="Onboarding moves")).to_be_visible()


def test_sign_up_to_live_key(open_for_business, operator, new_page, live_server, screenshot):
    shop, desk = new_page(), new_page()  # the business owner and the operator

    # 1. Sign up: the business exists, registered, and its owner is logged in.
    shop.goto("/signup/")
    screenshot(shop, "signup")
    shop.get_by_label("Business name").fill("Mango Express")
    shop.get_by_label("Email").fill("owner@mango.example")
    shop.get_by_label("Password").fill(PASSWORD)
    shop.get_by_role("button", name="Sign up").click()
    expect(shop.get_by_test_id("stage")).to_have_text("Registered")
    screenshot(shop, "home-registered")

    # 2. Request API access.
    shop.get_by_role("link", name="Request API access").click()
    shop.get_by_label("Use case").fill("Same-day grocery deliveries in Phnom Penh.")
    shop.get_by_label("Expected monthly volume").fill("3000")
    screenshot(shop, "request-access")
    shop.get_by_role("button", name="Request access").click()
    expect(shop.get_by_text("Access requested. An operator will review it")).to_be_visible()
    expect(shop.get_by_test_id("next-action")).to_contain_text("is with an operator")
    screenshot(shop, "home-access-requested")

    # 3. The operator approves in admin, with billing and pricing on the same page.
    admin_log_in(desk)
    desk.goto("/admin/accounts/business/?stage__exact=ACCESS_REQUESTED")
    screenshot(desk, "admin-approval-queue")
    open_business_in_admin(desk, "Mango Express")
    desk.get_by_role("link", name="Approve…").click()
    desk.get_by_label("Billing model").select_option("wallet")
    desk.get_by_label("Base fee").fill("2.50")
    desk.get_by_label("Per km fee").fill("0.40")
    desk.get_by_label("Included km").fill("1")
    expect(desk.get_by_label("Net days")).to_be_hidden()  # a wallet has no payment terms
    screenshot(desk, "admin-approve")
    desk.get_by_role("button", name="Approve").click()
    expect(
        desk.get_by_text("Mango Express approved; the sandbox wallet was credited.")
    ).to_be_visible()

    # 4. The business makes a sandbox key; the full key is shown once, with a copy button.
    shop.goto("/")
    expect(shop.get_by_test_id("stage")).to_have_text("Approved")
    sandbox_key = generate_key(shop, "Sandbox", "integration")
    assert SANDBOX_KEY.match(sandbox_key)
    shop.get_by_role("button", name="Copy").click()
    expect(shop.get_by_role("button", name="Copied")).to_be_visible()
    screenshot(shop, "keys-new-sandbox-key")
    shop.goto("/keys/")  # the key is gone, its hint stays
    expect(shop.get_by_test_id("new-key")).to_have_count(0)
    expect(shop.get_by_test_id("keys-table")).to_contain_text(sandbox_key[:13])
    assert sandbox_key not in shop.content()

    # 5. That key creates a batch through the real HTTP API.
    status, body = bulk(live_server.url, sandbox_key, batch(group(drop("MANGO-1"))))
    assert status == 200, body
    assert body["data"]["counts"] == {"total": 1, "accepted": 1, "rejected": 0}

    # 6. The order shows on the orders page.
    nav(shop, "Orders")
    row = shop.get_by_test_id("orders-table").get_by_role("row", name=re.compile("MANGO-1"))
    expect(row).to_contain_text("Pending")
    screenshot(shop, "orders")
    row.get_by_role("link", name="MANGO-1").click()
    expect(shop.get_by_test_id("drop-status")).to_have_text("Pending")
    screenshot(shop, "order-pending")

    # 7. The test driver delivers it from the sandbox console.
    nav(shop, "Sandbox console")
    screenshot(shop, "sandbox-console")
    shop.get_by_label("Client order id").fill("MANGO-1")
    shop.get_by_label("Target status").select_option("DELIVERED")
    shop.get_by_role("button", name="Advance").click()
    expect(shop.get_by_text("MANGO-1 is now delivered.")).to_be_visible()
    expect(shop.get_by_test_id("drop-status")).to_have_text("Delivered")
    expect(shop.get_by_test_id("events")).to_contain_text("sandbox test driver")
    screenshot(shop, "order-delivered")

    # The sample batch goes through the same pipeline and shows every outcome.
    nav(shop, "Sandbox console")
    shop.get_by_role("button", name="Send the sample batch").click()
    expect(shop.get_by_text("Sample batch sent: 2 accepted, 10 rejected.")).to_be_visible()
    expect(shop.get_by_test_id("batch-results")).to_contain_text("DUPLICATE_CLIENT_ORDER_ID")
    screenshot(shop, "batch-sample")
    nav(shop, "Batches")
    expect(shop.get_by_test_id("batches-table").get_by_role("row")).to_have_count(3)
    screenshot(shop, "batches")

    # 8. The business requests live access.
    nav(shop, "Home")
    shop.get_by_role("link", name="Request live access").click()
    screenshot(shop, "request-live")
    shop.get_by_role("button", name="Request live access").click()
    expect(shop.get_by_text("Live access requested.")).to_be_visible()
    screenshot(shop, "home-live-requested")

    # 9. The operator switches live on.
    open_business_in_admin(desk, "Mango Express")
    screenshot(desk, "admin-business")
    desk.get_by_role("button", name="Enable live…").click()
    desk.get_by_role("button", name="Confirm").click()
    expect(desk.get_by_text("Live access enabled for Mango Express.")).to_be_visible()
    assert Business.objects.get(name="Mango Express").stage == Stage.LIVE

    # 10. A live key is made, and it works.
    live_key = generate_key(shop, "Live", "production")
    assert LIVE_KEY.match(live_key)
    screenshot(shop, "keys-new-live-key")
    status, body = call_api(live_server.url, "GET", "/account", live_key)
    assert status == 200 and body["data"]["environment"] == "live", body
    nav(shop, "Home")
    expect(shop.get_by_test_id("stage")).to_have_text("Live")
    expect(shop.locator(".checklist li.done")).to_have_count(6)
    screenshot(shop, "home-live")
    nav(shop, "Wallet")
    expect(shop.get_by_test_id("balance")).to_be_visible()
    screenshot(shop, "wallet-sandbox")
