"""An operator pays a business out in the console, in a browser (docs/contract.md §18): the
reconciliation, the account's ledger, the payout form, its confirmation, the ledger after."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from billing.models import CodEntry, CodKind
from tests.billing.cod_helpers import delivered_cod
from tests.browser.axe import assert_accessible
from tests.browser.helpers import admin_log_in
from tests.fixtures import Api
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_operator_reconciles_and_records_a_payout(make_tenant, operator, page, screenshot):
    open_all_day()  # the live server runs on the real clock
    shop = make_tenant(name="Phsar Thmei Shoes", live_balance="100.00")
    delivered_cod(Api(), shop, {"SHOE-1": "45.00", "SHOE-2": "15.50"}, environment="live")
    admin_log_in(page)

    page.goto("/admin/billing/codaccount/")
    row = page.get_by_role("row", name="Phsar Thmei Shoes")
    expect(row).to_contain_text("60.50 USD")
    expect(page.get_by_test_id("cod-totals")).to_contain_text("collected today 60.50")
    assert_accessible(page, exclude=[".breadcrumbs"])  # Django admin's own, on every page
    screenshot(page, "cod-reconciliation")
    row.get_by_role("link", name="Phsar Thmei Shoes").click()
    page.get_by_test_id("cod-payout").click()
    page.get_by_label("Amount").fill("60")
    page.get_by_label("Reference").fill("ABA-20261125-7")
    page.get_by_role("button", name="Continue").click()

    confirm = page.get_by_test_id("confirm-payout")
    expect(confirm).to_contain_text("from 60.50 to 0.50")
    assert not CodEntry.objects.filter(kind=CodKind.REMITTED).exists()
    assert_accessible(page, exclude=[".breadcrumbs"])
    screenshot(page, "cod-payout-confirm")
    page.get_by_role("button", name="Confirm payout").click()

    expect(
        page.get_by_text("Paid out 60.00 USD of collected cash, ref. ABA-20261125-7")
    ).to_be_visible()
    expect(page.get_by_text("ABA-20261125-7").last).to_be_visible()
    assert CodEntry.objects.get(kind=CodKind.REMITTED).reference == "ABA-20261125-7"
