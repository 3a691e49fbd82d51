"""Orders from a spreadsheet in a real browser: a member downloads the
template, uploads a file with good and bad rows and reads the result row by row, at 360 px
and 1280 px wide, with an accessibility pass on the upload page and on the result."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from accounts.models import Membership
from orders.models import Batch, Drop
from tests.browser.axe import assert_accessible
from tests.browser.helpers import log_in
from tests.factories import UserFactory
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEMPLATE = Path(settings.BASE_DIR) / "docs" / "sample-orders.csv"
NARROW = {"width": 360, "height": 780}
WIDE = {"width": 1280, "height": 800}


def no_page_scroll(page: Page) -> None:
    """Nothing wider than the screen: a wide table scrolls inside its own box."""
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def with_bad_rows(template: bytes) -> bytes:
    """The template's three rows with fresh ids, and three rows that are rejected; the
    pickups interleave, so file order is not the batch's submission order."""
    rows = list(csv.DictReader(io.StringIO(template.decode("utf-8-sig"))))
    good = [row | {"client_order_id": row["client_order_id"] + "-B"} for row in rows]
    bad = [
        good[0] | {"client_order_id": "BAD-PHONE", "recipient_phone": "012 345 678"},
        good[0]
        | {"client_order_id": "BAD-PLACE", "dropoff_lat": "13.4125", "dropoff_long": "103.8670"},
        good[2]
        | {"client_order_id": "BAD-TIME", "pickup_scheduled_at": "2020-01-01T10:00:00+07:00"},
    ]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows([good[0], good[2], bad[0], good[1], bad[1], bad[2]])
    return out.getvalue().encode()


def test_a_member_uploads_a_spreadsheet_and_reads_the_result_by_row(
    make_tenant, new_page, tmp_path, screenshot
):
    open_all_day()  # the live server runs on the real clock
    shop = make_tenant(name="Lotus Bakery")
    user = UserFactory(username="owner@lotus.example", email="owner@lotus.example")
    Membership.objects.create(user=user, business=shop.business, is_owner=True)
    page = new_page()
    log_in(page, "owner@lotus.example")

    # The upload page, wide and narrow.
    page.goto("/orders/upload/")
    expect(page.get_by_role("heading", name="Upload orders from a spreadsheet")).to_be_visible()
    assert_accessible(page)
    screenshot(page, "upload-1280")
    page.set_viewport_size(NARROW)
    no_page_scroll(page)
    assert_accessible(page)
    screenshot(page, "upload-360")
    page.set_viewport_size(WIDE)

    # The template downloads as it is in docs/.
    with page.expect_download() as downloading:
        page.get_by_test_id("template-link").click()
    download = downloading.value
    assert download.suggested_filename == "sample-orders.csv"
    template = Path(download.path()).read_bytes()
    assert template == TEMPLATE.read_bytes()

    # A file with good and bad rows.
    upload = tmp_path / "orders.csv"
    upload.write_bytes(with_bad_rows(template))
    page.get_by_label("CSV file", exact=True).set_input_files(str(upload))
    page.get_by_label("Sandbox").check()
    page.get_by_role("button", name="Upload and send").click()

    result = page.get_by_test_id("upload-result")
    expect(result.get_by_test_id("upload-counts")).to_have_text(
        "6 rows: 3 accepted, 3 rejected. Open the batch"
    )
    rows = page.get_by_test_id("upload-rows").locator("tbody tr")
    expect(rows).to_have_count(6)
    expect(rows.nth(1)).to_contain_text("SHOP-1003-B")
    expect(rows.nth(2)).to_contain_text("BAD-PHONE")
    expect(rows.nth(2)).to_contain_text("INVALID_PHONE")
    expect(rows.nth(4)).to_contain_text("OUT_OF_SERVICE_AREA")
    expect(rows.nth(5)).to_contain_text("SCHEDULE_IN_PAST")
    expect(rows.nth(0).get_by_role("link", name="Tracking page")).to_be_visible()
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(6)] == [
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
    ]
    pin = Drop.objects.get(business=shop.business, client_order_id="SHOP-1001-B").dropoff_pin
    expect(rows.nth(0)).to_contain_text(pin)
    assert_accessible(page)
    screenshot(page, "result-1280")
    page.set_viewport_size(NARROW)
    no_page_scroll(page)
    assert_accessible(page)
    screenshot(page, "result-360")
    page.set_viewport_size(WIDE)

    # The same file again: the first answer, nothing new.
    page.get_by_label("CSV file", exact=True).set_input_files(str(upload))
    page.get_by_role("button", name="Upload and send").click()
    expect(page.get_by_test_id("replayed")).to_contain_text("This file was already sent on")
    assert Batch.objects.filter(business=shop.business).count() == 1
    assert Drop.objects.filter(business=shop.business).count() == 3

    # A file the bulk shape refuses: named by row and column, nothing sent.
    broken = tmp_path / "broken.csv"
    broken.write_bytes(upload.read_bytes().replace(b"2020-01-01T10:00:00+07:00", b"next Tuesday"))
    page.get_by_label("CSV file", exact=True).set_input_files(str(broken))
    page.get_by_role("button", name="Upload and send").click()
    errors = page.get_by_test_id("upload-errors")
    expect(errors).to_contain_text(
        "Row 7, column pickup_scheduled_at: Must be an ISO 8601 timestamp with a time zone."
    )
    assert_accessible(page)
    screenshot(page, "errors-1280")
    assert Batch.objects.filter(business=shop.business).count() == 1
