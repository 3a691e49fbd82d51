"""Proof of delivery by PIN in the operator console, in a real browser (docs/contract.md §14)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from orders.models import Drop, DropStatus
from tests.browser.helpers import PASSWORD, admin_log_in
from tests.operators import ensure_operator_groups
from tests.tracking.helpers import drop_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PIN = "4821"
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 360, "height": 800}


@pytest.fixture
def dispatcher(transactional_db) -> str:
    """A staff login in the Operators group (which may dispatch drops), not a superuser."""
    ensure_operator_groups()
    user = get_user_model().objects.create_user("dispatcher", password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name="Operators"))
    return "dispatcher"


def shows_pin(page: Page) -> bool:
    return re.search(rf"(?<![\w-]){PIN}(?![\w-])", page.content()) is not None


def start_mark_delivered(page: Page, client_order_id: str) -> None:
    page.goto("/admin/orders/drop/?status__exact=PICKED_UP")
    row = page.get_by_role("row", name=re.compile(client_order_id))
    row.get_by_role("checkbox").check()
    page.locator("select[name=action]").select_option("mark_delivered")
    page.get_by_role("button", name="Go").click()
    expect(page.get_by_role("heading", name="PINs from the recipients")).to_be_visible()


def test_an_operator_delivers_a_drop_with_its_pin(
    make_tenant, dispatcher, page, live_server, screenshot
):
    business = make_tenant(name="Kep Crab").business
    drop = drop_in(DropStatus.PICKED_UP, business=business, client_order_id="CRAB-7")
    Drop.objects.filter(pk=drop.pk).update(dropoff_pin=PIN)
    admin_log_in(page, dispatcher)

    # The drop's page says a PIN is asked for, and never shows it.
    page.goto(f"/admin/orders/drop/{drop.pk}/change/")
    expect(page.locator(".field-pin_required .readonly")).to_have_text("yes")
    assert not shows_pin(page)
    screenshot(page, "drop-asks-for-pin")

    # 1. Mark delivered: the form asks for the PIN, with a numeric keyboard on phones.
    start_mark_delivered(page, "CRAB-7")
    pin_box = page.get_by_label("PIN for CRAB-7")
    expect(pin_box).to_have_attribute("inputmode", "numeric")
    expect(pin_box).to_have_attribute("autocomplete", "off")
    expect(pin_box).to_have_value("")
    assert not shows_pin(page)
    screenshot(page, "deliver-form")
    page.set_viewport_size(NARROW)
    screenshot(page, "deliver-form-360")
    page.set_viewport_size(WIDE)

    # 2. A wrong PIN: refused, counted, and the drop stays picked up.
    pin_box.fill("1111")
    page.get_by_role("button", name="Mark delivered").click()
    expect(page.get_by_text("Wrong PIN for CRAB-7 (1 of 3): not delivered.")).to_be_visible()
    assert not shows_pin(page)
    screenshot(page, "wrong-pin")
    drop.refresh_from_db()
    assert (drop.status, drop.pin_attempts) == (DropStatus.PICKED_UP, 1)

    # 3. The right PIN: delivered, with the PIN as its proof.
    start_mark_delivered(page, "CRAB-7")
    expect(page.get_by_label("PIN for CRAB-7")).to_have_value("")
    page.get_by_label("PIN for CRAB-7").fill(PIN)
    page.get_by_label("Received by").fill("Dara")
    page.get_by_role("button", name="Mark delivered").click()
    expect(page.get_by_text("1 drop(s) delivered.")).to_be_visible()
    screenshot(page, "delivered")
    drop.refresh_from_db()
    assert (drop.status, drop.pod_method, drop.pod_received_by) == (
        DropStatus.DELIVERED,
        "pin",
        "Dara",
    )

    page.goto(f"/admin/orders/drop/{drop.pk}/change/")
    expect(page.locator(".field-pod_method .readonly")).to_have_text("PIN")
    assert not shows_pin(page)
    screenshot(page, "drop-delivered")
