"""An accessibility pass (axe-core from npm, run in the page): no serious or critical
violation on the recipient's tracking page (on its way, delivered, failed, cancelled, and the
404 page of a bad link), the business dashboard and the operators' admin index, at 360 px
and 1280 px wide."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from orders.models import Drop, FailureReason, ProofMethod
from tests.browser.axe import assert_accessible
from tests.browser.helpers import bulk
from tests.factories import batch, drop, group
from tests.reliability.batch_hold import open_all_day

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = [360, 1280]


@pytest.fixture
def sized_page(browser, live_server):
    """A page of the given width, in its own context."""
    contexts = []

    def open_page(width: int):
        # axe is put into the page as a script of its own, which the tracking page's
        # Content-Security-Policy rightly refuses: this context looks past it.
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": width, "height": 800}, bypass_csp=True
        )
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


# What a finished drop shows besides its status: the proof, or the reason it failed.
FINISHED_WITH = {
    "DELIVERED": {"pod_method": ProofMethod.PIN, "pod_received_by": "Her neighbour"},
    "FAILED": {"failure_reason": FailureReason.RECIPIENT_UNAVAILABLE},
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("status", ["PICKED_UP", "DELIVERED", "FAILED", "CANCELLED"])
def test_the_tracking_page_passes_axe(make_tenant, live_server, sized_page, width, status):
    open_all_day()
    shop = make_tenant(name="Lotus Bakery")
    status_code, answer = bulk(live_server.url, shop.sandbox_key, batch(group(drop("AX-1"))))
    assert status_code == 200, answer
    [entry] = answer["data"]["orders"]
    Drop.objects.filter(pk=entry["drop_id"]).update(
        status=status, courier_progress=0.5, **FINISHED_WITH.get(status, {})
    )
    page = sized_page(width)

    page.goto(urlsplit(entry["tracking_url"]).path)
    page.wait_for_selector('#tracking-map[data-ready="true"]')

    assert page.locator("main.tracking").get_attribute("data-status") == status
    assert_accessible(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_tracking_404_page_passes_axe(live_server, sized_page, width):
    page = sized_page(width)

    response = page.goto("/t/nonexistent-token-xyz")

    assert response.status == 404
    assert page.locator('main[data-page="not-found"]').is_visible()
    assert_accessible(page)
