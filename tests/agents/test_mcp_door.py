"""What /mcp shares with the API before any MCP message is read: https only where production
redirects, the body limit, and the envelope (docs/agents.md)."""

from __future__ import annotations

import orjson
import pytest
from django.test import Client

from tests.helpers import assert_error

INITIALIZE = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
)


def post_mcp(client: Client, key: str, body: bytes = INITIALIZE, path: str = "/mcp", **extra):
    return client.post(
        path,
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_ACCEPT="application/json, text/event-stream",
        **extra,
    )


@pytest.fixture
def production_https(settings) -> Client:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return Client()


def test_plain_http_is_403_https_required_not_a_redirect(db, alice, production_https):
    response = post_mcp(production_https, alice.sandbox_key)

    assert_error(response, 403, "HTTPS_REQUIRED")
    assert "Location" not in response


def test_https_from_the_proxy_is_served(db, alice, production_https):
    response = post_mcp(production_https, alice.sandbox_key, HTTP_X_FORWARDED_PROTO="https")

    assert response.status_code == 200, response.content
    assert orjson.loads(response.content)["result"]["serverInfo"]["name"] == "delivery-orders"


def test_a_body_over_the_limit_is_413_in_the_envelope(db, alice, settings):
    settings.MAX_BODY_BYTES = 100
    response = post_mcp(Client(), alice.sandbox_key, b" " * 101 + INITIALIZE)

    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_the_path_with_a_slash_is_the_same_endpoint(db, alice):
    response = post_mcp(Client(), alice.sandbox_key, path="/mcp/")

    assert response.status_code == 200, response.content
    assert orjson.loads(response.content)["result"]["protocolVersion"] == "2025-06-18"
