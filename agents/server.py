"""The MCP server of one HTTP request: the SDK's Streamable HTTP handling, run from WSGI.

gunicorn's sync workers serve one request at a time in a thread with no event loop, and a
worker may serve the next request of the same client or not; so the SDK runs stateless
(no session to find again) and answers in JSON (no stream to hold open), and each request
gets its own server and session manager, run to completion by asgiref's async_to_sync.
A tool's API call goes back to this request's thread (sync_to_async, thread_sensitive),
where Django's database connection lives (docs/decisions.md, "The MCP server runs the API's
own requests in-process").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import orjson
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.http import HttpRequest
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from agents.tools import TOOLS, call_tool, listed_tools

NAME = "delivery-orders"
INSTRUCTIONS = (
    "Same-day delivery orders for one business, through its API key: a sandbox key "
    "(svc_test_) acts on test orders, a live key (svc_live_) on real ones. Quote before "
    "creating; create_orders answers every order as accepted or rejected with a reason. "
    "Errors carry the API's code, message and details (docs/api.md)."
)


def mcp_server(caller: HttpRequest) -> Server:
    """A server whose tools act as `caller`: its key, its business, its environment."""

    # Django's database work runs back on the request's own thread (thread_sensitive),
    # never on the event loop's.
    in_request_thread = {"thread_sensitive": True}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None):
        tools = await sync_to_async(listed_tools, **in_request_thread)()
        return types.ListToolsResult(tools=tools)

    async def run_tool(ctx: Any, params: types.CallToolRequestParams):
        if params.name not in TOOLS:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        return await sync_to_async(call_tool, **in_request_thread)(caller, params.name, arguments)

    return Server(
        NAME,
        version=settings.SPECTACULAR_SETTINGS["VERSION"],
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
    )


@dataclass
class Reply:
    """What the SDK sent back through ASGI, for Django to send."""

    status: int | None = None  # None until the SDK starts its answer
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


def asgi_scope(request: HttpRequest) -> dict[str, Any]:
    """The ASGI scope of a Django request (what the SDK reads: method, path, headers)."""
    host = request.get_host().rpartition(":")[0] or request.get_host()
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "server": (host, int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


async def _exchange(server: Server, scope: dict[str, Any], body: bytes) -> Reply:
    """One request through the SDK's session manager, which lives as long as the request."""
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        max_request_body_size=settings.MAX_BODY_BYTES,
    )
    reply, answered, read = Reply(), anyio.Event(), False

    async def receive() -> dict[str, Any]:
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays until the answer is sent
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = message.get("headers", [])
            reply.status = message["status"]
            reply.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        elif message["type"] == "http.response.body":
            reply.body += message.get("body", b"")
            if not message.get("more_body"):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    if reply.status is None:  # a bug of ours or the SDK's: the middleware's JSON 500
        raise RuntimeError("The MCP SDK ended the request without an answer.")
    return reply


BATCH_REFUSED = (
    "Batches of JSON-RPC requests are not supported: send one request per call "
    "(a JSON object, not an array)."
)


def batch_refusal(body: bytes) -> Reply | None:
    """A JSON-RPC batch (a JSON array) gets a JSON-RPC error in words, Invalid Request; the
    SDK, which takes no batches, would answer its validator's internals."""
    if body.lstrip()[:1] != b"[":
        return None
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return None  # not JSON at all: the SDK's parse error says so
    error = {"code": types.INVALID_REQUEST, "message": BATCH_REFUSED}
    answer = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    return Reply(400, [("Content-Type", "application/json")], bytearray(answer))


def serve(request: HttpRequest) -> Reply:
    """Answer one MCP request over HTTP as `request`'s caller."""
    if refused := batch_refusal(request.body):
        return refused
    return async_to_sync(_exchange)(mcp_server(request), asgi_scope(request), request.body)
