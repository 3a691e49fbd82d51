"""Plain http where production redirects to https: the API answers 403 HTTPS_REQUIRED in the
envelope (a followed 301 would lose a POST's body), pages keep their 301 (docs/api.md, Errors).

First through Django with production's switches, then through a real gunicorn started with
the production settings in a clean environment (tests/reliability/gunicorn_server.py).
"""

from __future__ import annotations

import uuid

import orjson
import pytest
from django.db import connection
from django.test import Client

from orders.models import Batch
from tests.factories import batch, group
from tests.helpers import assert_error
from tests.reliability.gunicorn_server import Gunicorn, Reply

MESSAGE = "The API answers over https only: send the same request to its https:// URL."


@pytest.fixture
def production_https(settings) -> Client:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return Client()  # middleware reads these settings when the client's handler loads it


def bulk(client: Client, key: str, **extra):
    return client.post(
        "/api/v1/orders/bulk",
        orjson.dumps(batch(group())),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **extra,
    )


def test_a_bulk_call_over_plain_http_is_403_https_required(db, alice, production_https):
    response = bulk(production_https, alice.sandbox_key)

    error = assert_error(response, 403, "HTTPS_REQUIRED")
    assert error["message"] == MESSAGE
    assert "Location" not in response
    assert Batch.objects.count() == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/orders"),
        ("get", "/api/v1/account"),
        ("post", "/api/v1/orders/tracking"),
        ("delete", "/api/v1/webhook-endpoints/x"),
        ("get", "/api/v1/schema/"),
        ("get", "/api/v1/no-such-path"),
    ],
)
def test_every_api_path_answers_403_over_plain_http(db, production_https, method, path):
    response = getattr(production_https, method)(path)  # no key: refused before anything else
    assert_error(response, 403, "HTTPS_REQUIRED")


def test_the_same_call_over_https_from_the_proxy_is_served(db, alice, production_https):
    response = bulk(production_https, alice.sandbox_key, HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200, response.content
    assert Batch.objects.count() == 1


@pytest.mark.parametrize("path", ["/login/", "/admin/login/", "/"])
def test_pages_keep_redirecting_to_https(db, production_https, path):
    response = production_https.get(path)
    assert response.status_code == 301
    assert response["Location"] == f"https://testserver{path}"


def test_plain_http_is_served_where_nothing_redirects(db, alice, settings):
    settings.SECURE_SSL_REDIRECT = False  # make run and the test settings
    response = bulk(Client(), alice.sandbox_key)
    assert response.status_code == 200, response.content


# --- a real gunicorn with the production settings --------------------------------------------


@pytest.fixture(scope="module")
def production(django_db_setup, tmp_path_factory):
    server = Gunicorn(connection.settings_dict, tmp_path_factory.mktemp("https") / "g.log")
    del server.env["SECURE_SSL_REDIRECT"]  # production's default: on, as DEBUG is off
    server.env["SECURE_PROXY_SSL_HEADER"] = "HTTP_X_FORWARDED_PROTO,https"
    try:
        yield server.start()
    finally:
        server.stop()


def send_bulk(server: Gunicorn, **headers: str) -> Reply:
    body = orjson.dumps(batch(group()))
    return server.request(
        "POST",
        "/api/v1/orders/bulk",
        body,
        {"Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4()), **headers},
    )


def test_gunicorn_in_production_refuses_an_api_post_over_http_with_the_envelope(production):
    reply = send_bulk(production)

    assert reply.status == 403, reply.body[:500]
    assert reply.headers["content-type"] == "application/json"
    assert "location" not in reply.headers
    envelope = reply.json()
    assert (envelope["statusCode"], envelope["success"]) == (403, False)
    assert envelope["error"]["code"] == "HTTPS_REQUIRED"
    assert envelope["error"]["message"] == MESSAGE
    assert envelope["error"]["request_id"] == reply.headers["x-request-id"]


def test_gunicorn_in_production_serves_the_api_over_https_and_redirects_pages(production):
    # Over https (as the proxy says), the same call reaches the API: no key, so 401.
    reply = send_bulk(production, **{"X-Forwarded-Proto": "https"})
    assert reply.status == 401 and reply.json()["error"]["code"] == "UNAUTHENTICATED"

    page = production.request("GET", "/login/")
    assert page.status == 301
    assert page.headers["location"] == f"https://127.0.0.1:{production.port}/login/"


def test_the_schema_lists_https_required_wherever_a_403_is_described(db, client):
    schemas = client.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    codes = {
        name: [code for part in schema["properties"]["code"]["allOf"] for code in part["enum"]]
        for name, schema in schemas.items()
        if name.endswith("Error") and "allOf" in schema.get("properties", {}).get("code", {})
    }
    forbidden = [name for name, listed in codes.items() if "ACCOUNT_SUSPENDED" in listed]
    assert sorted(forbidden) == ["ForbiddenError", "SandboxForbiddenError"]
    for name in forbidden:
        assert "HTTPS_REQUIRED" in codes[name], name
