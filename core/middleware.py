"""Request-wide concerns: request ids on responses and log lines, the access log, https for the
API, the body limit."""

from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid

import psycopg
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, connections

from core.api import error_response
from core.logging import bind_request_id, unbind_request_id

log = logging.getLogger("api")
access_log = logging.getLogger("api.access")

# \Z, not $: "$" would also match before a final newline, which no header may carry.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}\Z")


class RequestIdMiddleware:
    """Echo the caller's X-Request-Id when it is sane, else mint one; always send it back.

    The id is also bound to every log record written while the request is served
    (core/logging.py), and each API request ends with one access log line.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        given = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = given if _SANE_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = bind_request_id(request.request_id)
        started = time.perf_counter()
        timer = DatabaseTimer()
        try:
            with contextlib.ExitStack() as timed:
                for alias in settings.DATABASES:  # the primary, and a replica if there is one
                    timed.enter_context(connections[alias].execute_wrapper(timer))
                response = self.get_response(request)
            response["X-Request-Id"] = request.request_id
            if is_api(request):
                log_access(request, response, time.perf_counter() - started, timer.seconds)
            return response
        finally:
            unbind_request_id(token)


class DatabaseTimer:
    """How long a request waited on the database (statements through Django's cursor).

    COPY (core/writes.py) goes around the cursor wrapper and is not counted; the access log
    then under-reports a batch's database time by its COPYs.
    """

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started


def log_access(request, response, seconds: float, db_seconds: float = 0.0) -> None:
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
            "db_ms": round(db_seconds * 1000, 1),
            "environment": getattr(principal, "environment", None),
            "business_id": str(business.pk) if business is not None else None,
        },
    )


# The MCP endpoint (agents/views.py) is the API too: a key, JSON answers, the envelope.
MCP_PATHS = ("/mcp", "/mcp/")


def is_api(request) -> bool:
    return request.path.startswith("/api/") or request.path in MCP_PATHS


class ApiHttpsOnlyMiddleware:
    """Where plain http is redirected (SECURE_SSL_REDIRECT), an API call over it is refused.

    Pages keep Django's 301 to https, but a client that follows a 301 re-sends a POST as a
    body-less GET, so the API answers 403 HTTPS_REQUIRED instead (docs/api.md, Errors),
    before the body is read. The paths exempt from the redirect stay exempt.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.exempt = [re.compile(pattern) for pattern in settings.SECURE_REDIRECT_EXEMPT]

    def __call__(self, request):
        if (
            settings.SECURE_SSL_REDIRECT
            and is_api(request)
            and not request.is_secure()
            and not any(pattern.search(request.path.lstrip("/")) for pattern in self.exempt)
        ):
            return error_response(
                request,
                403,
                "HTTPS_REQUIRED",
                "The API answers over https only: send the same request to its https:// URL.",
            )
        return self.get_response(request)


class ApiBodyLimitMiddleware:
    """Refuse API bodies over MAX_BODY_BYTES with 413 before anything reads them.

    A chunked body (no Content-Length) is refused with 411: Django reads a request body by
    its declared length, so it would otherwise be read as empty.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api(request):
            if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
                return error_response(
                    request,
                    411,
                    "LENGTH_REQUIRED",
                    "Send the body with a Content-Length header; chunked bodies are not read.",
                )
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
        if database_unavailable(exception):
            log.warning(
                "database unavailable in %s %s: %s", request.method, request.path, exception
            )
            return service_unavailable(request)
        log.exception(
            "unhandled error in %s %s (request %s)",
            request.method,
            request.path,
            getattr(request, "request_id", "-"),
        )
        return error_response(request, 500, "INTERNAL_ERROR", "Something went wrong on our side.")


# SQLSTATEs that mean "the server is not there for us now", not "this statement is wrong":
# class 08 (connection exceptions) and the server shutting down or still starting.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")
RETRY_AFTER_SECONDS = 5


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database cannot be reached (as opposed to a failed statement)."""
    if isinstance(exc, InterfaceError):  # the connection was closed under us
        return True
    if isinstance(exc, DatabaseError):
        exc = exc.__cause__  # Django wraps the driver's error; the driver's says what happened
    # Unwrapped too: the batch's COPY (core/writes.py) talks to psycopg's cursor directly.
    if not isinstance(exc, psycopg.Error):
        return False
    if isinstance(exc, psycopg.InterfaceError):
        return True
    if exc.sqlstate is None:
        # psycopg gives no SQLSTATE when it could not connect or lost the connection
        # (connection refused, server closed the connection unexpectedly).
        return isinstance(exc, psycopg.OperationalError)
    return exc.sqlstate.startswith(_UNAVAILABLE_STATES)


def service_unavailable(request):
    return error_response(
        request,
        503,
        "SERVICE_UNAVAILABLE",
        "The service is briefly unavailable; retry shortly.",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
