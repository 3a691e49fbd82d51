"""The MCP server at /mcp (docs/agents.md), driven by the official SDK's own client over
Streamable HTTP against a real gunicorn (sync workers, production settings) on the test
database: the seven tools and their schemas, orders created and tracked, an idempotent
replay, the API's errors as tool errors, keys refused as the API refuses them, and one
business never seeing another's orders.

With MCP_TRANSCRIPT=<path>, the calls of the worked example and their answers are written
there as JSON: docs/agents.md's transcript is one of those.
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import orjson
import pytest
from django.db import connection
from django.utils import timezone
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from accounts.models import ApiKey, Business, Stage
from orders.models import Batch, Drop
from tests.factories import batch, drop, group
from tests.reliability.batch_hold import open_all_day
from tests.reliability.gunicorn_server import HOST, Gunicorn

pytestmark = pytest.mark.django_db(transaction=True)  # committed: gunicorn reads it

TOOLS = {
    "list_service_areas",
    "quote_orders",
    "create_orders",
    "track_orders",
    "list_orders",
    "cancel_orders",
    "get_account",
}


# Bulk-scope calls (quote, create) a key may make a minute on this server: enough for every
# test's own key, few enough to reach in one.
BULK_LIMIT = 5


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    running = Gunicorn(connection.settings_dict, tmp_path_factory.mktemp("mcp") / "gunicorn.log")
    running.env["RATE_LIMIT_BULK"] = f"{BULK_LIMIT}/minute"
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.fixture
def shop(make_tenant):
    open_all_day()  # gunicorn runs on the real clock
    return make_tenant(name="Agent Shop", sandbox_balance="1000.00")


@pytest.fixture
def stranger(make_tenant):
    return make_tenant(name="Stranger Shop", sandbox_balance="1000.00")


class Agent:
    """An MCP client of the SDK (ClientSession over streamable_http_client) with one key.

    Each `session` is a connection of its own: initialize, then the work, then close.
    """

    def __init__(self, server, key: str) -> None:
        self.url = f"http://{HOST}:{server.port}/mcp"
        self.key = key
        self.transcript: list[dict[str, Any]] = []

    def session(self, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        async def main():
            headers = {"Authorization": f"Bearer {self.key}"}
            async with (
                create_mcp_http_client(headers=headers) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await work(session)

        return anyio.run(main)

    def call(self, name: str, arguments: dict[str, Any] | None = None):
        result = self.session(lambda session: session.call_tool(name, arguments or {}))
        self.transcript.append(
            {
                "tool": name,
                "arguments": arguments or {},
                "isError": result.is_error,
                "structuredContent": copy.deepcopy(result.structured_content),
            }
        )
        # The text content is the structured content as JSON, for clients that read text.
        assert json.loads(result.content[0].text) == result.structured_content
        return result

    def answer(self, name: str, arguments: dict[str, Any] | None = None) -> dict:
        result = self.call(name, arguments)
        assert not result.is_error, result.structured_content
        return result.structured_content

    def refusal(self, name: str, arguments: dict[str, Any] | None = None) -> dict:
        result = self.call(name, arguments)
        assert result.is_error, result.structured_content
        return result.structured_content


def mcp_post(server, key: str | None, message: dict, method: str = "POST"):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return server.request(method, "/mcp", orjson.dumps(message), headers)


def two_drops(prefix: str) -> dict:
    return batch(group(drop(f"{prefix}-1"), drop(f"{prefix}-2")), client_batch_id=f"{prefix}-B")


def test_the_seven_tools_are_listed_with_the_apis_own_request_shapes(server, shop):
    tools = Agent(server, shop.sandbox_key).session(lambda session: session.list_tools()).tools
    by_name = {tool.name: tool for tool in tools}

    assert set(by_name) == TOOLS
    for tool in tools:
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert "$ref" not in json.dumps(schema) and "nullable" not in json.dumps(schema)
        assert tool.description
    create = by_name["create_orders"].input_schema
    assert set(create["required"]) == {"client_batch_id", "orders"}
    assert {"orders", "client_batch_id", "quote_id", "idempotency_key"} <= set(create["properties"])
    assert set(by_name["quote_orders"].input_schema["required"]) == {"client_batch_id", "orders"}
    # The body the API takes validates against the tool's schema; one it refuses does not.
    validator = jsonschema.Draft202012Validator(create)
    assert list(validator.iter_errors(two_drops("SCHEMA"))) == []
    assert list(validator.iter_errors({"client_batch_id": "B", "orders": [{"dropoff": []}]}))
    for name in ("track_orders", "cancel_orders"):
        assert by_name[name].input_schema["required"] == ["identifiers"]
    listing = by_name["list_orders"].input_schema["properties"]
    assert {"status", "batch_id", "created_since", "updated_since", "cursor", "limit"} <= set(
        listing
    )
    assert by_name["list_orders"].annotations.read_only_hint is True
    # Answers have the API's response shapes (the SDK's client checks each answer against
    # them); create_orders' adds its key and whether it was a replay.
    answer = by_name["create_orders"].output_schema["required"]
    assert {"batch_id", "counts", "orders", "idempotency_key", "replayed"} <= set(answer)
    assert set(by_name["get_account"].output_schema["properties"]) >= {"business", "wallet"}
    assert by_name["cancel_orders"].annotations.destructive_hint is True


def test_orders_are_quoted_created_tracked_listed_and_cancelled(server, shop):
    agent = Agent(server, shop.sandbox_key)
    body = two_drops("MCP")

    areas = agent.answer("list_service_areas")
    assert areas["areas"] and areas["areas"][0]["hours"]
    quote = agent.answer("quote_orders", body)
    assert quote["counts"] == {"total": 2, "quotable": 2, "rejected": 0}
    created = agent.answer("create_orders", {**body, "quote_id": quote["quote_id"]})
    key = created.pop("idempotency_key")
    assert str(uuid.UUID(key)) == key
    assert created.pop("replayed") is False
    assert created["counts"]["accepted"] == 2
    prices = [o["price"] for o in created["orders"]]
    assert prices == [o["price"] for o in quote["orders"]]
    batch_row = Batch.objects.get(pk=created["batch_id"])
    assert batch_row.business == shop.business
    assert Drop.objects.filter(order__batch=batch_row).count() == 2

    tracked = agent.answer("track_orders", {"identifiers": ["MCP-1", "MCP-2", "MCP-9"]})
    assert [o["status"] for o in tracked["orders"]] == ["PENDING", "PENDING", "NOT_FOUND"]
    assert {o["batch_id"] for o in tracked["orders"][:2]} == {created["batch_id"]}
    of_batch = {"batch_id": created["batch_id"]}
    listed = agent.answer("list_orders", {**of_batch, "limit": 1})
    assert len(listed["orders"]) == 1 and listed["has_more"] is True
    rest = agent.answer("list_orders", {**of_batch, "cursor": listed["next_cursor"]})
    seen = {o["client_order_id"] for o in listed["orders"] + rest["orders"]}
    assert seen == {"MCP-1", "MCP-2"} and rest["has_more"] is False
    assert agent.answer("list_orders", {"status": ["PENDING"]})["orders"]

    cancelled = agent.answer("cancel_orders", {"identifiers": ["MCP-1"]})
    assert cancelled["orders"][0]["status"] == "CANCELLED"
    account = agent.answer("get_account")
    assert account["business"]["name"] == "Agent Shop"
    assert account["environment"] == "sandbox"
    write_transcript(agent, "orders")


def write_transcript(agent: Agent, name: str) -> None:
    """With MCP_TRANSCRIPT set, add this test's calls and answers to that JSON file."""
    target = os.environ.get("MCP_TRANSCRIPT")
    if target:
        path = Path(target)
        written = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**written, name: agent.transcript}, indent=2))


