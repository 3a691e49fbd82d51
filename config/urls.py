"""URL map: the API under /api/v1, the operator console under /admin, the dashboard at /."""

from django.contrib import admin
from django.urls import include, path, re_path

from agents.views import mcp_endpoint
from config.api_urls import api_index
from core.handlers import unknown_path
from core.health import liveness, readiness
from notifications.pages import unsubscribe_page
from tracking.pages import delivery_photo_view, tracking_page_view

urlpatterns = [
    # The console's dispatch board (console/dispatch.py): a page of the console that is no
    # model's, so before Django admin's own URLs.
    path("admin/dispatch/board/", include("console.dispatch")),
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("api/v1", api_index),  # the index without its slash, as every route answers both
    # Any other /api/ path: a JSON 404 even when DEBUG would show its HTML 404 page.
    re_path(r"^api/", unknown_path),
    path("healthz", liveness),
    path("readyz", readiness),
    # The recipient's pages (docs/contract.md §14). Anything under /t/ and /pod/ reaches the view,
    # slashes and odd bytes too, so every bad link gets the same 404 page.
    re_path(r"^t/(?P<token>[\s\S]*)\Z", tracking_page_view, name="tracking_page"),
    re_path(r"^pod/(?P<signed>[\s\S]*)\Z", delivery_photo_view, name="delivery_photo"),
    # An email's unsubscribe link (docs/notifications.md, "Stopping messages").
    re_path(r"^unsubscribe/(?P<token>[\s\S]*)\Z", unsubscribe_page, name="unsubscribe"),
    path("courier/", include("couriers.urls")),  # the courier app (docs/couriers.md)
    # The MCP server for AI agents (docs/agents.md): Streamable HTTP, with or without a slash.
    path("mcp", mcp_endpoint, name="mcp"),
    path("mcp/", mcp_endpoint),
    path("", include("dashboard.urls")),
]

# Errors raised before or outside a view: the envelope under /api/, a short page elsewhere.
handler400 = "core.handlers.bad_request"
handler404 = "core.handlers.not_found"
handler500 = "core.handlers.server_error"
