"""Keys and tenancy in a real browser: a revoked key stops working; strangers see nothing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from accounts.models import ApiKey, Membership
from tests.browser.helpers import bulk, call_api, log_in, nav
from tests.factories import UserFactory, batch, drop, group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def login_for():
    """A dashboard login (email, PASSWORD) for a provisioned business."""

    def make(business, email: str) -> str:
        user = UserFactory(username=email, email=email)
        Membership.objects.create(user=user, business=business, is_owner=True)
        return email

    return make


def test_a_revoked_key_fails_on_the_next_call(
    make_tenant, login_for, page, live_server, screenshot
):
    tenant = make_tenant(name="Kampot Pepper", stage="approved")
    log_in(page, login_for(tenant.business, "owner@kampot.example"))
    status, _ = call_api(live_server.url, "GET", "/account", tenant.sandbox_key)
    assert status == 200

    nav(page, "API keys")
    row = page.get_by_test_id("keys-table").get_by_role("row", name=re.compile("provisioned"))
    expect(row).to_contain_text("Active")
    row.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_text("This cannot be undone.")).to_be_visible()
    screenshot(page, "revoke-confirm")
    page.get_by_role("button", name="Revoke key").click()
    expect(page.get_by_text("is revoked; it no longer works.")).to_be_visible()
    expect(row).to_contain_text("Revoked")
    screenshot(page, "keys-after-revoke")

    status, body = call_api(live_server.url, "GET", "/account", tenant.sandbox_key)
    assert status == 401 and body["error"]["code"] == "UNAUTHENTICATED", body
    status, body = bulk(live_server.url, tenant.sandbox_key, batch(group(drop("AFTER-REVOKE"))))
    assert status == 401, body


def test_a_second_business_sees_none_of_the_first(
    open_for_business, make_tenant, login_for, page, live_server, screenshot
):
    first = make_tenant(name="First Shop", stage="approved")
    second = make_tenant(name="Second Shop", stage="approved")
    status, body = bulk(live_server.url, first.sandbox_key, batch(group(drop("FIRST-SECRET"))))
    assert status == 200 and body["data"]["counts"]["accepted"] == 1, body
    first_drop_id = body["data"]["orders"][0]["drop_id"]
    first_batch_id = body["data"]["batch_id"]
    first_key = ApiKey.objects.get(business=first.business)

    log_in(page, login_for(second.business, "owner@second.example"))
    nav(page, "Orders")
    expect(page.get_by_text("No orders yet.")).to_be_visible()
    page.get_by_label("client_order_id").fill("FIRST-SECRET")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("No orders match.")).to_be_visible()
    screenshot(page, "orders-of-another-business")

    nav(page, "API keys")
    keys_table = page.get_by_test_id("keys-table")
    expect(keys_table.get_by_role("row")).to_have_count(2)  # the header and its own key
    expect(keys_table).not_to_contain_text(first_key.hint)
    nav(page, "Batches")
    expect(page.get_by_text("No batches yet.")).to_be_visible()

    for path in [
        f"/orders/{first_drop_id}/",
        f"/batches/{first_batch_id}/",
        f"/keys/{first_key.pk}/revoke/",
    ]:
        response = page.goto(path)
        assert response.status == 404, path
        expect(page.get_by_text("FIRST-SECRET")).to_have_count(0)
    screenshot(page, "not-found")

    # The test driver cannot reach the first business's order either.
    page.goto("/sandbox/")
    page.get_by_label("Client order id").fill("FIRST-SECRET")
    page.get_by_role("button", name="Advance").click()
    expect(page.get_by_text("No order with this client_order_id.")).to_be_visible()
    status, body = call_api(
        live_server.url,
        "POST",
        "/orders/tracking",
        first.sandbox_key,
        {"identifiers": ["FIRST-SECRET"]},
    )
    assert body["data"]["orders"][0]["status"] == "PENDING", body
