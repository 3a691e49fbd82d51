"""New delivery in a real browser (docs/dashboard.md): a shop books a two-drop delivery with
cash on delivery and a window, its addresses found on the map as typed, one pin dragged (the
quote changes, and the dragged pin is what is booked); at 390 px the form is typed and
booked with the keyboard alone, fits the screen and passes axe. The screenshots of
docs/dashboard.md are written here when DOCS_SCREENSHOTS=1."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from accounts.models import Membership
from dashboard.models import PickupPlace
from orders.models import Drop
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.factories import PHONE, SHOP, UserFactory
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(settings.BASE_DIR) / "docs" / "screenshots"
EMAIL = "owner@lotus.example"


@pytest.fixture
def lotus(make_tenant):
    open_all_day()  # the live server runs on the real clock
    shop = make_tenant(name="Lotus Bakery", live_balance="100.00")
    user = UserFactory(username=EMAIL, email=EMAIL)
    Membership.objects.create(user=user, business=shop.business, is_owner=True)
    PickupPlace.objects.create(
        business=shop.business, name="Lotus Bakery, Street 51", phone=PHONE, **SHOP
    )
    return shop


def for_docs(page: Page, name: str, screenshot) -> None:
    """docs/screenshots/<name>.png only with DOCS_SCREENSHOTS=1; the run's folder always."""
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        page.screenshot(path=str(DOCS / f"{name}.png"), full_page=True)
    screenshot(page, name)


def tomorrow(hour: int) -> str:
    day = datetime.now(ZoneInfo(settings.TIME_ZONE)).date() + timedelta(days=1)
    return f"{day.isoformat()}T{hour:02d}:00"


def row(page: Page, n: int):
    return page.get_by_test_id("drop-row").nth(n)


def fill_drop(page: Page, n: int, *, name: str, phone: str, address: str) -> None:
    drop = row(page, n)
    drop.get_by_label("Recipient name").fill(name)
    drop.get_by_label("Recipient phone").fill(phone)
    drop.get_by_label("Address").fill(address)
    expect(drop.locator("[data-pin-state]")).to_contain_text("Pin found")


def total(page: Page) -> str:
    box = page.get_by_test_id("quote-total")
    expect(box).to_contain_text("Total")
    return box.inner_text()


def test_a_shop_books_two_drops_with_cod_and_a_window_and_drags_a_pin(lotus, new_page, screenshot):
    page = new_page(email=EMAIL)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="New delivery").click()
    expect(page.get_by_role("heading", name="New delivery")).to_be_visible()
    expect(page.locator("#booking-map[data-ready=true]")).to_be_visible()

    fill_drop(
        page, 0, name="Sreyneang Phan", phone="012 345 679", address="Central Market, Phnom Penh"
    )
    first = row(page, 0)
    first.get_by_label("Cash to collect (COD)").fill("12.50")
    first.get_by_label("From", exact=True).fill(tomorrow(10))
    first.get_by_label("To", exact=True).fill(tomorrow(12))
    expect(first.locator("[data-drop-price]")).to_contain_text("Drop 1:")
    one = total(page)

    page.get_by_role("button", name="Add a drop").click()
    fill_drop(page, 1, name="Kosal Meas", phone="+85512345670", address="Royal Palace, Phnom Penh")
    expect(page.get_by_test_id("quote-total")).not_to_have_text(one)
    expect(row(page, 1).locator("[data-drop-price]")).to_contain_text("Drop 2:")
    before = total(page)
    for_docs(page, "dashboard-new-delivery-1280", screenshot)

    # Drag drop 2's pin eastwards: further from the pickup, a higher price.
    marker = page.locator(".leaflet-marker-icon[title='Drop 2']")
    box = marker.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y - 40, steps=8)
    page.mouse.up()
    expect(row(page, 1).locator("[data-pin-state]")).to_contain_text("Pin moved")
    expect(page.get_by_test_id("quote-total")).not_to_have_text(before)
    dragged = float(row(page, 1).locator("input[name='drops-1-long']").input_value())
    assert dragged != pytest.approx(104.9311, abs=1e-4)

    page.get_by_test_id("book").click()
    expect(page.get_by_role("heading", name="Booked")).to_be_visible()
    expect(page.get_by_test_id("booked-drop")).to_have_count(2)
    expect(page.get_by_test_id("labels")).to_be_visible()
    screenshot(page, "booked")
    drops = {d.recipient_name: d for d in Drop.objects.filter(business=lotus.business)}
    assert drops["Kosal Meas"].long == pytest.approx(dragged, abs=1e-6)
    assert drops["Sreyneang Phan"].cod_amount == 12.5
    assert drops["Sreyneang Phan"].window_start is not None


def test_at_390_px_the_form_is_typed_and_booked_with_the_keyboard_and_passes_axe(
    lotus, new_page, screenshot
):
    page = new_page(390, email=EMAIL)
    page.goto("/orders/new/")
    expect(page.get_by_role("heading", name="New delivery")).to_be_visible()
    assert_fits(page, 390)
    assert_accessible(page)

    # The keyboard alone: focus moves with Tab, text is typed, Book is pressed with Enter.
    row(page, 0).get_by_label("Recipient name").focus()
    page.keyboard.type("Dara Sok")
    page.keyboard.press("Tab")
    page.keyboard.type("012345679")
    page.keyboard.press("Tab")
    page.keyboard.type("Aeon Mall Phnom Penh")
    expect(row(page, 0).locator("[data-pin-state]")).to_contain_text("Pin found")
    total(page)
    assert_fits(page, 390)
    assert_accessible(page)
    for_docs(page, "dashboard-new-delivery-390", screenshot)
    page.get_by_test_id("book").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Booked")).to_be_visible()
    assert_fits(page, 390)
    assert_accessible(page)
    assert Drop.objects.filter(business=lotus.business, recipient_name="Dara Sok").count() == 1
