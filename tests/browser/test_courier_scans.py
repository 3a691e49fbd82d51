"""Scans and signatures in the courier app, in a real browser at 390 px (docs/couriers.md): the
label's code typed where the browser reads no barcodes (headless Chromium has no
BarcodeDetector), the recipient's signature drawn with the mouse on the signing box, sent as a
PNG with the move, and kept in the phone's queue when there is no network; axe clean."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from couriers.pages import MOVE_MESSAGES
from couriers.services import provision_courier
from orders.models import Drop, DropStatus, ProofMethod
from tests.browser.axe import assert_accessible
from tests.browser.helpers import assert_fits
from tests.browser.test_courier_app import for_docs, sign_in, stop_of, wait_until
from tests.couriers.conftest import PASSWORD
from tests.couriers.conftest import assigned_drops as assigned
from tests.factories import drop
from tests.reliability.batch_hold import open_all_day
from tracking.proof import PNG_MAGIC

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

S = DropStatus
PHONE = {"width": 390, "height": 844}
BOTH = {"scan": True, "signature": True}


@pytest.fixture
def phone(browser, live_server):
    """phone(): a new 390 px phone, its own cookies and storage."""
    contexts = []

    def open_phone(**options) -> Page:
        context = browser.new_context(base_url=live_server.url, viewport=PHONE, **options)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_phone
    for context in contexts:
        context.close()


@pytest.fixture
def courier(transactional_db):
    return provision_courier(
        name="Dara Sok", phone="+85512340001", vehicle="motorbike", password=PASSWORD
    )


def sign_on(page: Page, pad_selector: str) -> None:
    """A signature drawn with the mouse: down, a zigzag, up."""
    # Mid-screen: at the screen's foot the status dock would be over it.
    page.locator(pad_selector).evaluate("pad => pad.scrollIntoView({block: 'center'})")
    box = page.locator(pad_selector).bounding_box()
    x, y = box["x"] + 20, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for step in range(1, 9):
        page.mouse.move(x + step * 30, y + (25 if step % 2 else -25), steps=3)
    page.mouse.up()


def test_a_typed_scan_and_a_drawn_signature_deliver_the_drop(
    make_tenant, api, courier, phone, screenshot
):
    open_all_day()
    (one,) = assigned(
        api, make_tenant(name="Lotus Bakery"), courier,
        {**drop("SG-1", name="Kosal Meas"), "dropoff_verification": BOTH},
    )  # fmt: skip
    page = phone()
    sign_in(page, courier)
    stop = stop_of(page, one)
    assert not page.evaluate("'BarcodeDetector' in window")
    expect(stop.get_by_role("button", name="Scan code")).to_be_hidden()  # typed here

    stop.get_by_label("Code on the parcel's label").fill("WRONG123")
    stop.get_by_role("button", name="Picked up").click()
    expect(stop.get_by_role("alert")).to_have_text(MOVE_MESSAGES["SCAN_MISMATCH"])
    assert Drop.objects.get(pk=one.pk).status == S.ASSIGNED
    stop.get_by_label("Code on the parcel's label").fill(one.short_code.lower())
    stop.get_by_role("button", name="Picked up").click()
    expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")

    stop = stop_of(page, one)
    stop.get_by_label("Code on the parcel's label").fill(one.short_code)
    stop.get_by_role("button", name="Delivered").click()
    expect(stop.get_by_role("alert")).to_have_text(MOVE_MESSAGES["SIGNATURE_REQUIRED"])

    pad = f"#stop-{one.pk} [data-signature-pad]"
    expect(stop.get_by_role("img", name="Recipient's signature")).to_be_visible()
    sign_on(page, pad)
    assert page.get_attribute(pad, "data-signed") == "true"
    stop.get_by_role("button", name="Clear").click()
    assert page.get_attribute(pad, "data-signed") is None
    sign_on(page, pad)
    assert_fits(page, PHONE["width"])
    for_docs(page, "signature", screenshot, part=stop)
    stop.get_by_role("button", name="Delivered").click()
    expect(page.get_by_role("heading", name="No route yet")).to_be_visible()

    delivered = Drop.objects.get(pk=one.pk)
    assert delivered.status == S.DELIVERED and delivered.pod_method == ProofMethod.SIGNATURE
    assert delivered.pod_signature.read().startswith(PNG_MAGIC)


def test_a_signed_delivery_made_offline_waits_with_its_signature(make_tenant, api, courier, phone):
    open_all_day()
    (one,) = assigned(api, make_tenant(), courier, {**drop("SG-2"), "dropoff_verification": BOTH})
    page = phone()
    sign_in(page, courier)
    stop = stop_of(page, one)
    stop.get_by_label("Code on the parcel's label").fill(one.short_code)
    stop.get_by_role("button", name="Picked up").click()
    expect(stop_of(page, one).locator(".status")).to_have_text("Picked up")

    page.context.set_offline(True)
    stop = stop_of(page, one)
    stop.get_by_label("Code on the parcel's label").fill(one.short_code)
    sign_on(page, f"#stop-{one.pk} [data-signature-pad]")
    stop.get_by_role("button", name="Delivered").click()
    expect(stop.get_by_text("Waiting to send: Delivered")).to_be_visible()
    queued = page.evaluate(
        "JSON.parse(localStorage.getItem(Object.keys(localStorage)"
        ".find((k) => k.startsWith('courier-moves-'))))"
    )
    assert queued[0]["signature"].startswith("data:image/png;base64,")
    assert queued[0]["fields"]["scan"] == one.short_code
    assert Drop.objects.get(pk=one.pk).status == S.PICKED_UP

    page.context.set_offline(False)
    wait_until("the queued delivery made", lambda: Drop.objects.get(pk=one.pk).pod_signature)
    delivered = Drop.objects.get(pk=one.pk)
    assert delivered.status == S.DELIVERED and delivered.pod_method == ProofMethod.SIGNATURE
    assert delivered.pod_signature.read().startswith(PNG_MAGIC)


def test_the_scan_and_signature_controls_pass_axe_at_390_px(make_tenant, api, courier, phone):
    open_all_day()
    (one,) = assigned(api, make_tenant(), courier, {**drop("AX-3"), "dropoff_verification": BOTH})
    page = phone(bypass_csp=True)  # axe goes in as a script of its own
    sign_in(page, courier)
    stop = stop_of(page, one)
    stop.get_by_label("Code on the parcel's label").fill(one.short_code)
    stop.get_by_role("button", name="Picked up").click()
    expect(stop_of(page, one).get_by_role("img", name="Recipient's signature")).to_be_visible()
    assert_accessible(page)
    assert_fits(page, PHONE["width"])
