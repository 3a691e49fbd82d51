"""The API's wire conventions (DESIGN.md §3): envelopes, errors, JSON in and out."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import Http404, HttpRequest, HttpResponse
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer

JSON = "application/json"


class ApiError(exceptions.APIException):
    """A request-level error with a stable code, rendered in the error envelope."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status
        self.code = code
        self.message = message
        self.details = details or []
        self.headers = headers or {}


def validation_error(details: list[dict[str, str]]) -> ApiError:
    return ApiError(400, "VALIDATION_ERROR", "The request body is not valid.", details)


def dumps(payload: Any) -> bytes:
    return orjson.dumps(payload)


def success_body(data: Any, status: int = 200) -> bytes:
    return dumps({"statusCode": status, "success": True, "data": data})


def json_response(body: bytes, status: int = 200, headers: dict | None = None) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type=JSON)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def envelope(data: Any, status: int = 200) -> HttpResponse:
    return json_response(success_body(data, status), status)


def error_body(
    status: int, code: str, message: str, request_id: str, details: list | None = None
) -> bytes:
    return dumps(
        {
            "statusCode": status,
            "success": False,
            "error": {
                "code": code,
                "message": message,
                "details": details or [],
                "request_id": request_id,
            },
        }
    )


def error_response(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    details: list | None = None,
    headers: dict | None = None,
) -> HttpResponse:
    request_id = getattr(request, "request_id", "")
    return json_response(error_body(status, code, message, request_id, details), status, headers)


class JsonParser(BaseParser):
    """Strict JSON via orjson: invalid UTF-8, NaN, and nesting past 1024 levels are refused."""

    media_type = JSON

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, "MALFORMED_JSON", f"The body is not valid JSON: {exc}.") from exc


class JsonRenderer(BaseRenderer):
    media_type = JSON
    format = "json"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dumps(data)


class AlwaysJson(BaseContentNegotiation):
    """The API speaks JSON whatever the Accept header asks for: never a 406, never HTML."""

    def select_parser(self, request, parsers):
        for parser in parsers:
            if request.content_type.split(";")[0].strip().lower() == parser.media_type:
                return parser
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return (renderers[0], renderers[0].media_type)


_DRF_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "UNAUTHENTICATED"),
    (exceptions.AuthenticationFailed, "UNAUTHENTICATED"),
    (exceptions.NotFound, "NOT_FOUND"),
    (exceptions.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (exceptions.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (exceptions.Throttled, "RATE_LIMITED"),
    (exceptions.ParseError, "MALFORMED_JSON"),
    (exceptions.PermissionDenied, "FORBIDDEN"),
    (exceptions.ValidationError, "VALIDATION_ERROR"),
]


def exception_handler(exc: Exception, context: dict) -> HttpResponse | None:
    """DRF's hook: every API exception becomes the error envelope of DESIGN.md §3."""
    request = context["request"]._request if "request" in context else None
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: Django's handler500 answers with a generic envelope
    headers: dict[str, str] = {}
    if isinstance(exc, ApiError):
        code, message, details = exc.code, exc.message, exc.details
        headers.update(exc.headers)
    else:
        code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "ERROR")
        message, details = _message_of(exc)
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    return error_response(request, exc.status_code, code, message, details, headers)


def _message_of(exc: exceptions.APIException) -> tuple[str, list]:
    detail = exc.detail
    if isinstance(detail, dict):
        details = [
            {"field": k, "message": str(v[0] if isinstance(v, list) else v)}
            for k, v in detail.items()
        ]
        return "The request is not valid.", details
    if isinstance(detail, list):
        return "The request is not valid.", [{"field": "", "message": str(d)} for d in detail]
    return str(detail), []
