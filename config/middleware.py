"""Request-wide concerns: request ids on responses and log lines, the access log, the body limit."""

from __future__ import annotations

import logging
import re
import time
import uuid

from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from config.api import error_response
from config.logging import bind_request_id, unbind_request_id

log = logging.getLogger("api")
access_log = logging.getLogger("api.access")

_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


class RequestIdMiddleware:
    """Echo the caller's X-Request-Id when it is sane, else mint one; always send it back.

    The id is also bound to every log record written while the request is served
    (config/logging.py), and each API request ends with one access log line.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        given = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = given if _SANE_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = bind_request_id(request.request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-Id"] = request.request_id
            if is_api(request):
                log_access(request, response, time.perf_counter() - started)
            return response
        finally:
            unbind_request_id(token)


def log_access(request, response, seconds: float) -> None:
    # Who called is told by environment and business only: never a header, never the key.
    principal = getattr(request, "auth", None)
    business = getattr(principal, "business", None)
    access_log.info(
        "%s %s %s",
        request.method,
        request.path,
        response.status_code,
        extra={
            "request_id": request.request_id,
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "duration_ms": round(seconds * 1000, 1),
            "environment": getattr(principal, "environment", None),
            "business_id": str(business.pk) if business is not None else None,
        },
    )


def is_api(request) -> bool:
    return request.path.startswith("/api/")


class ApiBodyLimitMiddleware:
    """Refuse API bodies over MAX_BODY_BYTES with 413 before anything reads them."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api(request):
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            try:
                if declared > settings.MAX_BODY_BYTES:
                    raise RequestDataTooBig
                request.body  # noqa: B018 -- read now so a chunked oversize body fails here
            except RequestDataTooBig:
                return error_response(
                    request,
                    413,
                    "PAYLOAD_TOO_LARGE",
                    f"The body is larger than {settings.MAX_BODY_BYTES} bytes.",
                )
        return self.get_response(request)


class ApiErrorMiddleware:
    """An unexpected exception under /api/ answers a generic JSON 500 that leaks nothing."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_api(request):
            return None
        log.exception(
            "unhandled error in %s %s (request %s)",
            request.method,
            request.path,
            getattr(request, "request_id", "-"),
        )
        return error_response(request, 500, "INTERNAL_ERROR", "Something went wrong on our side.")
