"""An order's promise and its edit in a real browser, 390 px and 1280 px wide.

A shop's order with a drop-off window and notes for the courier: the order page shows them,
Edit opens the form (the location, window and action disabled once the order is picked up),
new notes and a new phone are saved through the API's edit, and the page shows the new
values. Each page must fit its window, pass axe, and is saved as a screenshot.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Membership
from events.models import Event
from orders.models import Drop
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits, page_opener
from tests.factories import UserFactory, batch, drop, group
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL = "owner@mekong.example"
NEW_PHONE = "+85512345670"


@pytest.fixture
def shop(make_tenant):
    """Mekong Books, with one sandbox order due this afternoon and one already picked up."""
    open_all_day()  # the live server runs on the real clock
    tenant = make_tenant(name="Mekong Books", sandbox_balance="500.00")
    user = UserFactory(username=EMAIL, email=EMAIL)
    Membership.objects.create(user=user, business=tenant.business, is_owner=True)
    start = (timezone.now() + timedelta(hours=3)).replace(second=0, microsecond=0)
    window = {"start": start.isoformat(), "end": (start + timedelta(hours=2)).isoformat()}
    drops = [
        {**drop(f"BOOK-{n}", name="Sokha"), "dropoff_window": window, "notes": "Gate code 42"}
        for n in (1, 2)
    ]
    api = Api()
    response = api.bulk(batch(group(*drops)), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    ids = {o["client_order_id"]: o["drop_id"] for o in response.json()["data"]["orders"]}
    moved = api.post(
        "/sandbox/orders/advance",
        {"identifiers": ["BOOK-2"], "to": "PICKED_UP"},
        tenant.sandbox_key,
    )
    assert moved.status_code == 200, moved.content
    return ids


@pytest.fixture
def sized(browser, live_server):
    with page_opener(browser, live_server.url, email=EMAIL) as open_page:
        yield open_page


def facts(page: Page):
    return page.locator(".facts").first


@pytest.mark.parametrize("width", [390, 1280])
def test_the_order_page_shows_the_promise_and_an_edit_changes_it(shop, sized, screenshot, width):
    drop_id = shop["BOOK-1"]
    page = sized(width)
    page.goto(f"/orders/{drop_id}/")
    expect(page.get_by_test_id("dropoff-window")).to_contain_text("UTC+7")
    expect(page.get_by_test_id("window-status")).to_have_text("On track")
    expect(page.get_by_test_id("notes")).to_have_text("Gate code 42")
    expect(page.get_by_test_id("undeliverable-action")).to_have_text("Return to the pickup")
    assert_fits(page, width)
    screenshot(page, f"order-{width}")

    page.get_by_test_id("edit-order").click()
    expect(page.get_by_role("heading", name="Edit BOOK-1")).to_be_visible()
    form = page.get_by_test_id("order-edit")
    expect(form.get_by_label("Notes for the courier")).to_have_value("Gate code 42")
    expect(form.get_by_label("Latitude")).to_be_enabled()  # pending: the location may change
    form.get_by_label("Notes for the courier").fill("Gate code 42, call on arrival")
    form.get_by_label("Phone").fill(NEW_PHONE)
    assert_fits(page, width)
    screenshot(page, f"edit-{width}")
    assert_accessible(page)
    form.get_by_role("button", name="Save changes").click()

    expect(page.get_by_role("status")).to_have_text("BOOK-1 is saved: phone and notes changed.")
    expect(page.get_by_test_id("notes")).to_have_text("Gate code 42, call on arrival")
    expect(facts(page)).to_contain_text(f"Sokha, {NEW_PHONE}")
    assert_fits(page, width)
    screenshot(page, f"order-edited-{width}")
    saved = Drop.objects.get(pk=drop_id)
    assert (saved.notes, saved.recipient_phone) == ("Gate code 42, call on arrival", NEW_PHONE)
    assert [e.data["changed"] for e in Event.objects.filter(type="order.updated")] == [
        ["dropoff.phone", "notes"]
    ]


@pytest.mark.parametrize("width", [390, 1280])
def test_past_pickup_the_form_says_why_the_location_is_fixed_and_refuses_in_words(
    shop, sized, screenshot, width
):
    page = sized(width)
    page.goto(f"/orders/{shop['BOOK-2']}/edit/")
    form = page.get_by_test_id("order-edit")
    for label in ("Address", "Latitude", "Longitude", "From", "To", "If it cannot be delivered"):
        expect(form.get_by_label(label, exact=True)).to_be_disabled()
    expect(page.get_by_test_id("why-fixed")).to_have_text(
        "Changes only before pickup (scheduled or pending); it is picked up."
    )

    form.get_by_label("Phone").fill("012 345 678")  # no country code: the API's rule refuses it
    form.get_by_role("button", name="Save changes").click()

    refused = page.get_by_test_id("edit-refused")
    expect(refused).to_contain_text("Nothing was saved (INVALID_PHONE)")
    expect(form.get_by_label("Phone")).to_have_value("012 345 678")
    expect(page.locator(".field.has-error")).to_contain_text("Phone")
    assert_fits(page, width)
    screenshot(page, f"edit-refused-{width}")
    assert_accessible(page)
    assert Drop.objects.get(pk=shop["BOOK-2"]).recipient_phone != "012 345 678"
