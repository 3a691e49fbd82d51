"""POST /mcp: the MCP server's Streamable HTTP endpoint (docs/agents.md).

A DRF view, so that the key is checked as every API call checks it: the same
authentication and permission classes, the same 401 and 403 in the envelope. MCP's own
messages (initialize, tools/list) are not counted against the key's rate limit; each
tool's API call is, as that call (docs/decisions.md, "The MCP server runs the API's own
requests in-process").
"""

from __future__ import annotations

import importlib

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

# Headers the SDK sets that Django sets itself from the body it sends.
_OWN_HEADERS = frozenset({"content-length"})


@extend_schema(exclude=True)  # an MCP endpoint, described by its tools (docs/agents.md)
class McpView(APIView):
    throttle_classes: list = []
    # Stateless and answered in JSON: no GET stream to open, no session to DELETE, so any
    # method but POST is a 405 in the envelope, never the SDK's or a page.
    http_method_names = ["post"]

    def post(self, request) -> HttpResponse:
        reply = _server().serve(request._request)
        response = HttpResponse(bytes(reply.body), status=reply.status)
        for name, value in reply.headers:
            if name.lower() not in _OWN_HEADERS:
                response[name] = value
        return response


mcp_endpoint = McpView.as_view()


def _server():
    """agents.server, imported at the first MCP call rather than with the URL conf: the MCP
    SDK defines ~550 pydantic models, ~1.5 s of CPU to import, which every process reading
    the URLs paid (each `manage.py` command's system checks, each task worker). The serving
    process imports it before it forks (config/wsgi.py), so no caller waits for it."""
    return importlib.import_module("agents.server")
