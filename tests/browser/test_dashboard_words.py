"""The dashboard as a newcomer meets it, in a real browser at 390 and 1280 px.

No label is cut mid-word on any page ("accept|ed", "Resen|d", "ENVIRONM|ENT"): each word's
text is measured as drawn and must sit on one line. The home page opens on the sandbox a
live account has been testing in; the order page cancels after a confirmation and shows the
delivery photo; the sandbox console's PIN box sits by its words.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from playwright.sync_api import expect

from accounts.models import Stage
from events.endpoints import create_endpoint
from events.models import DeliveryAttempt
from orders.models import Drop, ProofMethod
from tests.browser.helpers import assert_fits, bulk, page_opener
from tests.dashboard.test_webhooks import failed_delivery
from tests.factories import UserFactory, batch, drop, group
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [390, 1280]
EMAIL = "owner@lotus.example"
PHOTO = Path(__file__).resolve().parents[2] / "tracking" / "assets" / "sandbox-proof.png"

# Every word of the page's visible text (ids, URLs and codes aside: machine strings, no words
# in them), measured as drawn: a word on two lines is a word cut in two.
SPLIT_WORDS = """() => {
  const skip = ".sr-only, svg, script, style, code, .mono, .leaflet-container";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  const split = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const holder = node.parentElement;
    if (!holder || holder.closest(skip) || !holder.getClientRects().length) continue;
    for (const word of node.data.matchAll(/[A-Za-z]{2,}/g)) {
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0)
        .map((r) => Math.round(r.top)));
      if (lines.size > 1) {
        const where = [holder.tagName.toLowerCase(), ...holder.classList].join(".");
        split.push(`${word[0]} (${where})`);
      }
    }
  }
  return split;
}"""


@pytest.fixture
def shop(make_tenant, live_server, settings, tmp_path) -> dict:
    """Lotus Bakery, live, testing in the sandbox: a batch with every kind of refusal, a
    delivered drop with its photo, a drop to cancel, a webhook endpoint that keeps failing."""
    open_all_day()
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    tenant = make_tenant(name="Lotus Bakery", sandbox_balance="500.00")
    tenant.business.stage = Stage.LIVE
    tenant.business.save(update_fields=["stage"])
    user = UserFactory(username=EMAIL, email=EMAIL)
    tenant.business.memberships.create(user=user, is_owner=True)
    drops = [
        drop("LOTUS-DELIVERED", name="Sreymom Chea"),
        drop("LOTUS-TO-CANCEL", name="Dara Sok"),
        drop("LOTUS-BAD-PHONE", phone="not a phone"),
        drop("LOTUS-FAR-AWAY", lat=13.3633, long=103.8564),
    ]
    body = batch(group(*drops), client_batch_id="2026-11-23-morning-run")
    status, answer = bulk(live_server.url, tenant.sandbox_key, body)
    assert status == 200, answer
    ids = {o["client_order_id"]: o.get("drop_id") for o in answer["data"]["orders"]}
    photo = default_storage.save("proof/door.png", ContentFile(PHOTO.read_bytes()))
    Drop.objects.filter(pk=ids["LOTUS-DELIVERED"]).update(
        status="DELIVERED",
        pod_method=ProofMethod.PHOTO,
        pod_received_by="Her neighbour",
        pod_photo=photo,
    )
    endpoint = create_endpoint(
        business=tenant.business,
        environment="sandbox",
        url="http://127.0.0.1:9/hooks/order-system",
        event_types=["*"],
        description="Order system",
    ).endpoint
    delivery = failed_delivery(endpoint)
    DeliveryAttempt.objects.filter(delivery=delivery).update(
        error="connection refused", response_excerpt='{"error": "temporarily unavailable"}'
    )
    return {
        "delivered": ids["LOTUS-DELIVERED"],
        "to_cancel": ids["LOTUS-TO-CANCEL"],
        "batch_id": answer["data"]["batch_id"],
        "endpoint_id": str(endpoint.pk),
        "delivery_id": delivery.pk,
    }


@pytest.fixture
def sized(browser, live_server):
    with page_opener(browser, live_server.url, email=EMAIL) as open_page:
        yield open_page


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_cuts_a_word_in_two(shop, sized, screenshot, width):
    page = sized(width)
    pages = {
        "home": "/",
        "orders": "/orders/",
        "order": f"/orders/{shop['delivered']}/",
        "batches": "/batches/",
        "batch": f"/batches/{shop['batch_id']}/",
        "keys": "/keys/",
        "webhooks": "/webhooks/?environment=sandbox",
        "webhook": f"/webhooks/{shop['endpoint_id']}/",
        "delivery": f"/webhooks/{shop['endpoint_id']}/deliveries/{shop['delivery_id']}/",
        "wallet": "/wallet/?environment=sandbox",
        "sandbox": "/sandbox/",
    }
    cut = {}
    for name, path in pages.items():
        page.goto(path)
        expect(page.locator("main h1").first).to_be_visible()
        if words := page.evaluate(SPLIT_WORDS):
            cut[name] = words
        assert_fits(page, width)
        screenshot(page, f"{name}-{width}")
    assert cut == {}


def test_home_opens_on_the_sandbox_where_the_activity_is(shop, sized, screenshot):
    page = sized(1280)
    page.goto("/")
    tabs = page.get_by_role("navigation", name="Environment of the charts")
    expect(tabs.get_by_role("link", name="Sandbox")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("orders-chart").locator("rect.seg").first).to_be_attached()
    screenshot(page, "home-on-sandbox")
    tabs.get_by_role("link", name="Live").click()
    page.goto("/")  # and it remembers the choice
    expect(tabs.get_by_role("link", name="Live")).to_have_attribute("aria-current", "page")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_order_page_cancels_after_asking(shop, sized, screenshot, width):
    page = sized(width)
    page.goto(f"/orders/{shop['to_cancel']}/")
    page.get_by_test_id("cancel-order").click()
    expect(page.get_by_role("heading", name="Cancel LOTUS-TO-CANCEL?")).to_be_visible()
    assert_fits(page, width)
    screenshot(page, f"cancel-confirm-{width}")
    assert Drop.objects.get(pk=shop["to_cancel"]).status == "PENDING"

    page.get_by_role("button", name="Cancel the order").click()

    expect(page.get_by_test_id("drop-status")).to_have_text("Cancelled")
    expect(page.get_by_role("status")).to_contain_text("LOTUS-TO-CANCEL is cancelled")
    expect(page.get_by_test_id("cancel-order")).to_have_count(0)
    assert Drop.objects.get(pk=shop["to_cancel"]).status == "CANCELLED"
    screenshot(page, f"cancelled-{width}")


def test_the_order_page_shows_the_delivery_photo(shop, sized, screenshot):
    page = sized(1280)
    page.goto(f"/orders/{shop['delivered']}/")
    proof = page.get_by_test_id("proof")
    expect(proof).to_contain_text("A photo taken at delivery.")
    expect(proof).to_contain_text("Received by Her neighbour")
    photo = page.get_by_test_id("proof-photo")
    expect(photo).to_be_visible()
    page.wait_for_function("document.querySelector('[data-testid=proof-photo]').naturalWidth > 0")
    screenshot(page, "order-proof-photo")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pin_box_sits_by_its_words(shop, sized, screenshot, width):
    page = sized(width)
    page.goto("/sandbox/")
    box = page.get_by_label("Ask for a delivery PIN").bounding_box()
    words = page.locator("label", has_text="Ask for a delivery PIN").bounding_box()
    assert 0 <= words["x"] - (box["x"] + box["width"]) <= 12, (box, words)
    middle = lambda r: r["y"] + r["height"] / 2  # noqa: E731
    assert abs(middle(box) - middle(words)) <= 4, (box, words)
    page.get_by_label("Client order id").fill("NOPE-123")
    page.get_by_role("button", name="Advance").click()
    expect(page.get_by_test_id("advance-result")).to_have_text(
        "NOPE-123: no sandbox order with this id."
    )
    assert_fits(page, width)
    screenshot(page, f"sandbox-console-{width}")
