"""/webhook-endpoints through HTTP: the secret shown once, URL safety, limits, isolation, log."""

from __future__ import annotations

import base64
import uuid
from datetime import timedelta

import orjson
import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from core.formats import iso_z
from events import endpoints as endpoint_services
from events.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    Event,
    EventType,
    WebhookEndpoint,
)
from events.services import new_event_id
from tests.helpers import assert_error, run_concurrently

pytestmark = pytest.mark.django_db

LOCAL_URL = "http://127.0.0.1:9000/hooks"
PUBLIC_URL = "https://hooks.example.com/delivery"
ENDPOINT_FIELDS = {
    "id",
    "url",
    "event_types",
    "description",
    "enabled",
    "disabled_reason",
    "created_at",
    "environment",
}


@pytest.fixture
def private_urls(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True


@pytest.fixture
def public_dns(monkeypatch):
    """Every host name resolves to one public address (the suite has no DNS)."""
    monkeypatch.setattr("events.ssrf.resolve", lambda host, port: ["93.184.215.14"])


@pytest.fixture
def enqueued(monkeypatch) -> list[str]:
    """The endpoints whose delivery task was asked for (events.services.on_new_deliveries)."""
    asked: list[str] = []
    monkeypatch.setattr(
        endpoint_services, "on_new_deliveries", lambda endpoint: asked.append(str(endpoint.pk))
    )
    return asked


def patch(api, path: str, body, key: str):
    return api.client.patch(
        f"/api/v1{path}",
        orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )


def delete(api, path: str, key: str):
    return api.client.delete(f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {key}")


def create(api, key: str, **body):
    body.setdefault("url", LOCAL_URL)
    return api.post("/webhook-endpoints", body, key)


def created(api, key: str, **body) -> dict:
    response = create(api, key, **body)
    assert response.status_code == 201, response.content
    return response.json()["data"]


# --- Creating, reading, the secret -----------------------------------------------------


def test_create_answers_the_endpoint_and_its_secret_once(alice, api, private_urls):
    response = create(api, alice.sandbox_key, description="Shop", event_types=["batch.created"])
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["statusCode"] == 201 and body["success"] is True
    data = body["data"]
    assert set(data) == ENDPOINT_FIELDS | {"secret"}
    assert data["url"] == LOCAL_URL
    assert data["event_types"] == ["batch.created"]
    assert data["description"] == "Shop"
    assert data["enabled"] is True and data["disabled_reason"] is None
    assert data["environment"] == "sandbox"
    assert data["created_at"].endswith("Z")
    secret = data["secret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) >= 24
    Webhook(secret)  # the integrators' library takes it as it is
    stored = WebhookEndpoint.objects.get(pk=data["id"])
    assert stored.business == alice.business and stored.secret == secret

    # Never again: not in the list, not in the endpoint.
    listed = api.get("/webhook-endpoints", alice.sandbox_key).json()["data"]["endpoints"]
    assert [set(e) for e in listed] == [ENDPOINT_FIELDS]
    one = api.get(f"/webhook-endpoints/{data['id']}", alice.sandbox_key).json()["data"]
    assert set(one) == ENDPOINT_FIELDS
    assert secret not in str(listed) + str(one)


def test_defaults_are_every_type_enabled_no_description(alice, api, private_urls):
    data = created(api, alice.sandbox_key)
    assert data["event_types"] == ["*"]
    assert data["enabled"] is True
    assert data["description"] == ""


def test_secrets_differ_per_endpoint(alice, api, private_urls):
    assert created(api, alice.sandbox_key)["secret"] != created(api, alice.sandbox_key)["secret"]


def test_event_types_are_stored_once_each_in_order(alice, api, private_urls):
    data = created(
        api,
        alice.sandbox_key,
        event_types=["order.status_changed", "batch.created", "order.status_changed"],
    )
    assert data["event_types"] == ["order.status_changed", "batch.created"]


def test_an_endpoint_is_made_in_the_keys_environment(alice, api, private_urls):
    live = created(api, alice.live_key)
    assert live["environment"] == "live"
    assert WebhookEndpoint.objects.get(pk=live["id"]).environment == "live"


# --- Validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "url"),
        ({"url": ""}, "url"),
        ({"url": 5}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://exa mple.com/"}, "url"),
        ({"url": LOCAL_URL, "event_types": []}, "event_types"),
        ({"url": LOCAL_URL, "event_types": "batch.created"}, "event_types"),
        ({"url": LOCAL_URL, "event_types": ["order.created"]}, "event_types[0]"),
        ({"url": LOCAL_URL, "event_types": ["*", "batch.created"]}, "event_types"),
        ({"url": LOCAL_URL, "enabled": "true"}, "enabled"),
        ({"url": LOCAL_URL, "enabled": 1}, "enabled"),
        ({"url": LOCAL_URL, "description": 7}, "description"),
        ({"url": LOCAL_URL, "description": "x" * 201}, "description"),
        ({"url": LOCAL_URL, "description": "a\u0000b"}, "description"),
        ({"url": "http://127.0.0.1/" + "a" * 2000}, "url"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(alice, api, private_urls, body, field):
    response = api.post("/webhook-endpoints", body, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == [field]
    assert WebhookEndpoint.objects.count() == 0


def test_a_body_that_is_not_an_object_or_not_json_is_400(alice, api):
    assert_error(api.post("/webhook-endpoints", [], alice.sandbox_key), 400, "VALIDATION_ERROR")
    response = api.post("/webhook-endpoints", b"{", alice.sandbox_key, raw=True)
    assert_error(response, 400, "MALFORMED_JSON")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1",
        "http://10.0.0.1",
        "http://[::1]",
        "https://169.254.169.254",
        "https://127.0.0.1/hooks",
        "https://10.0.0.1",
        "https://[::1]/",
        "https://192.168.1.20",
        "https://[::ffff:127.0.0.1]",
        "https://localhost/",
        "http://hooks.example.com/",
        "https://no-such-host.invalid/",
        "ftp://x",
        "not a url",
    ],
)
def test_production_refuses_internal_plain_http_and_other_urls(alice, api, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    error = assert_error(create(api, alice.sandbox_key, url=url), 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == ["url"]
    assert WebhookEndpoint.objects.count() == 0


def test_production_takes_an_https_url_of_a_public_host(alice, api, settings, public_dns):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    assert created(api, alice.sandbox_key, url=PUBLIC_URL)["url"] == PUBLIC_URL


def test_production_refuses_a_host_name_that_resolves_inside(alice, api, settings, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    monkeypatch.setattr("events.ssrf.resolve", lambda host, port: ["8.8.8.8", "10.1.2.3"])
    error = assert_error(create(api, alice.sandbox_key, url=PUBLIC_URL), 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "url"


def test_patch_checks_the_url_as_create_does(alice, api, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint = created(api, alice.sandbox_key)
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    path = f"/webhook-endpoints/{endpoint['id']}"
    for url in ("http://127.0.0.1", "https://169.254.169.254", "ftp://x", "not a url"):
        error = assert_error(
            patch(api, path, {"url": url}, alice.sandbox_key), 400, "VALIDATION_ERROR"
        )
        assert [d["field"] for d in error["details"]] == ["url"]
    assert WebhookEndpoint.objects.get(pk=endpoint["id"]).url == LOCAL_URL


# --- Changing, deleting ----------------------------------------------------------------------


def test_patch_changes_only_what_is_sent(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key, description="Before")
    path = f"/webhook-endpoints/{endpoint['id']}"
    response = patch(api, path, {"event_types": ["invoice.issued"]}, alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["event_types"] == ["invoice.issued"]
    assert data["description"] == "Before" and data["url"] == LOCAL_URL
    assert set(data) == ENDPOINT_FIELDS

    data = patch(
        api,
        path,
        {"url": "http://127.0.0.1:9001/other", "description": "", "enabled": False},
        alice.sandbox_key,
    ).json()["data"]
    assert (data["url"], data["description"], data["enabled"]) == (
        "http://127.0.0.1:9001/other",
        "",
        False,
    )
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    assert stored.enabled is False and stored.event_types == ["invoice.issued"]
    assert patch(api, path, {}, alice.sandbox_key).json()["data"] == data


def test_enabling_again_clears_why_we_disabled_it(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    WebhookEndpoint.objects.filter(pk=endpoint["id"]).update(
        enabled=False,
        disabled_reason="No successful delivery for 5 days.",
        failing_since=timezone.now() - timedelta(days=6),
    )
    path = f"/webhook-endpoints/{endpoint['id']}"
    shown = api.get(path, alice.sandbox_key).json()["data"]
    assert shown["enabled"] is False
    assert shown["disabled_reason"] == "No successful delivery for 5 days."

    data = patch(api, path, {"enabled": True}, alice.sandbox_key).json()["data"]
    assert data["enabled"] is True and data["disabled_reason"] is None
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    assert stored.disabled_reason == "" and stored.failing_since is None


def test_patch_validates_each_field(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    path = f"/webhook-endpoints/{endpoint['id']}"
    response = patch(
        api,
        path,
        {"event_types": ["nope"], "enabled": "no", "description": None},
        alice.sandbox_key,
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert {d["field"] for d in error["details"]} == {"event_types[0]", "enabled", "description"}


def test_delete_removes_the_endpoint_and_its_deliveries_but_not_the_events(
    alice, api, private_urls
):
    endpoint = created(api, alice.sandbox_key)
    delivery = make_delivery(WebhookEndpoint.objects.get(pk=endpoint["id"]))
    path = f"/webhook-endpoints/{endpoint['id']}"
    response = delete(api, path, alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"] == {"id": endpoint["id"], "deleted": True}
    assert not WebhookEndpoint.objects.filter(pk=endpoint["id"]).exists()
    assert not Delivery.objects.filter(pk=delivery.pk).exists()
    assert Event.objects.filter(pk=delivery.event_id).exists()
    assert_error(api.get(path, alice.sandbox_key), 404, "NOT_FOUND")
    assert_error(delete(api, path, alice.sandbox_key), 404, "NOT_FOUND")


def test_put_is_not_a_method_here(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    response = api.client.put(
        f"/api/v1/webhook-endpoints/{endpoint['id']}",
        b"{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
    )
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


# --- The limit ----------------------------------------------------------------------------------


def test_at_most_ten_endpoints_per_business_and_environment(alice, bob, api, private_urls):
    for _ in range(10):
        created(api, alice.sandbox_key)
    error = assert_error(create(api, alice.sandbox_key), 409, "ENDPOINT_LIMIT_REACHED")
    assert "10" in error["message"]
    assert WebhookEndpoint.objects.filter(business=alice.business).count() == 10
    # Counted apart: the other environment, another business.
    created(api, alice.live_key)
    created(api, bob.sandbox_key)
    # Deleting one makes room.
    first = api.get("/webhook-endpoints", alice.sandbox_key).json()["data"]["endpoints"][0]
    delete(api, f"/webhook-endpoints/{first['id']}", alice.sandbox_key)
    created(api, alice.sandbox_key)


@pytest.mark.django_db(transaction=True)
def test_concurrent_creations_never_pass_the_limit(alice, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    for _ in range(8):
        endpoint_services.create_endpoint(
            business=alice.business, environment="sandbox", url=LOCAL_URL, event_types=["*"]
        )
    results = run_concurrently(
        6, lambda api, i: api.post("/webhook-endpoints", {"url": LOCAL_URL}, alice.sandbox_key)
    )
    assert sorted(r.status_code for r in results) == [201, 201, 409, 409, 409, 409]
    assert WebhookEndpoint.objects.filter(business=alice.business).count() == 10


# --- Isolation ------------------------------------------------------------------------------------


def _every_call(api, endpoint_id: str, key: str, delivery_id: int = 1) -> list:
    path = f"/webhook-endpoints/{endpoint_id}"
    return [
        api.get(path, key),
        patch(api, path, {"description": "taken"}, key),
        api.post(f"{path}/rotate-secret", {}, key),
        api.post(f"{path}/test", {}, key),
        api.get(f"{path}/deliveries", key),
        api.post(f"{path}/deliveries/{delivery_id}/resend", {}, key),
        delete(api, path, key),
    ]


def test_another_business_never_reaches_an_endpoint(alice, bob, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    delivery = make_delivery(stored)
    for response in _every_call(api, endpoint["id"], bob.sandbox_key, delivery.pk):
        assert_error(response, 404, "NOT_FOUND")
    assert api.get("/webhook-endpoints", bob.sandbox_key).json()["data"]["endpoints"] == []
    after = WebhookEndpoint.objects.get(pk=endpoint["id"])
    assert (after.description, after.secret) == (stored.description, stored.secret)
    assert enqueued == []


def test_the_other_environment_never_reaches_an_endpoint(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key)
    for response in _every_call(api, endpoint["id"], alice.live_key):
        assert_error(response, 404, "NOT_FOUND")
    assert api.get("/webhook-endpoints", alice.live_key).json()["data"]["endpoints"] == []
    assert WebhookEndpoint.objects.filter(pk=endpoint["id"]).exists()


@pytest.mark.parametrize(
    "endpoint_id", ["nope", "123", "3f9d2c1e-8b7a-4c6d-9e5f-0a1b2c3d4e5f", "%00"]
)
def test_an_unknown_or_malformed_id_is_404(alice, api, endpoint_id):
    for response in _every_call(api, endpoint_id, alice.sandbox_key):
        assert_error(response, 404, "NOT_FOUND")


# --- Rotating the secret ------------------------------------------------------------------------


def test_rotation_answers_a_new_secret_and_the_old_one_signs_for_24_hours(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    before = timezone.now()
    response = api.post(f"/webhook-endpoints/{endpoint['id']}/rotate-secret", {}, alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert set(data) == ENDPOINT_FIELDS | {"secret", "previous_secret_expires_at"}
    assert data["secret"].startswith("whsec_") and data["secret"] != endpoint["secret"]
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    assert stored.secret == data["secret"]
    assert stored.previous_secret == endpoint["secret"]
    grace = stored.previous_secret_expires_at - before
    assert timedelta(hours=24) <= grace < timedelta(hours=24, minutes=1)
    assert data["previous_secret_expires_at"].endswith("Z")
    # Shown once: not in the endpoint afterwards.
    shown = api.get(f"/webhook-endpoints/{endpoint['id']}", alice.sandbox_key).json()["data"]
    assert data["secret"] not in str(shown) and endpoint["secret"] not in str(shown)


def test_rotating_twice_keeps_only_the_last_previous_secret(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    path = f"/webhook-endpoints/{endpoint['id']}/rotate-secret"
    second = api.post(path, {}, alice.sandbox_key).json()["data"]["secret"]
    third = api.post(path, {}, alice.sandbox_key).json()["data"]["secret"]
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    assert (stored.secret, stored.previous_secret) == (third, second)


# --- Test events ----------------------------------------------------------------------------------


def test_a_test_event_is_delivered_to_this_endpoint_only(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key, event_types=["invoice.issued"])
    other = created(api, alice.sandbox_key)  # subscribes to everything
    response = api.post(f"/webhook-endpoints/{endpoint['id']}/test", {}, alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["type"] == "webhook.test" and data["environment"] == "sandbox"
    assert data["data"]["endpoint_id"] == endpoint["id"]
    event = Event.objects.get(public_id=data["id"])
    assert event.business == alice.business and event.type == EventType.WEBHOOK_TEST
    [delivery] = Delivery.objects.filter(event=event)
    assert str(delivery.endpoint_id) == endpoint["id"]
    assert delivery.status == DeliveryStatus.PENDING and delivery.next_attempt_at is not None
    assert enqueued == [endpoint["id"]]
    assert not Delivery.objects.filter(endpoint_id=other["id"]).exists()
    # It is an event like any other: in the feed, and in the endpoint's log.
    feed = api.get("/events", alice.sandbox_key).json()["data"]["events"]
    assert [e["id"] for e in feed] == [data["id"]]
    log = api.get(f"/webhook-endpoints/{endpoint['id']}/deliveries", alice.sandbox_key)
    assert [d["event_id"] for d in log.json()["data"]["deliveries"]] == [data["id"]]


def test_a_disabled_endpoint_gets_no_test_event(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key, enabled=False)
    response = api.post(f"/webhook-endpoints/{endpoint['id']}/test", {}, alice.sandbox_key)
    assert_error(response, 409, "ENDPOINT_DISABLED")
    assert Event.objects.count() == 0 and Delivery.objects.count() == 0
    assert enqueued == []


# --- The delivery log and resending ---------------------------------------------------------------


def make_delivery(endpoint, *, status=DeliveryStatus.FAILED, attempts=(), at=None) -> Delivery:
    """A delivery of a new batch.created event, with one logged attempt per (code, error)."""
    at = at or timezone.now()
    event = Event.objects.create(
        public_id=new_event_id(at),
        business_id=endpoint.business_id,
        environment=endpoint.environment,
        type=EventType.BATCH_CREATED,
        data={"batch_id": str(uuid.uuid4())},
        created_at=at,
    )
    delivery = Delivery.objects.create(
        event=event,
        endpoint=endpoint,
        status=status,
        attempts=len(attempts),
        next_attempt_at=at if status == DeliveryStatus.PENDING else None,
        created_at=at,
        updated_at=at,
    )
    DeliveryAttempt.objects.bulk_create(
        DeliveryAttempt(
            delivery=delivery,
            at=at + timedelta(seconds=n),
            status_code=code,
            duration_ms=120 + n,
            response_excerpt="oops" if code else "",
            error=error,
        )
        for n, (code, error) in enumerate(attempts)
    )
    return delivery


def test_the_delivery_log_shows_each_attempt(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    delivery = make_delivery(
        WebhookEndpoint.objects.get(pk=endpoint["id"]),
        attempts=[(None, "Timed out after 10 s."), (500, "")],
    )
    response = api.get(f"/webhook-endpoints/{endpoint['id']}/deliveries", alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["has_more"] is False
    [shown] = data["deliveries"]
    assert shown["id"] == delivery.pk
    assert shown["event_id"] == delivery.event.public_id
    assert shown["event_type"] == "batch.created"
    assert (shown["status"], shown["attempts"], shown["next_attempt_at"]) == ("FAILED", 2, None)
    assert [(a["status_code"], a["error"], a["duration_ms"]) for a in shown["log"]] == [
        (None, "Timed out after 10 s.", 120),
        (500, None, 121),
    ]
    assert shown["log"][1]["response_excerpt"] == "oops"
    assert all(a["at"].endswith("Z") for a in shown["log"])


def test_the_delivery_log_is_newest_first_and_pages_with_before(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    start = timezone.now()
    made = [make_delivery(stored, at=start + timedelta(seconds=n)) for n in range(5)]
    path = f"/webhook-endpoints/{endpoint['id']}/deliveries"
    seen, before = [], ""
    while True:
        data = api.get(f"{path}?limit=2{before}", alice.sandbox_key).json()["data"]
        seen += [d["id"] for d in data["deliveries"]]
        if not data["has_more"]:
            break
        before = f"&before={data['deliveries'][-1]['id']}"
    assert seen == [d.pk for d in reversed(made)]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?limit=x", "limit"),
        ("?before=x", "before"),
        ("?before=0", "before"),
        ("?before=99999999999999999999", "before"),
    ],
)
def test_a_bad_log_query_is_400(alice, api, private_urls, query, field):
    endpoint = created(api, alice.sandbox_key)
    response = api.get(f"/webhook-endpoints/{endpoint['id']}/deliveries{query}", alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == [field]


def test_before_must_be_a_delivery_of_this_endpoint(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    other = created(api, alice.sandbox_key)
    foreign = make_delivery(WebhookEndpoint.objects.get(pk=other["id"]))
    response = api.get(
        f"/webhook-endpoints/{endpoint['id']}/deliveries?before={foreign.pk}", alice.sandbox_key
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == ["before"]


def test_resend_makes_a_failed_delivery_due_now_and_asks_a_worker(
    alice, api, private_urls, enqueued
):
    endpoint = created(api, alice.sandbox_key)
    delivery = make_delivery(
        WebhookEndpoint.objects.get(pk=endpoint["id"]),
        attempts=[(500, "")] * 8,
        at=timezone.now() - timedelta(days=2),
    )
    before = timezone.now()
    response = api.post(
        f"/webhook-endpoints/{endpoint['id']}/deliveries/{delivery.pk}/resend",
        {},
        alice.sandbox_key,
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["id"] == delivery.pk and data["status"] == "PENDING"
    assert len(data["log"]) == 8
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    assert before <= delivery.next_attempt_at <= timezone.now()
    assert delivery.attempts == 8  # a resend is one more attempt; the log is kept
    assert enqueued == [endpoint["id"]]


def test_resend_of_another_endpoints_delivery_is_404(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key)
    other = created(api, alice.sandbox_key)
    foreign = make_delivery(WebhookEndpoint.objects.get(pk=other["id"]))
    for delivery_id in (foreign.pk, "x", "99999999999999999999"):
        response = api.post(
            f"/webhook-endpoints/{endpoint['id']}/deliveries/{delivery_id}/resend",
            {},
            alice.sandbox_key,
        )
        assert_error(response, 404, "NOT_FOUND")
    foreign.refresh_from_db()
    assert foreign.status == DeliveryStatus.FAILED
    assert enqueued == []


def test_resend_to_a_disabled_endpoint_is_409(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    delivery = make_delivery(stored)
    WebhookEndpoint.objects.filter(pk=stored.pk).update(enabled=False)
    response = api.post(
        f"/webhook-endpoints/{endpoint['id']}/deliveries/{delivery.pk}/resend",
        {},
        alice.sandbox_key,
    )
    assert_error(response, 409, "ENDPOINT_DISABLED")
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert enqueued == []


def test_disabling_fails_the_pending_deliveries(alice, api, private_urls):
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    pending = make_delivery(stored, status=DeliveryStatus.PENDING)
    done = make_delivery(stored, status=DeliveryStatus.SUCCEEDED, attempts=[(200, "")])
    patch(api, f"/webhook-endpoints/{endpoint['id']}", {"enabled": False}, alice.sandbox_key)
    pending.refresh_from_db()
    done.refresh_from_db()
    assert (pending.status, pending.next_attempt_at) == (DeliveryStatus.FAILED, None)
    assert done.status == DeliveryStatus.SUCCEEDED


@pytest.mark.parametrize("action", ["test", "resend", "enable"])
def test_asking_by_hand_never_lifts_a_pause_after_a_timeout(
    alice, api, private_urls, enqueued, action
):
    # A receiver that never answers must cost one timeout per pause, however often its
    # business clicks (docs/webhooks.md, "How we send"): asks queue behind the pause.
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    delivery = make_delivery(stored)
    pause_ends = timezone.now() + timedelta(hours=5)
    paused = {"paused_until": pause_ends}
    if action == "enable":
        paused["enabled"] = False
    WebhookEndpoint.objects.filter(pk=stored.pk).update(**paused)
    path = f"/webhook-endpoints/{endpoint['id']}"
    response = {
        "test": lambda: api.post(f"{path}/test", {}, alice.sandbox_key),
        "resend": lambda: api.post(
            f"{path}/deliveries/{delivery.pk}/resend", {}, alice.sandbox_key
        ),
        "enable": lambda: patch(api, path, {"enabled": True}, alice.sandbox_key),
    }[action]()

    assert response.status_code == 200, response.content
    assert WebhookEndpoint.objects.get(pk=stored.pk).paused_until == pause_ends
    if action != "enable":
        # Answered as documented, the delivery pending, due when the pause ends.
        [asked] = Delivery.objects.filter(endpoint=stored, status=DeliveryStatus.PENDING)
        assert asked.next_attempt_at == pause_ends
        log = api.get(f"{path}/deliveries", alice.sandbox_key).json()["data"]["deliveries"]
        assert log[0]["next_attempt_at"] == iso_z(pause_ends)
    if action == "resend":
        assert response.json()["data"]["next_attempt_at"] == iso_z(pause_ends)


def test_a_test_or_resend_after_the_pause_is_due_at_once(alice, api, private_urls, enqueued):
    endpoint = created(api, alice.sandbox_key)
    stored = WebhookEndpoint.objects.get(pk=endpoint["id"])
    delivery = make_delivery(stored)
    WebhookEndpoint.objects.filter(pk=stored.pk).update(
        paused_until=timezone.now() - timedelta(seconds=1)  # over
    )
    path = f"/webhook-endpoints/{endpoint['id']}"
    before = timezone.now()
    api.post(f"{path}/test", {}, alice.sandbox_key)
    api.post(f"{path}/deliveries/{delivery.pk}/resend", {}, alice.sandbox_key)

    due = Delivery.objects.filter(endpoint=stored).values_list("next_attempt_at", flat=True)
    assert all(before <= at <= timezone.now() for at in due) and len(due) == 2


# --- End to end: the API's secret verifies what the workers send --------------------------------


def test_a_test_event_arrives_signed_with_the_secret_of_the_answer(
    alice, api, private_urls, webhook_receiver
):
    from events.tasks import send_due_deliveries_of

    endpoint = created(api, alice.sandbox_key, url=webhook_receiver.url("/hooks"))
    webhook_receiver.trust(endpoint["secret"])
    test_event = api.post(f"/webhook-endpoints/{endpoint['id']}/test", {}, alice.sandbox_key)
    event = test_event.json()["data"]

    assert send_due_deliveries_of(endpoint["id"]) == 1  # what the worker's task runs

    [received] = webhook_receiver.received
    assert received.verified  # standardwebhooks' Webhook(secret).verify
    assert received.id == event["id"]
    assert received.json == event  # the same object as GET /events
    log = api.get(f"/webhook-endpoints/{endpoint['id']}/deliveries", alice.sandbox_key)
    [delivery] = log.json()["data"]["deliveries"]
    assert delivery["status"] == "SUCCEEDED" and delivery["attempts"] == 1
    assert [a["status_code"] for a in delivery["log"]] == [200]

    # After a rotation both secrets sign: a receiver still on the old one verifies.
    rotated = api.post(f"/webhook-endpoints/{endpoint['id']}/rotate-secret", {}, alice.sandbox_key)
    new_secret = rotated.json()["data"]["secret"]
    api.post(f"/webhook-endpoints/{endpoint['id']}/test", {}, alice.sandbox_key)
    send_due_deliveries_of(endpoint["id"])
    second = webhook_receiver.received[1]
    assert second.signed_by(endpoint["secret"]) and second.signed_by(new_secret)
