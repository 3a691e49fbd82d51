"""The API's wire conventions (docs/contract.md §3): envelopes, errors, JSON in and out."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import Http404, HttpRequest, HttpResponse
from rest_framework import exceptions
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer

JSON = "application/json"
# Errors stay small whatever the input (docs/contract.md §3).
MAX_ERROR_DETAILS = 100
MAX_JSON_DEPTH = 64


class ApiError(exceptions.APIException):
    """A request-level error with a stable code, rendered in the error envelope."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status
        self.code = code
        self.message = message
        self.details = details or []
        self.headers = headers or {}
        # Keys of the error object beside the four of every error, for a code that needs
        # one (EDIT_REJECTED's failure_reason, docs/contract.md §17).
        self.extra = extra or {}


def validation_error(details: list[dict[str, str]], more: int = 0) -> ApiError:
    """400 VALIDATION_ERROR; `more` counts problems found past the ones listed."""
    return ApiError(
        400, "VALIDATION_ERROR", "The request body is not valid.", bounded_details(details, more)
    )


def bounded_details(details: list[dict[str, str]], more: int = 0) -> list[dict[str, str]]:
    """At most MAX_ERROR_DETAILS entries, then one that says how many more there were."""
    more += max(0, len(details) - MAX_ERROR_DETAILS)
    if not more:
        return details
    return [*details[:MAX_ERROR_DETAILS], {"field": "", "message": f"… and {more} more"}]


def malformed_json(message: str) -> ApiError:
    return ApiError(400, "MALFORMED_JSON", message)


def json_body(request) -> Any:
    """The parsed JSON body of a DRF request; an empty body is not JSON (docs/contract.md §3)."""
    if not request.body:
        raise malformed_json("The body is empty: send a JSON object.")
    return request.data


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
    status: int,
    code: str,
    message: str,
    request_id: str,
    details: list | None = None,
    extra: dict | None = None,
) -> bytes:
    error = {"code": code, "message": message, "details": details or [], "request_id": request_id}
    if extra:
        error = {"code": code, **extra, **error}
    return dumps({"statusCode": status, "success": False, "error": error})


def error_response(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    details: list | None = None,
    headers: dict | None = None,
    extra: dict | None = None,
) -> HttpResponse:
    request_id = getattr(request, "request_id", "")
    body = error_body(status, code, message, request_id, details, extra)
    return json_response(body, status, headers)


class JsonParser(BaseParser):
    """Strict JSON via orjson: invalid UTF-8, NaN, and nesting past MAX_JSON_DEPTH are refused."""

    media_type = JSON

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise malformed_json(f"The body is not valid JSON: {exc}.") from exc
        # Before anything walks it: deep nesting would exhaust recursion further on.
        if nesting_deeper_than(raw, MAX_JSON_DEPTH):
            raise malformed_json(f"The body is nested deeper than {MAX_JSON_DEPTH} levels.")
        return parsed


_NOT_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"')
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def nesting_deeper_than(raw: bytes, limit: int) -> bool:
    """Whether valid JSON text nests arrays and objects more than `limit` levels deep.

    Read from the text at C speed rather than by walking the parsed value: strings are cut
    out, only brackets are kept, and each pass of replace() removes exactly the innermost
    level.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    # Inside a string a quote is always escaped; with escaped backslashes and escaped
    # quotes gone, every quote left opens or closes a string. Of the text, only brackets
    # and quotes matter; two quotes side by side then end one string and open the next or
    # make an empty one, so dropping them joins strings and loses nothing outside them.
    # Most strings hold no bracket and go that way; the few left are every other piece
    # between quotes.
    plain = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = plain.translate(_AS_SQUARE, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets:
        brackets = b"".join(brackets.split(b'"')[::2])
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


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
    """DRF's hook: every API exception becomes the error envelope of docs/contract.md §3."""
    request = context["request"]._request if "request" in context else None
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: Django's handler500 answers with a generic envelope
    headers: dict[str, str] = {}
    extra: dict[str, str] = {}
    if isinstance(exc, ApiError):
        code, message, details, extra = exc.code, exc.message, exc.details, exc.extra
        headers.update(exc.headers)
    else:
        code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "ERROR")
        message, details = _message_of(exc)
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    return error_response(request, exc.status_code, code, message, details, headers, extra)


def _message_of(exc: exceptions.APIException) -> tuple[str, list]:
    detail = exc.detail
    if isinstance(detail, dict):
        details = [
            {"field": k, "message": str(v[0] if isinstance(v, list) else v)}
            for k, v in detail.items()
        ]
        return "The request is not valid.", bounded_details(details)
    if isinstance(detail, list):
        details = [{"field": "", "message": str(d)} for d in detail]
        return "The request is not valid.", bounded_details(details)
    return str(detail), []
