"""URL map: the API under /api/v1, the operator console under /admin, the dashboard at /."""

from django.contrib import admin
from django.urls import include, path, re_path

from core.handlers import unknown_path
from core.health import liveness, readiness

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    # Any other /api/ path: a JSON 404 even when DEBUG would show its HTML 404 page.
    re_path(r"^api/", unknown_path),
    path("healthz", liveness),
    path("readyz", readiness),
    path("", include("dashboard.urls")),
]

# Errors raised before or outside a view: the envelope under /api/, a short page elsewhere.
handler400 = "core.handlers.bad_request"
handler404 = "core.handlers.not_found"
handler500 = "core.handlers.server_error"