def test_create_orders_with_the_same_key_replays_the_same_batch(server, shop):
    agent = Agent(server, shop.sandbox_key)
    key = str(uuid.uuid4())
    body = {**two_drops("REPLAY"), "idempotency_key": key}

    first = agent.answer("create_orders", body)
    again = agent.answer("create_orders", body)

    assert first["idempotency_key"] == again["idempotency_key"] == key
    assert (first["replayed"], again["replayed"]) == (False, True)
    assert again["batch_id"] == first["batch_id"]
    assert Batch.objects.filter(business=shop.business).count() == 1
    other_body = agent.refusal("create_orders", {**two_drops("OTHER"), "idempotency_key": key})
    assert other_body["code"] == "IDEMPOTENCY_KEY_REUSED" and other_body["status"] == 409


def test_the_apis_errors_are_tool_errors_with_code_message_and_details(server, shop):
    agent = Agent(server, shop.sandbox_key)

    error = agent.refusal("create_orders", {"client_batch_id": "", "orders": []})
    assert error["code"] == "VALIDATION_ERROR"
    assert error["status"] == 400
    assert error["message"] == "The request body is not valid."
    assert {detail["field"] for detail in error["details"]} == {"client_batch_id", "orders"}
    assert Batch.objects.count() == 0

    bad_query = agent.refusal("list_orders", {"limit": 0, "colour": "red"})
    assert bad_query["code"] == "VALIDATION_ERROR"
    assert {d["field"] for d in bad_query["details"]} == {"limit", "colour"}
    bad_key = agent.refusal("create_orders", {**two_drops("KEY"), "idempotency_key": "nope"})
    assert bad_key["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert agent.refusal("track_orders", {})["details"][0]["field"] == "identifiers"
    write_transcript(agent, "errors")


def test_an_unknown_tool_is_a_protocol_error(server, shop):
    async def work(session):
        try:
            await session.call_tool("delete_everything", {})
        except MCPError as error:
            return error
        raise AssertionError("an unknown tool was called")

    error = Agent(server, shop.sandbox_key).session(work)
    assert (error.code, error.error.message) == (INVALID_PARAMS, "Unknown tool: delete_everything")


def test_one_business_never_sees_anothers_orders(server, shop, stranger):
    Agent(server, shop.sandbox_key).answer("create_orders", two_drops("MINE"))
    outsider = Agent(server, stranger.sandbox_key)

    tracked = outsider.answer("track_orders", {"identifiers": ["MINE-1", "MINE-2"]})
    assert [o["status"] for o in tracked["orders"]] == ["NOT_FOUND", "NOT_FOUND"]
    assert outsider.answer("list_orders")["orders"] == []
    cancelled = outsider.answer("cancel_orders", {"identifiers": ["MINE-1"]})
    assert cancelled["orders"][0]["status"] == "NOT_FOUND"
    assert set(Drop.objects.values_list("status", flat=True)) == {"PENDING"}
    assert outsider.answer("get_account")["business"]["name"] == "Stranger Shop"


def test_an_account_the_api_refuses_is_refused_at_the_door(server, shop):
    """The API's permission classes guard /mcp too: the same 403s, before any MCP message."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    Business.objects.filter(pk=shop.business.pk).update(stage=Stage.APPROVED)
    reply = mcp_post(server, shop.live_key, initialize)
    assert reply.status == 403
    assert reply.json()["error"]["code"] == "LIVE_ACCESS_DISABLED"
    Business.objects.filter(pk=shop.business.pk).update(stage=Stage.SUSPENDED)
    assert mcp_post(server, shop.sandbox_key, initialize).json()["error"]["code"] == (
        "ACCOUNT_SUSPENDED"
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (None, "Authentication credentials were not provided."),
        ("svc_test_short", "The API key is malformed."),
        ("svc_test_" + "x" * 40, "The API key is unknown or revoked."),
    ],
)
def test_a_missing_or_bad_key_is_refused_as_the_api_refuses_it(server, key, message):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    reply = mcp_post(server, key, initialize)

    assert reply.status == 401
    assert reply.headers["www-authenticate"] == "Bearer"
    error = reply.json()["error"]
    assert (error["code"], error["message"]) == ("UNAUTHENTICATED", message)
    assert error["request_id"] == reply.headers["x-request-id"]


def test_a_revoked_key_gets_no_session(server, shop):
    ApiKey.objects.filter(business=shop.business).update(revoked_at=timezone.now())
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    error = mcp_post(server, shop.sandbox_key, initialize).json()["error"]
    assert error["message"] == "The API key is unknown or revoked."

    with pytest.raises(ExceptionGroup) as refused:
        Agent(server, shop.sandbox_key).session(lambda session: session.list_tools())
    assert refused.group_contains(MCPError, depth=2)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_on_mcp_are_a_405_in_the_envelope(server, shop, method):
    reply = mcp_post(server, shop.sandbox_key, {}, method=method)

    assert reply.status == 405
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["allow"] == "POST"
    assert reply.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_a_body_that_is_not_json_rpc_is_a_4xx_never_a_500(server, shop):
    reply = server.request(
        "POST",
        "/mcp",
        b"{not json",
        {
            "Authorization": f"Bearer {shop.sandbox_key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert 400 <= reply.status < 500, reply.body
    assert reply.headers["content-type"].startswith("application/json")


def test_the_2026_protocol_client_reaches_the_same_tools(server, shop):
    """The SDK's default Client negotiates the per-request protocol (2026-07-28)."""

    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {shop.sandbox_key}"})
        transport = streamable_http_client(f"http://{HOST}:{server.port}/mcp", http_client=http)
        async with http, Client(transport) as client:
            tools = await client.list_tools()
            account = await client.call_tool("get_account", {})
            return client.protocol_version, tools, account

    version, tools, account = anyio.run(main)
    assert version == "2026-07-28"
    assert {tool.name for tool in tools.tools} == TOOLS
    assert account.structured_content["business"]["name"] == "Agent Shop"


def test_each_tool_call_counts_once_against_the_keys_rate_limit(server, shop):
    """The tool's API call is counted as that call; MCP's own messages are not counted."""
    auth = {"Authorization": f"Bearer {shop.sandbox_key}"}

    def remaining() -> int:
        reply = server.request("GET", "/api/v1/account", headers=auth)
        return int(reply.headers["ratelimit-remaining"])

    before = remaining()
    Agent(server, shop.sandbox_key).answer("get_account")  # initialize, list, call
    assert remaining() == before - 2


def test_past_the_keys_rate_limit_a_tool_says_when_to_retry(server, shop):
    agent = Agent(server, shop.sandbox_key)
    body = two_drops("LIMIT")
    for _ in range(BULK_LIMIT):
        agent.answer("quote_orders", body)

    refusal = agent.refusal("quote_orders", body)
    assert (refusal["code"], refusal["status"]) == ("RATE_LIMITED", 429)
    assert 0 < refusal["retry_after_seconds"] <= 60
    assert agent.answer("get_account")  # another scope, its own count


def test_each_tool_is_described_by_the_schema_the_api_serves(server, shop):
    """Titles and arguments are read from GET /api/v1/schema/, not copied: a field the API
    adds is an argument of its tool."""
    tools = Agent(server, shop.sandbox_key).session(lambda session: session.list_tools()).tools
    by_name = {tool.name: tool for tool in tools}
    served = server.request("GET", "/api/v1/schema/?format=json").json()
    operations = {
        operation["operationId"]: operation
        for methods in served["paths"].values()
        for operation in methods.values()
    }
    components = served["components"]["schemas"]
    mirrors = {
        "list_service_areas": "service_areas_list",
        "quote_orders": "orders_quote",
        "create_orders": "orders_bulk",
        "track_orders": "orders_tracking",
        "list_orders": "orders_list",
        "cancel_orders": "orders_cancel",
        "get_account": "account_retrieve",
    }
    for name, operation_id in mirrors.items():
        assert by_name[name].title == operations[operation_id]["summary"]
    body = operations["orders_bulk"]["requestBody"]["content"]["application/json"]["schema"]
    fields = set(components[body["$ref"].rsplit("/", 1)[1]]["properties"])
    assert set(by_name["create_orders"].input_schema["properties"]) == fields | {"idempotency_key"}
    query = {p["name"] for p in operations["orders_list"]["parameters"] if p["in"] == "query"}
    assert set(by_name["list_orders"].input_schema["properties"]) == query
