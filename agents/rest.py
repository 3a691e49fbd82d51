"""A call of the REST API from inside the process, as the MCP client's own request.

A tool does not call the services itself: it sends the API the request an integrator would
send, through Django's handler (every middleware, the URL resolver, the view with its
authentication, permissions, rate limit and validation), carrying the caller's headers,
the bearer key first. Whatever the API refuses, the tool refuses in the same words, and a
rule added to an endpoint holds for its tool without a line here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlencode

import orjson
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.http import HttpRequest

# What the MCP request says about its own body, its own path and its own protocol: none of
# it belongs to the API call made on its behalf.
_NOT_CARRIED = frozenset(
    {
        "CONTENT_TYPE",
        "CONTENT_LENGTH",
        "HTTP_TRANSFER_ENCODING",
        "HTTP_ACCEPT",
        "HTTP_COOKIE",
        "HTTP_IDEMPOTENCY_KEY",
        "PATH_INFO",
        "QUERY_STRING",
        "REQUEST_METHOD",
        "RAW_URI",
        "REQUEST_URI",
        "wsgi.input",
    }
)


@dataclass(frozen=True, slots=True)
class Answer:
    """The API's answer: its status, its envelope parsed, and the headers a tool reports."""

    status: int
    envelope: dict[str, Any]
    headers: dict[str, str]

    @property
    def ok(self) -> bool:
        return bool(self.envelope.get("success"))


@cache
def _handler() -> WSGIHandler:
    """Django's own handler with the project's middleware, loaded once per process."""
    return WSGIHandler()


def call_api(
    caller: HttpRequest,
    method: str,
    path: str,
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """Send `method path` to the API as `caller` (its key, host, scheme and address) would."""
    raw = b"" if body is None else orjson.dumps(body)
    environ = {key: value for key, value in caller.META.items() if key not in _NOT_CARRIED}
    environ |= {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": urlencode(query or {}),
        "CONTENT_LENGTH": str(len(raw)),
        "wsgi.input": io.BytesIO(raw),
        # One id for the MCP request and the API calls it makes: the logs line up, and an
        # error's request_id names the request the client sent.
        "HTTP_X_REQUEST_ID": getattr(caller, "request_id", ""),
    }
    if body is not None:
        environ["CONTENT_TYPE"] = "application/json"
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    response = _handler().get_response(WSGIRequest(environ))
    return Answer(
        status=response.status_code,
        envelope=orjson.loads(response.content),
        headers={name.lower(): value for name, value in response.items()},
    )
