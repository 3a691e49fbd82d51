"""The dashboard's webhook pages through Django's test client: the same services as the API."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from events import endpoints as endpoint_services
from events.models import Delivery, DeliveryAttempt, DeliveryStatus, Event, WebhookEndpoint
from events.services import new_event_id

LOCAL_URL = "http://127.0.0.1:9000/hooks"


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def private_urls(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True


@pytest.fixture
def enqueued(monkeypatch) -> list[str]:
    asked: list[str] = []
    monkeypatch.setattr(
        endpoint_services, "on_new_deliveries", lambda endpoint: asked.append(str(endpoint.pk))
    )
    return asked


def form_token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def add_endpoint(web: Client, environment: str = "sandbox", **data):
    """POST the create form as a browser would: with the one-use token of a fresh page."""
    page = web.get(f"/webhooks/?environment={environment}").content.decode()
    data.setdefault("url", LOCAL_URL)
    data.setdefault("event_types", ["*"])
    return web.post(
        "/webhooks/", {"form_token": form_token(page), "environment": environment, **data}
    )


def endpoint_of(tenant, **fields) -> WebhookEndpoint:
    issued = endpoint_services.create_endpoint(
        business=tenant.business,
        environment=fields.pop("environment", "sandbox"),
        url=fields.pop("url", LOCAL_URL),
        event_types=fields.pop("event_types", ["*"]),
        **fields,
    )
    return issued.endpoint


def failed_delivery(endpoint: WebhookEndpoint) -> Delivery:
    at = timezone.now() - timedelta(hours=1)
    event = Event.objects.create(
        public_id=new_event_id(at),
        business_id=endpoint.business_id,
        environment=endpoint.environment,
        type="batch.created",
        data={},
        created_at=at,
    )
    delivery = Delivery.objects.create(
        event=event,
        endpoint=endpoint,
        status=DeliveryStatus.FAILED,
        attempts=1,
        created_at=at,
        updated_at=at,
    )
    DeliveryAttempt.objects.create(
        delivery=delivery, at=at, status_code=503, duration_ms=321, response_excerpt="busy"
    )
    return delivery


def test_the_nav_links_to_webhooks(alice_web):
    assert 'href="/webhooks/"' in alice_web.get("/").content.decode()


def test_adding_an_endpoint_shows_its_secret_once(alice, alice_web, private_urls):
    page = alice_web.get("/webhooks/").content.decode()
    response = alice_web.post(
        "/webhooks/",
        {
            "form_token": form_token(page),
            "environment": "sandbox",
            "url": LOCAL_URL,
            "description": "Shop",
            "event_types": ["batch.created", "order.status_changed"],
        },
    )
    assert response.status_code == 201
    assert response["Cache-Control"].startswith("max-age=0")
    endpoint = WebhookEndpoint.objects.get(business=alice.business)
    assert endpoint.event_types == ["batch.created", "order.status_changed"]
    assert endpoint.description == "Shop" and endpoint.environment == "sandbox"
    assert endpoint.secret in response.content.decode()
    # Never again: not on the list, not on the endpoint's page.
    assert endpoint.secret not in alice_web.get("/webhooks/").content.decode()
    assert endpoint.secret not in alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()

    # Sending the same form again (a refresh) makes no second endpoint.
    again = alice_web.post(
        "/webhooks/",
        {"form_token": form_token(page), "environment": "sandbox", "url": LOCAL_URL},
    )
    assert again.status_code == 409
    assert WebhookEndpoint.objects.filter(business=alice.business).count() == 1


def test_all_events_wins_over_single_types(alice, alice_web, private_urls):
    add_endpoint(alice_web, event_types=["*", "invoice.issued"])
    assert WebhookEndpoint.objects.get(business=alice.business).event_types == ["*"]


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1", "http://10.0.0.1", "https://169.254.169.254", "ftp://x", "x y"]
)
def test_an_unsafe_url_is_a_form_error(alice, alice_web, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    response = add_endpoint(alice_web, url=url)
    assert response.status_code == 400
    assert 'class="errorlist' in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_no_event_type_is_a_form_error(alice_web, private_urls):
    assert add_endpoint(alice_web, event_types=[]).status_code == 400
    assert not WebhookEndpoint.objects.exists()


def test_live_endpoints_wait_for_live_access(make_tenant, member, private_urls):
    approved = make_tenant(stage="approved")
    web = member(approved.business)
    live_page = web.get("/webhooks/?environment=live").content.decode()
    assert "once live access is switched on" in live_page and "form_token" not in live_page
    # A crafted POST is refused all the same.
    token = form_token(web.get("/webhooks/").content.decode())
    response = web.post(
        "/webhooks/",
        {"form_token": token, "environment": "live", "url": LOCAL_URL, "event_types": ["*"]},
    )
    assert response.status_code == 403
    assert not WebhookEndpoint.objects.exists()
    assert add_endpoint(web, environment="sandbox").status_code == 201


def test_the_eleventh_endpoint_is_refused(alice, alice_web, private_urls):
    for _ in range(9):
        endpoint_of(alice)
    token = form_token(alice_web.get("/webhooks/").content.decode())
    endpoint_of(alice)  # the tenth, from another tab
    assert "delete one to add another" in alice_web.get("/webhooks/").content.decode()
    response = alice_web.post(
        "/webhooks/",
        {"form_token": token, "environment": "sandbox", "url": LOCAL_URL, "event_types": ["*"]},
    )
    assert response.status_code == 409
    assert "At most 10" in response.content.decode()
    assert WebhookEndpoint.objects.filter(business=alice.business).count() == 10


def test_the_list_is_per_environment_with_a_disabled_badge_and_reason(alice, alice_web):
    endpoint_of(alice, url="http://127.0.0.1:9000/on", description="Sandbox on")
    off = endpoint_of(alice, url="http://127.0.0.1:9000/off")
    WebhookEndpoint.objects.filter(pk=off.pk).update(
        enabled=False, disabled_reason="No successful delivery for 5 days."
    )
    endpoint_of(alice, environment="live", url="http://127.0.0.1:9000/live")
    sandbox = alice_web.get("/webhooks/").content.decode()
    assert "/on" in sandbox and "/off" in sandbox and "/live" not in sandbox
    assert "Disabled" in sandbox and "No successful delivery for 5 days." in sandbox
    live = alice_web.get("/webhooks/?environment=live").content.decode()
    assert "/live" in live and "/on" not in live


def test_editing_changes_url_description_and_event_types(alice, alice_web, private_urls):
    endpoint = endpoint_of(alice)
    response = alice_web.post(
        f"/webhooks/{endpoint.pk}/",
        {
            "url": "http://127.0.0.1:9001/new",
            "description": "New",
            "event_types": ["invoice.issued"],
        },
    )
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url == "http://127.0.0.1:9001/new"
    assert endpoint.description == "New" and endpoint.event_types == ["invoice.issued"]


def test_editing_refuses_an_unsafe_url(alice, alice_web, settings):
    endpoint = endpoint_of(alice, url="https://hooks.example.com/")
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    response = alice_web.post(
        f"/webhooks/{endpoint.pk}/", {"url": "http://127.0.0.1/", "event_types": ["*"]}
    )
    assert response.status_code == 400
    endpoint.refresh_from_db()
    assert endpoint.url == "https://hooks.example.com/"


def test_disable_then_enable_forgets_why_it_was_off(alice, alice_web):
    endpoint = endpoint_of(alice)
    alice_web.post(f"/webhooks/{endpoint.pk}/enabled/", {"enabled": "false"})
    endpoint.refresh_from_db()
    assert endpoint.enabled is False
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(disabled_reason="Failing for 5 days.")
    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert 'data-testid="disabled-badge"' in page and "Failing for 5 days." in page
    alice_web.post(f"/webhooks/{endpoint.pk}/enabled/", {"enabled": "true"})
    endpoint.refresh_from_db()
    assert endpoint.enabled is True and endpoint.disabled_reason == ""


def test_rotating_shows_the_new_secret_once(alice, alice_web):
    endpoint = endpoint_of(alice)
    old = endpoint.secret
    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()
    token = form_token(page)
    response = alice_web.post(f"/webhooks/{endpoint.pk}/rotate/", {"form_token": token})
    assert response.status_code == 200
    endpoint.refresh_from_db()
    assert endpoint.secret != old and endpoint.previous_secret == old
    assert endpoint.secret in response.content.decode()
    assert endpoint.previous_secret_expires_at > timezone.now() + timedelta(hours=23)
    # A refresh of that answer rotates nothing.
    again = alice_web.post(f"/webhooks/{endpoint.pk}/rotate/", {"form_token": token})
    assert again.status_code == 409
    rotated = endpoint.secret
    endpoint.refresh_from_db()
    assert endpoint.secret == rotated
    assert rotated not in alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()


def test_send_test_event(alice, alice_web, enqueued):
    endpoint = endpoint_of(alice, event_types=["invoice.issued"])
    response = alice_web.post(f"/webhooks/{endpoint.pk}/test/")
    assert response.status_code == 302
    [delivery] = Delivery.objects.filter(endpoint=endpoint)
    assert delivery.event.type == "webhook.test"
    assert enqueued == [str(endpoint.pk)]
    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert delivery.event.public_id in page and "queued" in page


def test_the_delivery_log_shows_attempts_and_resends(alice, alice_web, enqueued):
    endpoint = endpoint_of(alice)
    delivery = failed_delivery(endpoint)
    page = alice_web.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert delivery.event.public_id in page
    assert "HTTP 503" in page and "321 ms" in page and "busy" in page
    resend = f"/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/resend/"
    assert resend in page
    assert alice_web.post(resend).status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    assert enqueued == [str(endpoint.pk)]


def test_delete_asks_first(alice, alice_web):
    endpoint = endpoint_of(alice)
    confirm = alice_web.get(f"/webhooks/{endpoint.pk}/delete/")
    assert confirm.status_code == 200 and endpoint.url in confirm.content.decode()
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()
    response = alice_web.post(f"/webhooks/{endpoint.pk}/delete/")
    assert response.status_code == 302
    assert not WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


def test_a_stranger_gets_404_everywhere(alice, bob_web, enqueued):
    endpoint = endpoint_of(alice, description="Alice's hook")
    delivery = failed_delivery(endpoint)
    base = f"/webhooks/{endpoint.pk}"
    assert bob_web.get(f"{base}/").status_code == 404
    assert bob_web.get(f"{base}/delete/").status_code == 404
    for path in ("/", "/enabled/", "/rotate/", "/test/", "/delete/"):
        response = bob_web.post(f"{base}{path}", {"url": LOCAL_URL, "event_types": ["*"]})
        assert response.status_code == 404, path
    assert bob_web.post(f"{base}/deliveries/{delivery.pk}/resend/").status_code == 404
    assert "Alice's hook" not in bob_web.get("/webhooks/").content.decode()
    after = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (after.secret, after.enabled, after.url) == (endpoint.secret, True, LOCAL_URL)
    assert enqueued == []
    assert bob_web.get(f"/webhooks/{uuid.uuid4()}/").status_code == 404


def test_a_delivery_of_another_endpoint_is_404(alice, alice_web, enqueued):
    endpoint = endpoint_of(alice)
    other = failed_delivery(endpoint_of(alice))
    response = alice_web.post(f"/webhooks/{endpoint.pk}/deliveries/{other.pk}/resend/")
    assert response.status_code == 404
    assert enqueued == []


def test_the_page_says_when_private_urls_are_allowed(alice, alice_web, settings):
    """A local development server (make run) says why http://127.0.0.1 is accepted here."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    page = alice_web.get("/webhooks/").content.decode()
    assert 'data-testid="private-urls-allowed"' in page
    assert "A production server accepts only <code>https</code> and public addresses" in page
    assert add_endpoint(alice_web).status_code == 201

    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False  # production: the page says nothing, refuses
    page = alice_web.get("/webhooks/").content.decode()
    assert "private-urls-allowed" not in page
    assert add_endpoint(alice_web).status_code == 400
    assert WebhookEndpoint.objects.filter(business=alice.business).count() == 1
