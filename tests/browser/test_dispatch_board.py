"""The dispatch board in a real browser (docs/operator.md "Dispatch board"):
an operator opens it, sees the map with the waiting order's pickup, the couriers online as
pins and each courier's run as a line through its stops, the map refreshes itself, passes
axe, and the operator gives the order to a courier by hand: their run appears on the map.
The screenshot of docs/operator.md is taken here (only with DOCS_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

import console.dispatch
from couriers.services import provision_courier
from dispatch.offers import assign_by_hand
from orders.models import Drop, DropStatus, WindowStatus
from tests.browser.axe import assert_accessible
from tests.browser.helpers import admin_log_in
from tests.couriers.conftest import PASSWORD
from tests.dispatch.conftest import FAR, NEAR, live_order, online_at
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(django_settings.BASE_DIR) / "docs" / "operator"


def test_an_operator_sees_the_board_and_assigns_an_order_by_hand(
    make_tenant, operator, page, screenshot, settings, monkeypatch
):
    settings.TRACKING_TILE_URL = ""  # no tiles: the test never calls out
    monkeypatch.setattr(console.dispatch, "REFRESH_SECONDS", 1)
    open_all_day()  # the live server runs on the real clock
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    urgent = live_order(Api(), shop)
    Drop.objects.filter(order=urgent).update(window_status=WindowStatus.AT_RISK)
    later = live_order(Api(), shop)
    dara = provision_courier(
        name="Dara Sok", phone="+85512340001", vehicle="motorbike", password=PASSWORD
    )
    sophea = provision_courier(
        name="Sophea Chan", phone="+85512340002", vehicle="motorbike", password=PASSWORD
    )
    vanna = provision_courier(
        name="Vanna Kim", phone="+85512340003", vehicle="motorbike", password=PASSWORD
    )
    online_at(dara, NEAR)
    online_at(sophea, FAR)
    online_at(vanna, (FAR[0] - 0.02, FAR[1] + 0.03))  # north-east of the shop
    assign_by_hand(order=live_order(Api(), shop), courier=vanna, actor="operator:1")
    admin_log_in(page)

    page.get_by_test_id("index-dispatch-board").click()
    expect(page.get_by_role("heading", name="Dispatch board")).to_be_visible()
    board_map = page.get_by_test_id("board-map")
    expect(board_map).to_have_attribute("data-ready", "true")
    expect(board_map.locator(".board-pin-risk")).to_have_count(1)
    expect(board_map.locator(".board-pin-pickup")).to_have_count(1)
    expect(board_map.locator(".board-pin-free")).to_have_count(2)
    # Vanna's run: one line from her pin through the pickup and its two drops.
    runs = board_map.locator(".leaflet-overlay-pane path.board-run")
    expect(runs).to_have_count(1)
    expect(board_map).to_have_attribute("data-runs", "1")
    expect(board_map.locator(".board-stop-pickup")).to_have_count(1)
    expect(board_map.locator(".board-stop-drop")).to_have_count(2)
    expect(board_map).to_have_attribute("data-refreshed", "2", timeout=10_000)  # by itself
    rows = page.get_by_test_id("waiting-order")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_id(f"order-{urgent.pk}")  # at risk: first
    expect(rows.first.get_by_test_id("at-risk")).to_be_visible()
    assert_accessible(page, exclude=[".breadcrumbs"])  # Django admin's own, on every page
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS / "dispatch-board.png"), full_page=True)
    screenshot(page, "dispatch-board")

    select = rows.first.get_by_label(f"Courier for {urgent.pickup_name}")
    # Vanna already rides from the same shop to the same street: she costs least, not Dara,
    # who is nearest.
    expect(select.locator("option").first).to_contain_text(
        "Vanna Kim: adds 0 min to 3 stops left, "
    )
    expect(select.locator("option").nth(1)).to_contain_text("Dara Sok: adds")
    select.select_option(value=str(sophea.pk))
    rows.first.get_by_role("button", name="Assign").click()

    expect(page.get_by_text("2 drop(s) assigned to Sophea Chan.")).to_be_visible()
    assert set(Drop.objects.filter(order=urgent).values_list("status", flat=True)) == {
        DropStatus.ASSIGNED
    }
    urgent.refresh_from_db()
    assert urgent.driver_id == sophea.pk
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_id(f"order-{later.pk}")
    sophea_row = page.get_by_test_id("board-courier").filter(has_text="Sophea Chan")
    expect(sophea_row).to_contain_text("on a run")
    expect(sophea_row.get_by_test_id("stops-left")).to_have_text("3")
    expect(board_map.locator(".board-pin-on_route")).to_have_count(2)
    expect(runs).to_have_count(2)  # one line per courier with a run
    screenshot(page, "dispatch-board-assigned")


def test_the_maps_caption_reads_the_time_as_the_page_does(
    make_tenant, operator, browser, live_server, settings
):
    """In the service's zone and 24-hour clock ("05:10:13 UTC+7"), whatever the browser's
    own zone and locale: never "10:10:13 PM" beside the page's time."""
    settings.TRACKING_TILE_URL = ""
    open_all_day()
    live_order(Api(), make_tenant(name="Lotus Bakery", live_balance="100.00"))
    context = browser.new_context(
        base_url=live_server.url, timezone_id="America/New_York", locale="en-US"
    )
    try:
        page = context.new_page()
        admin_log_in(page)
        page.goto("/admin/dispatch/board/")
        expect(page.get_by_test_id("board-map")).to_have_attribute("data-ready", "true")

        as_of = page.get_by_test_id("board-counts").locator(".console-quiet").inner_text()
        caption = page.get_by_test_id("board-map-status").inner_text()
    finally:
        context.close()

    shown = as_of.removeprefix("As of ").removesuffix(".")
    assert re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d{2}:\d{2}:\d{2}\s+UTC\+7", shown), shown
    assert caption.startswith(f"Map as of {shown}: 1 waiting"), (caption, shown)
