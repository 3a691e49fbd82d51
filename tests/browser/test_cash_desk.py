"""A cashier at the hub records a courier's hand-over in the console, in a browser
(docs/operator.md "Cash desk"): the desk lists who holds cash, the form shows what is
expected, a short count needs a note, and the courier's cash in hand follows."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from billing.models import CashKind, CourierCashEntry
from tests.billing.custody_helpers import delivered_by, in_hand
from tests.browser.axe import assert_accessible
from tests.browser.helpers import admin_log_in
from tests.couriers.conftest import make_courier  # noqa: F401 (fixture)
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DOCS = Path(settings.BASE_DIR) / "docs" / "operator"


def for_docs(page, name: str, screenshot) -> None:
    """docs/operator.md's picture of the desk, written only with DOCS_SCREENSHOTS=1."""
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        page.screenshot(path=str(DOCS / f"{name}.png"))
    screenshot(page, name)


def test_a_cashier_records_a_short_hand_over(make_tenant, operator, make_courier, page, screenshot):  # noqa: F811,E501
    open_all_day()  # the live server runs on the real clock
    courier, _ = make_courier("Dara Sok")
    delivered_by(
        Api(), make_tenant(name="Lotus Bakery", live_balance="100.00"), courier, "30.00", "12.50"
    )  # noqa: E501
    page.set_viewport_size({"width": 1280, "height": 800})
    admin_log_in(page)

    page.goto("/admin/billing/couriercashaccount/")
    expect(page.get_by_role("heading", name="Cash desk: couriers holding cash")).to_be_visible()
    row = page.get_by_role("row", name="Dara Sok")
    expect(row).to_contain_text("42.50")
    assert_accessible(page, exclude=[".breadcrumbs"])  # Django admin's own, on every page
    for_docs(page, "cash-desk", screenshot)
    row.get_by_role("link", name="Dara Sok").click()
    page.get_by_role("link", name="Record a hand-over").click()
    page.get_by_label("Counted").fill("40.00")
    page.get_by_label("Receipt").fill("HUB-0001")
    page.get_by_role("button", name="Record the hand-over").click()
    expect(page.locator(".errorlist")).to_contain_text("note")  # short: say why
    assert in_hand(courier) == Decimal("42.50")
    page.get_by_label("Note").fill("Courier counted twice; 2.50 missing.")
    page.get_by_role("button", name="Record the hand-over").click()

    expect(page.locator(".messagelist")).to_contain_text("HUB-0001")
    assert in_hand(courier) == Decimal("0.00")
    kinds = set(CourierCashEntry.objects.values_list("kind", flat=True))
    assert {CashKind.HANDED_OVER, CashKind.SHORTAGE} <= kinds
