"""The dashboard's home opens on the environment with activity, or the one last chosen; the
sandbox console says a refusal in words; a webhook delivery resent again and again keeps the
endpoint's page short, its every attempt a page at a time on its own page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from accounts.models import Stage
from events.models import DeliveryAttempt
from tests.dashboard.test_webhooks import endpoint_of, failed_delivery
from tests.tracking.helpers import place


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


def chart_tab(page: str) -> str:
    """The environment tab the home page's charts show."""
    start = page.index('aria-label="Environment of the charts"')
    current = page.index('aria-current="page"', start)
    return page[page.rindex("?environment=", start, current) + len("?environment=") :].split(
        "#", 1
    )[0]


@pytest.fixture
def live_alice(alice):
    alice.business.stage = Stage.LIVE
    alice.business.save(update_fields=["stage"])
    return alice


def test_a_live_account_with_only_sandbox_orders_opens_on_the_sandbox(
    open_for_business, live_alice, alice_web, api
):
    assert live_alice.business.is_live
    place(api, live_alice.sandbox_key, "HOME-1")

    assert chart_tab(alice_web.get("/").content.decode()) == "sandbox"


def test_a_live_account_with_live_orders_opens_on_live(
    open_for_business, live_alice, alice_web, api
):
    place(api, live_alice.sandbox_key, "HOME-2")
    place(api, live_alice.live_key, "HOME-3")

    assert chart_tab(alice_web.get("/").content.decode()) == "live"


def test_the_last_choice_is_remembered(open_for_business, live_alice, alice_web, api):
    place(api, live_alice.sandbox_key, "HOME-4")
    assert chart_tab(alice_web.get("/?environment=live").content.decode()) == "live"

    assert chart_tab(alice_web.get("/").content.decode()) == "live"


def test_the_test_driver_says_an_unknown_order_in_words(open_for_business, alice, alice_web):
    response = alice_web.post("/sandbox/advance/", {"client_order_id": "NOPE-123", "to": ""})

    assert response.status_code == 400
    page = response.content.decode()
    result = page[page.index('data-testid="advance-result"') :].split("</p>", 1)[0]
    assert "NOPE-123</span>: no sandbox order with this id." in result
    assert "NOT_FOUND" not in page


def test_the_test_driver_says_why_an_order_cannot_move(open_for_business, alice, alice_web, api):
    place(api, alice.sandbox_key, "DONE-1")
    alice_web.post("/sandbox/advance/", {"client_order_id": "DONE-1", "to": "DELIVERED"})

    response = alice_web.post("/sandbox/advance/", {"client_order_id": "DONE-1", "to": ""})

    assert "DONE-1</span>: it is delivered, so it cannot move further." in (
        response.content.decode()
    )
    assert "ILLEGAL_TRANSITION" not in response.content.decode()


def test_a_resent_delivery_shows_its_newest_attempts_and_pages_the_rest(alice, alice_web):
    endpoint = endpoint_of(alice)
    delivery = failed_delivery(endpoint)
    start = timezone.now() - timedelta(minutes=50)
    DeliveryAttempt.objects.bulk_create(
        DeliveryAttempt(
            delivery=delivery, at=start + timedelta(seconds=n), status_code=500, duration_ms=n
        )
        for n in range(1, 40)
    )
    delivery.attempts = 40
    delivery.save(update_fields=["attempts"])

    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()

    assert page.count("HTTP 500") == 3  # the newest three: 39, 38 and 37 ms
    assert "· 39 ms" in page and "· 37 ms" in page and "· 36 ms" not in page
    assert f'href="/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/"' in page
    assert "All 40 attempts" in page

    first = alice_web.get(f"/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/").content.decode()
    assert first.count("<li>") == 25 and "Page 1 of 2" in first and "· 39 ms" in first
    second = alice_web.get(
        f"/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/?page=2"
    ).content.decode()
    assert second.count("<li>") == 15 and "HTTP 503" in second  # the first, oldest attempt


def test_a_short_log_needs_no_link(alice, alice_web):
    endpoint = endpoint_of(alice)
    failed_delivery(endpoint)
    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert "HTTP 503" in page and 'data-testid="all-attempts"' not in page


def test_another_business_cannot_read_a_delivery(alice, bob_web):
    endpoint = endpoint_of(alice)
    delivery = failed_delivery(endpoint)
    assert bob_web.get(f"/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/").status_code == 404
