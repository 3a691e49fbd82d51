"""Khmer in a real browser (docs/contract.md §26): the recipient's page and the courier app
at 390 px, their Khmer text drawn with the Noto Sans Khmer we serve (loaded, and wider or
narrower than the same text in a box-drawing fallback would be), never sideways-scrolling.
The screenshots of docs/recipients.md and docs/couriers.md are taken here (DOCS_SCREENSHOTS=1).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from accounts.models import Membership
from couriers.services import provision_courier
from tests.browser.helpers import assert_fits, bulk
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import UserFactory, batch, drop, group
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DOCS = Path(settings.BASE_DIR) / "docs"
KHMER_SAMPLE = "ក"
# The served face is loaded for Khmer, and a Khmer word is drawn by it: its width differs
# from the same word in a face without Khmer glyphs, where each character is a box.
FONT_CHECK = """([selector, sample]) => {
  const shown = document.querySelector(selector);
  const text = shown.textContent.trim();
  const measure = (family) => {
    const probe = document.createElement("span");
    probe.textContent = text;
    probe.style.cssText = "position:absolute;visibility:hidden;white-space:nowrap;"
      + "font-size:16px;font-family:" + family;
    document.body.appendChild(probe);
    const width = probe.getBoundingClientRect().width;
    probe.remove();
    return width;
  };
  const loaded = [...document.fonts].some(
    (face) => face.family.replace(/"/g, "") === "Noto Sans Khmer" && face.status === "loaded");
  return {
    text: text,
    family: getComputedStyle(shown).fontFamily,
    check: document.fonts.check('16px "Noto Sans Khmer"', sample),
    loaded: loaded,
    served: measure('"Noto Sans Khmer", monospace'),
    boxes: measure("monospace"),
  };
}"""


def assert_khmer_font(page: Page, selector: str) -> dict:
    page.evaluate("document.fonts.ready")
    page.wait_for_function(
        """() => [...document.fonts].some((face) =>
             face.family.replace(/"/g, "") === "Noto Sans Khmer" && face.status === "loaded")"""
    )
    drawn = page.evaluate(FONT_CHECK, [selector, KHMER_SAMPLE])
    assert any("\u1780" <= c <= "\u17ff" for c in drawn["text"]), drawn
    assert drawn["family"].startswith('"Noto Sans Khmer"'), drawn
    assert drawn["check"] and drawn["loaded"], drawn
    assert abs(drawn["served"] - drawn["boxes"]) > 1, drawn
    return drawn


def for_docs(page: Page, path: Path, screenshot, name: str) -> None:
    """The docs' picture only with DOCS_SCREENSHOTS=1 (a test run leaves the repository as it
    found it); the run's own folder every time."""
    if os.environ.get("DOCS_SCREENSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path))
    screenshot(page, name)


@pytest.fixture
def phone(browser, live_server):
    contexts = []

    def open_phone() -> Page:
        context = browser.new_context(
            base_url=live_server.url, viewport=PHONE, locale="km-KH",
            geolocation={"latitude": 11.5564, "longitude": 104.9282},
            permissions=["geolocation"],
        )  # fmt: skip
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield open_phone
    for context in contexts:
        context.close()


def test_the_recipients_page_in_khmer_draws_with_the_served_font(
    make_tenant, live_server, phone, screenshot
):
    open_all_day()
    shop = make_tenant(name="Lotus Bakery", recipient_language="km")
    body = batch(group({**drop("KM-1", name="Sreymom Chea"), "recipient_language": "km"}))
    status, answer = bulk(live_server.url, shop.sandbox_key, body)
    assert status == 200, answer
    (order,) = answer["data"]["orders"]
    page = phone()
    fonts = []
    page.on("response", lambda r: fonts.append(r) if r.url.endswith(".woff2") else None)
    page.goto(urlsplit(order["tracking_url"]).path)
    expect(page.locator("html")).to_have_attribute("lang", "km")
    expect(page.locator("h1.tracking-status")).to_have_text("កំពុងរង់ចាំអ្នកដឹក")
    assert_khmer_font(page, "h1.tracking-status")
    served = [r.status for r in fonts if "/static/fonts/noto-sans-khmer/" in r.url]
    assert served and set(served) == {200}, served  # ours, from our own static files
    assert_fits(page, PHONE["width"])
    for_docs(page, DOCS / "recipients" / "tracking-km-390.png", screenshot, "tracking-km")
    page.get_by_role("link", name="English").click()
    expect(page.locator("h1.tracking-status")).to_have_text("Waiting for a courier")
    for_docs(page, DOCS / "recipients" / "tracking-en-390.png", screenshot, "tracking-en")


def test_the_courier_app_in_khmer_draws_with_the_served_font(make_tenant, api, phone, screenshot):
    open_all_day()
    shop = make_tenant(name="Lotus Bakery")
    courier = provision_courier(
        name="Dara Sok", phone="+85512340009", vehicle="motorbike", password=PASSWORD
    )
    assigned_drops(
        api, shop, courier,
        {**drop("KM-C1", name="Sreyneang Phan"), "cod": {"amount": "12.50"}},
        drop("KM-C2", name="Kosal Meas"),
    )  # fmt: skip
    page = phone()  # a phone that asks for Khmer (km-KH)
    page.goto("/courier/")
    expect(page.locator("html")).to_have_attribute("lang", "km")
    page.get_by_label("ទូរស័ព្ទ").fill(courier.phone)
    page.get_by_label("ពាក្យសម្ងាត់").fill(PASSWORD)
    page.get_by_role("button", name="ចូល").click()
    expect(page.get_by_role("heading", name="ផ្លូវរបស់អ្នក")).to_be_visible()
    expect(page.locator(".cod").first).to_contain_text("ប្រមូលលុយសុទ្ធ 12.50 USD")
    assert_khmer_font(page, "#route")
    # courier.js speaks Khmer too: its words come from the page's catalogue.
    assert page.evaluate("gettext('Scan code')") == "ស្កេនកូដ"
    assert_fits(page, PHONE["width"])
    for_docs(page, DOCS / "couriers" / "route-km.png", screenshot, "courier-route-km")


def test_the_dashboard_home_in_khmer_fits_a_phone(make_tenant, phone, screenshot):
    shop = make_tenant(name="Lotus Bakery")
    user = UserFactory()
    Membership.objects.create(user=user, business=shop.business, is_owner=True)
    page = phone()
    page.goto("/login/?lang=en")  # the sign-in page in English, then the switch
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="ភាសាខ្មែរ").click()
    expect(page.get_by_role("link", name="ការកម្មង់", exact=True)).to_be_visible()
    assert_khmer_font(page, "details.checklist-card h2")
    assert_fits(page, PHONE["width"])
    screenshot(page, "dashboard-home-km")
