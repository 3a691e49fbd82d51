"""The dashboard in Khmer in a real browser (docs/contract.md §26, docs/dashboard.md
"Language"): after the switch, New delivery and the orders list speak Khmer, and none of
their own labels is left in English. The screenshots of docs/dashboard.md are taken here
(DOCS_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from accounts.models import Membership
from dashboard.models import PickupPlace
from tests.browser.helpers import bulk
from tests.factories import PHONE, SHOP, UserFactory, batch, drop, group
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(settings.BASE_DIR) / "docs" / "screenshots"
EMAIL = "owner@lotus.example"
# What a page's labels may keep in Latin letters: what a program reads or a shop types as it
# is (contract §26), the service time zone's name, and the environments' own words beside
# their Khmer names ("សាកល្បង (sandbox)").
KEPT = {"PDF", "CSV", "COD", "PIN", "USD", "JavaScript", "sandbox", "live"}
KEPT |= {"UTC", *re.findall(r"[A-Za-z]+", settings.TIME_ZONE)}
# The page's own labels, headings and buttons in <main>, the orders filter's status boxes
# (the statuses' names) and the statuses and environments the rows show.
LABELS = """() => [...document.querySelectorAll(
    "main h1, main h2, main label, main legend, main button, main th, main summary, " +
    "main .status, main .env")]
  .filter((e) => e.offsetParent !== null)
  .map((e) => e.innerText.trim())"""


@pytest.fixture
def lotus(make_tenant, live_server):
    open_all_day()  # the live server runs on the real clock
    shop = make_tenant(name="Lotus Bakery", recipient_language="km")
    user = UserFactory(username=EMAIL, email=EMAIL)
    Membership.objects.create(user=user, business=shop.business, is_owner=True)
    PickupPlace.objects.create(
        business=shop.business, name="Lotus Bakery, Street 51", phone=PHONE, **SHOP
    )
    status, answer = bulk(live_server.url, shop.sandbox_key, batch(group(drop("KM-1"))))
    assert status == 200, answer
    return shop


def english_left(page: Page) -> list[str]:
    words = []
    for text in page.evaluate(LABELS):
        text = re.sub(r"\w+(?:_\w+)+", " ", text)  # an API field name: client_order_id
        words += [w for w in re.findall(r"[A-Za-z][A-Za-z']+", text) if w not in KEPT]
    return words


def for_docs(page: Page, name: str, screenshot) -> None:
    """docs/screenshots/<name>.png only with DOCS_SCREENSHOTS=1; the run's folder always."""
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        page.screenshot(path=str(DOCS / f"{name}.png"), full_page=True)
    screenshot(page, name)


def test_new_delivery_and_the_orders_in_khmer_leave_no_label_in_english(
    lotus, new_page, screenshot
):
    page = new_page(email=EMAIL)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="New delivery").click()
    page.get_by_role("link", name="ភាសាខ្មែរ").click()
    expect(page.locator("html")).to_have_attribute("lang", "km")
    expect(page.get_by_role("heading", name="ការដឹកថ្មី", exact=True)).to_be_visible()
    row = page.get_by_test_id("drop-row").first
    expect(row.get_by_label("ឈ្មោះអ្នកទទួល")).to_be_visible()
    expect(row.get_by_label("ភាសារបស់អ្នកទទួល")).to_have_value("km")
    expect(page.locator("#booking-map[data-ready=true]")).to_be_visible()
    assert english_left(page) == []
    for_docs(page, "dashboard-new-delivery-km-1280", screenshot)

    page.get_by_role("navigation", name="មឺនុយមេ").get_by_role("link", name="ការកម្មង់").click()
    expect(page.get_by_role("heading", name="ការកម្មង់", exact=True)).to_be_visible()
    expect(page.get_by_test_id("orders-table")).to_contain_text("KM-1")
    expect(page.get_by_role("button", name="ស្វែងរក")).to_be_visible()
    assert english_left(page) == []
    for_docs(page, "dashboard-orders-km-1280", screenshot)


def test_new_delivery_s_script_speaks_khmer_as_one_types(lotus, new_page, live_server):
    """The pin, each drop's price and the total, written by static/dashboard/booking.js with
    the words of /jsi18n/km/ (docs/dashboard.md "Language")."""
    page = new_page(email=EMAIL)
    cookie = {"name": settings.LANGUAGE_COOKIE_NAME, "value": "km", "url": live_server.url}
    page.context.add_cookies([cookie])
    page.goto(f"{live_server.url}/orders/new/")
    page.get_by_label("សាកល្បង (sandbox)").check()  # the live wallet is empty
    row = page.get_by_test_id("drop-row").first
    row.get_by_label("ឈ្មោះអ្នកទទួល").fill("Dara")
    row.get_by_label("ទូរស័ព្ទអ្នកទទួល").fill("+85512345679")
    row.get_by_label("អាសយដ្ឋាន").fill("Royal Palace, Phnom Penh")

    expect(row.locator("[data-pin-state]")).to_contain_text("បានរកឃើញទីតាំងនៅ 11.")
    expect(row.locator("[data-drop-price]")).to_contain_text("កន្លែងដឹកទី 1៖ ")
    expect(page.get_by_test_id("quote-total")).to_contain_text("សរុប ")
    expect(page.get_by_test_id("quote-total")).not_to_contain_text("Total")
