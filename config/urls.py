"""URL map: the API under /api/v1, the operator console under /admin, the dashboard at /."""

import sys

from django.contrib import admin
from django.http import (
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
    HttpResponseServerError,
)
from django.urls import include, path, re_path

from config.api import error_response
from config.api_urls import unknown_path
from config.health import liveness, readiness
from config.middleware import RETRY_AFTER_SECONDS, database_unavailable, is_api, service_unavailable

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    # Any other /api/ path: a JSON 404 even when DEBUG would show its HTML 404 page.
    re_path(r"^api/", unknown_path),
    path("healthz", liveness),
    path("readyz", readiness),
    path("", include("accounts.urls")),
]


def handler400(request, exception=None):
    # Reached for what Django refuses before any view: a Host outside ALLOWED_HOSTS, a body
    # it will not parse (SuspiciousOperation).
    if is_api(request):
        return error_response(request, 400, "BAD_REQUEST", "The request could not be served.")
    return HttpResponseBadRequest("<h1>Bad request</h1>")


def handler404(request, exception=None):
    if is_api(request):
        return error_response(request, 404, "NOT_FOUND", "No such resource.")
    return HttpResponseNotFound("<h1>Not found</h1>")


def handler500(request):
    # Called while the exception is being handled, so sys.exc_info() names it: a database
    # that is away (in a middleware, before any view) is a 503 to retry, not a bug.
    if database_unavailable(sys.exc_info()[1]):
        if is_api(request):
            return service_unavailable(request)
        response = HttpResponse(
            "<h1>Service briefly unavailable</h1><p>Please try again in a moment.</p>", status=503
        )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if is_api(request):
        return error_response(request, 500, "INTERNAL_ERROR", "Something went wrong on our side.")
    return HttpResponseServerError("<h1>Server error</h1>")


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: API clients authenticate with keys, and always read the envelope."""
    if is_api(request):
        return error_response(request, 403, "FORBIDDEN", "The request was refused.")
    return HttpResponseForbidden("<h1>Forbidden</h1><p>The form expired; reload the page.</p>")
