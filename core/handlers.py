"""Django's error views (handler400/404/500, CSRF_FAILURE_VIEW): under /api/ the envelope."""

import sys

from django.http import (
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
    HttpResponseServerError,
)
from django.views.decorators.csrf import csrf_exempt

from core.api import error_response
from core.middleware import RETRY_AFTER_SECONDS, database_unavailable, is_api, service_unavailable


def bad_request(request, exception=None):
    # Reached for what Django refuses before any view: a Host outside ALLOWED_HOSTS, a body
    # it will not parse (SuspiciousOperation).
    if is_api(request):
        return error_response(request, 400, "BAD_REQUEST", "The request could not be served.")
    return HttpResponseBadRequest("<h1>Bad request</h1>")


def not_found(request, exception=None):
    if is_api(request):
        return error_response(request, 404, "NOT_FOUND", "No such resource.")
    return HttpResponseNotFound("<h1>Not found</h1>")


def server_error(request):
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


@csrf_exempt  # any method, cookies or not: an unknown path is a 404, never a CSRF page
def unknown_path(request, rest=""):
    """Any other path under /api/ is a JSON 404 for every method, in DEBUG too."""
    return error_response(request, 404, "NOT_FOUND", "No such resource.")
