"""The business dashboard in a real browser, 360 px and 1280 px wide.

A shop with a month of live orders, a batch of 150 drops spread over Phnom Penh, keys, a
webhook endpoint and a wallet: each page is opened at both widths, must never scroll the
page sideways at 360 px, is saved as a screenshot, and the map pages must draw their pins.
An accessibility pass (axe-core) runs on the home, orders, order and batch pages.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import ApiKey, Membership
from events.endpoints import create_endpoint
from orders.models import Drop
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits, page_opener
from tests.factories import UserFactory, batch, drop, group
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [360, 1280]
EMAIL = "owner@lotus.example"
BATCH_DROPS, REJECTED_EVERY = 150, 5  # 30 rejected, 120 on the map


@dataclass
class Shop:
    order_id: str  # a drop on its way, courier on the map
    batch_id: str
    endpoint_id: str


def _advance(api: Api, key: str, identifiers: list[str], to: str) -> None:
    if identifiers:
        response = api.post("/sandbox/orders/advance", {"identifiers": identifiers, "to": to}, key)
        assert response.status_code == 200, response.content


@pytest.fixture
def shop(make_tenant, settings) -> Shop:
    """Lotus Bakery: live, a month of live orders, one big sandbox batch, keys, a webhook."""
    open_all_day()
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    tenant = make_tenant(name="Lotus Bakery", sandbox_balance="5000.00", live_balance="2000.00")
    user = UserFactory(username=EMAIL, email=EMAIL)
    Membership.objects.create(user=user, business=tenant.business, is_owner=True)
    endpoint = create_endpoint(
        business=tenant.business,
        environment="sandbox",
        url="http://127.0.0.1:9/hooks",
        event_types=["*"],
        description="Order system",
    ).endpoint
    api, key, rng = Api(), tenant.sandbox_key, random.Random(16)

    # A month of live orders, a few a day, moved back to their days with the statuses a
    # month of deliveries ends in (written straight to the rows: live drops have no driver).
    daily = [f"DAY-{d:02d}-{i}" for d in range(30) for i in range(rng.randrange(3, 15))]
    body = batch(group(*[drop(i, name=f"Customer {i[-4:]}", waybill=f"WB{i}") for i in daily]))
    assert api.bulk(body, tenant.live_key).status_code == 200
    now = timezone.now()
    live = Drop.objects.filter(business=tenant.business, environment="live")
    rows = {row.client_order_id: row for row in live.only("id", "client_order_id")}
    for client_order_id in daily:
        days_ago = int(client_order_id.split("-")[1])
        if days_ago == 0:
            status = rng.choice(["PENDING", "ASSIGNED", "PICKED_UP", "DELIVERED"])
        else:
            status = rng.choices(["DELIVERED", "FAILED", "CANCELLED"], [90, 6, 4])[0]
        row = rows[client_order_id]
        row.created_at = now - timedelta(days=days_ago, minutes=rng.randrange(0, 600))
        row.status = status
    Drop.objects.bulk_update(rows.values(), ["created_at", "status"])

    # One batch of 150 drops over the city; every fifth refused for its phone number.
    drops = [
        drop(
            f"CITY-{i:03d}",
            lat=round(rng.uniform(11.52, 11.62), 5),
            long=round(rng.uniform(104.86, 104.96), 5),
            **({"phone": "not a phone"} if i % REJECTED_EVERY == 0 else {}),
        )
        for i in range(BATCH_DROPS)
    ]
    response = api.bulk(batch(group(*drops), client_batch_id="2026-11-23-morning-run"), key)
    result = response.json()["data"]
    accepted = [o["client_order_id"] for o in result["orders"] if o["status"] == "accepted"]
    _advance(api, key, accepted[:40], "DELIVERED")
    _advance(api, key, accepted[40:55], "PICKED_UP")
    _advance(api, key, accepted[55:60], "FAILED")
    _advance(api, key, accepted[60:80], "ASSIGNED")

    # The order page's drop: picked up, the courier halfway.
    ids = {o["client_order_id"]: o["drop_id"] for o in result["orders"] if "drop_id" in o}
    on_the_way = ids[accepted[41]]
    Drop.objects.filter(pk=on_the_way).update(courier_progress=0.45)
    return Shop(order_id=on_the_way, batch_id=result["batch_id"], endpoint_id=str(endpoint.pk))


@pytest.fixture
def sized(browser, live_server):
    """sized(width): a logged-in page `width` px wide, in its own context."""
    with page_opener(browser, live_server.url, email=EMAIL) as open_page:
        yield open_page


def wait_for_map(page: Page) -> None:
    page.wait_for_selector('#dashboard-map[data-ready="true"]')


@pytest.mark.parametrize("width", WIDTHS)
def test_home_with_charts(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/")
    orders = page.get_by_test_id("orders-chart")
    expect(orders.locator("svg title")).to_have_text("Orders per day, by status")
    expect(orders.locator("rect.seg-delivered").first).to_be_attached()
    expect(page.get_by_test_id("spend-chart").locator("rect.seg-spend").first).to_be_attached()
    expect(page.get_by_test_id("orders-chart-table").locator("tbody tr")).to_have_count(30)
    assert_fits(page, width)
    screenshot(page, f"home-{width}")
    assert_accessible(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_orders_list_with_filters(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/orders/")
    expect(page.get_by_test_id("orders-table")).to_be_visible()
    assert_fits(page, width)
    screenshot(page, f"orders-{width}")
    filters = page.get_by_test_id("order-filters")
    filters.get_by_label("Delivered").check()
    filters.get_by_label("Failed").check()
    filters.get_by_label("Search").fill("DAY-")
    filters.get_by_label("Environment").select_option("live")
    filters.get_by_role("button", name="Search").click()
    table = page.get_by_test_id("orders-table")
    expect(table).to_be_visible()
    statuses = table.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert statuses and set(statuses) <= {"DELIVERED", "FAILED"}
    assert "status=DELIVERED" in page.url and "status=FAILED" in page.url
    assert "environment=live" in page.url
    export = page.get_by_test_id("export-csv")
    assert "status=DELIVERED" in export.get_attribute("href")
    assert_fits(page, width)
    screenshot(page, f"orders-filtered-{width}")
    assert_accessible(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_order_page_with_map(shop, sized, screenshot, width):
    page = sized(width)
    page.goto(f"/orders/{shop.order_id}/")
    wait_for_map(page)
    for pin in (".pin-pickup", ".pin-drop.pin-status-picked_up", ".pin-courier"):
        expect(page.locator(f"#dashboard-map {pin}")).to_have_count(1)
    expect(page.locator("#dashboard-map path.service-area")).to_have_count(1)
    expect(page.get_by_test_id("events").locator("time").first).to_be_attached()
    assert_fits(page, width)
    screenshot(page, f"order-{width}")
    assert_accessible(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_batch_page_with_map_and_rejected_only(shop, sized, screenshot, width):
    page = sized(width)
    page.goto(f"/batches/{shop.batch_id}/")
    wait_for_map(page)
    accepted = BATCH_DROPS - BATCH_DROPS // REJECTED_EVERY
    expect(page.locator("#dashboard-map .pin-drop")).to_have_count(accepted)
    expect(page.locator("#dashboard-map .pin-status-delivered")).to_have_count(40)
    expect(page.locator("#dashboard-map .pin-status-failed")).to_have_count(5)
    expect(page.locator("#dashboard-map .pin-pickup")).to_have_count(1)
    expect(page.get_by_test_id("batch-counts")).to_contain_text("150 drops")
    expect(page.get_by_test_id("batch-results").locator("tbody tr")).to_have_count(100)
    assert_fits(page, width)
    screenshot(page, f"batch-{width}")
    assert_accessible(page)

    page.get_by_test_id("rejected-only").click()
    rows = page.get_by_test_id("batch-results").locator("tbody tr")
    expect(rows).to_have_count(BATCH_DROPS // REJECTED_EVERY)
    expect(rows.first).to_contain_text("INVALID_PHONE")
    positions = rows.evaluate_all("rows => rows.map(r => Number(r.dataset.position))")
    assert positions == sorted(positions) and positions[:2] == [1, 6]
    wait_for_map(page)
    assert_fits(page, width)
    screenshot(page, f"batch-rejected-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_keys_page(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/keys/")
    expect(page.get_by_test_id("keys-table")).to_contain_text("Active")
    assert_fits(page, width)
    screenshot(page, f"keys-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_webhooks_pages(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/webhooks/?environment=sandbox")
    expect(page.get_by_test_id("endpoints-table")).to_contain_text("Order system")
    assert_fits(page, width)
    screenshot(page, f"webhooks-{width}")
    page.goto(f"/webhooks/{shop.endpoint_id}/")
    expect(page.get_by_test_id("deliveries").locator("time").first).to_be_attached()
    assert_fits(page, width)
    screenshot(page, f"webhook-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_wallet_pages(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/wallet/?environment=live")
    contact = page.get_by_test_id("support-email")
    expect(contact).to_have_attribute(
        "href", "mailto:support@example.com?subject=Live%20top-up%20for%20Lotus%20Bakery"
    )
    assert_fits(page, width)
    screenshot(page, f"wallet-live-{width}")
    page.goto("/wallet/?environment=sandbox")
    expect(page.get_by_test_id("ledger").locator("time").first).to_be_attached()
    assert_fits(page, width)
    screenshot(page, f"wallet-sandbox-{width}")


def test_every_other_page_fits_at_360(shop, sized):
    """The pages not pictured above, logged in and out: none scrolls sideways at 360 px."""
    page = sized(360)
    key = ApiKey.objects.filter(business__name="Lotus Bakery").first()
    for path in [
        "/batches/",
        "/sandbox/",
        "/access/",
        "/live/",
        f"/keys/{key.pk}/revoke/",
        f"/webhooks/{shop.endpoint_id}/delete/",
        "/wallet/?environment=sandbox",
    ]:
        page.goto(path)
        assert_fits(page, 360)
    visitor = sized(360, email=None)
    for path in ["/login/", "/signup/", "/password-reset/"]:
        visitor.goto(path)
        assert_fits(visitor, 360)
