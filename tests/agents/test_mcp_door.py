"""What /mcp shares with the API before any MCP message is read: https only where production
redirects, the body limit, and the envelope (docs/agents.md)."""

from __future__ import annotations

import orjson
import pytest
from django.test import Client

from couriers.services import issue_token, provision_courier
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


def test_a_json_rpc_batch_is_refused_in_words_as_a_json_rpc_error(db, alice):
    batch = orjson.dumps([orjson.loads(INITIALIZE), {"jsonrpc": "2.0", "id": 2, "method": "ping"}])

    response = post_mcp(Client(), alice.sandbox_key, batch)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert orjson.loads(response.content) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Batches of JSON-RPC requests are not supported: send one request per "
            "call (a JSON object, not an array).",
        },
    }


def test_a_courier_token_is_told_it_is_not_an_api_key(db, api):
    courier = provision_courier(
        name="Dara Sok", phone="+85512340001", vehicle="motorbike", password="correct horse"
    )
    token = issue_token(courier=courier)

    for response in (post_mcp(Client(), token), api.get("/account", token)):
        error = assert_error(response, 401, "UNAUTHENTICATED")
        assert error["message"] == (
            "This is a courier token, not an API key: courier tokens work only in the courier "
            "API (/api/v1/courier/). Send the business's API key (svc_test_… or svc_live_…)."
        )
        assert response["WWW-Authenticate"] == "Bearer"
