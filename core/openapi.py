"""What every app's OpenAPI description is built from: envelopes, errors, headers, operation().

Each app documents its own endpoints in its `schema.py`, beside its `api.py`; this module
holds only what all of them share, and the public schema and docs pages. The API-wide
story (auth, envelope, error codes) is added by the `describe_api` postprocessing hook
(SPECTACULAR_SETTINGS in config/settings.py).
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import AllowAny

MONEY_PATTERN = r"^-?\d+\.\d{2}$"
# The canonical 8-4-4-4-12 form. Described as a pattern, not `format: uuid`: with the
# format, openapi-python-client makes the parameter a UUID object, which httpx refuses
# as a header value.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer svc_test_…|svc_live_…` (accounts.auth.ApiKeyAuthentication)."""

    target_class = "accounts.auth.ApiKeyAuthentication"  # a string: core imports no app
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "svc_test_<40 chars> | svc_live_<40 chars>",
            "description": (
                "An API key from the dashboard's Keys page. `svc_test_` keys act on the "
                "sandbox, `svc_live_` keys on live; neither ever sees the other's data. "
                "A missing, malformed, unknown or revoked key answers 401 UNAUTHENTICATED."
            ),
        }


# --- Field helpers ------------------------------------------------------------------


def schema_field(schema: dict) -> type[serializers.Field]:
    """A serializer field class whose OpenAPI schema is `schema`, verbatim."""
    return extend_schema_field(schema)(type("SchemaField", (serializers.JSONField,), {}))


def one_of(values: list, **kwargs) -> serializers.Field:
    """An enum that stays inline: error codes differ per endpoint, constants are constants.

    Wrapped in allOf so that spectacular's enum hook leaves it in place instead of making
    a named component of every status code and code set.
    """
    kind = {bool: "boolean", int: "integer"}.get(type(values[0]), "string")
    return schema_field({"type": kind, "allOf": [{"enum": list(values)}]})(**kwargs)


def const(value, **kwargs) -> serializers.Field:
    return one_of([value], **kwargs)


def money(**kwargs) -> serializers.Field:
    """A decimal string with two places, e.g. "3.45" (rendered as given)."""
    return serializers.RegexField(MONEY_PATTERN, **kwargs)


def shape(component: str, /, **fields) -> type[serializers.Serializer]:
    """A serializer class built from fields; its name is the component's name."""
    return type(component, (serializers.Serializer,), fields)


# --- Envelopes (docs/contract.md §3) --------------------------------------------------------


def envelope(component: str, /, **fields) -> type[serializers.Serializer]:
    # Spectacular would wrap a `list` action's response in an array; ours never are.
    return extend_schema_serializer(many=False)(shape(component, **fields))


def success(name: str, data: type[serializers.Serializer]) -> type[serializers.Serializer]:
    return envelope(f"{name}Response", statusCode=const(200), success=const(True), data=data())


ErrorDetail = shape(
    "ErrorDetail",
    field=serializers.CharField(help_text='e.g. "orders[0].dropoff[2].client_order_id"'),
    message=serializers.CharField(),
)


def failure(name: str, status: int, codes: list[str], description: str) -> OpenApiResponse:
    error = shape(
        f"{name}Error",
        code=one_of(codes),
        message=serializers.CharField(),
        details=ErrorDetail(many=True, help_text="Every problem found (400s); else []."),
        request_id=serializers.CharField(help_text="Also in the X-Request-Id header."),
    )
    body = envelope(
        f"{name}ErrorResponse", statusCode=const(status), success=const(False), error=error()
    )
    return OpenApiResponse(response=body, description=description)


BAD_REQUEST = failure(
    "BadRequest",
    400,
    ["VALIDATION_ERROR", "MALFORMED_JSON"],
    "MALFORMED_JSON: the body is not JSON. VALIDATION_ERROR: the body's shape is wrong; "
    "`details` lists every problem with its field path.",
)
QUERY_BAD_REQUEST = failure(
    "QueryBadRequest",
    400,
    ["VALIDATION_ERROR"],
    "A query parameter is wrong; `details` names it.",
)
UNAUTHENTICATED = failure(
    "Unauthenticated",
    401,
    ["UNAUTHENTICATED"],
    "No key, or a malformed, unknown or revoked one (with `WWW-Authenticate: Bearer`).",
)
FORBIDDEN = failure(
    "Forbidden",
    403,
    ["ACCOUNT_SUSPENDED", "LIVE_ACCESS_DISABLED", "HTTPS_REQUIRED"],
    "ACCOUNT_SUSPENDED: the account is suspended or has no API access. "
    "LIVE_ACCESS_DISABLED: a live key before live access is switched on. "
    "HTTPS_REQUIRED: the call came over plain http; send it again to the https:// URL.",
)
METHOD_NOT_ALLOWED = failure(
    "MethodNotAllowed",
    405,
    ["METHOD_NOT_ALLOWED"],
    "The path does not take this method (see the `Allow` header).",
)
PAYLOAD_TOO_LARGE = failure(
    "PayloadTooLarge",
    413,
    ["PAYLOAD_TOO_LARGE"],
    f"The body is over MAX_BODY_BYTES ({settings.MAX_BODY_BYTES} bytes).",
)
UNSUPPORTED_MEDIA_TYPE = failure(
    "UnsupportedMediaType",
    415,
    ["UNSUPPORTED_MEDIA_TYPE"],
    "The body is not sent as Content-Type: application/json.",
)
RATE_LIMITED = failure(
    "RateLimited",
    429,
    ["RATE_LIMITED"],
    "Too many calls for this key; wait `Retry-After` seconds.",
)

# The answers every call (and every POST) may get, whatever the endpoint.
EVERY_CALL = {
    401: UNAUTHENTICATED,
    403: FORBIDDEN,
    405: METHOD_NOT_ALLOWED,
    413: PAYLOAD_TOO_LARGE,
    429: RATE_LIMITED,
}
EVERY_POST = {**EVERY_CALL, 400: BAD_REQUEST, 415: UNSUPPORTED_MEDIA_TYPE}

# --- Headers ------------------------------------------------------------------------

REQUEST_ID = OpenApiParameter(
    "X-Request-Id",
    str,
    OpenApiParameter.HEADER,
    description="Optional. Echoed back when 1–128 of [A-Za-z0-9._:-]; else a new id is minted.",
)
WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate", str, OpenApiParameter.HEADER, response=[401], required=True
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    int,
    OpenApiParameter.HEADER,
    response=[429],
    required=True,
    description="Seconds to wait before the next call.",
)
ALLOW = OpenApiParameter("Allow", str, OpenApiParameter.HEADER, response=[405], required=True)
COMMON_HEADERS = [
    REQUEST_ID,
    OpenApiParameter(
        "X-Request-Id",
        str,
        OpenApiParameter.HEADER,
        response=True,
        required=True,
        description="The request's id (yours, if sane): quote it when reporting a problem.",
    ),
    *(
        OpenApiParameter(
            name,
            int,
            OpenApiParameter.HEADER,
            response=True,
            description=f"{meaning} (per-key rate limit).",
        )
        for name, meaning in (
            ("RateLimit-Limit", "Calls allowed in the window"),
            ("RateLimit-Remaining", "Calls left in the window"),
            ("RateLimit-Reset", "Seconds until the window resets"),
        )
    ),
    WWW_AUTHENTICATE,
    RETRY_AFTER,
    ALLOW,
]


def operation(operation_id: str, tag: str, summary: str, description: str, **kwargs):
    """extend_schema for one of our operations: its id, tag and texts, plus the common headers."""
    kwargs["parameters"] = [*kwargs.get("parameters", []), *COMMON_HEADERS]
    return extend_schema(
        operation_id=operation_id,
        tags=[tag],
        summary=summary,
        description=description,
        **kwargs,
    )


# --- The public schema and docs pages ------------------------------------------------


class _Public:
    """Readable without a key; normal content negotiation (YAML, JSON or HTML)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    content_negotiation_class = DefaultContentNegotiation


class SchemaView(_Public, SpectacularAPIView):
    pass


class DocsView(_Public, SpectacularSwaggerView):
    url_name = "api-schema"  # the page loads the schema from SchemaView


def describe_api(result, generator, request, public):
    """Postprocessing hook: the API-wide story that belongs to no single operation."""
    result["info"]["description"] = API_DESCRIPTION
    # Both /orders/bulk and /orders/bulk/ answer; the guide writes them bare.
    result["paths"] = {path.rstrip("/"): item for path, item in result["paths"].items()}
    return result


# Every request-level error code the API answers, by status: the description's list, which
# tests/api_docs/test_docs_consistency.py holds to the code and to docs/api.md's table.
ERROR_CODES: dict[int, list[str]] = {
    400: [
        "MALFORMED_JSON",
        "VALIDATION_ERROR",
        "BAD_REQUEST",
        "IDEMPOTENCY_KEY_MISSING",
        "IDEMPOTENCY_KEY_INVALID",
    ],
    401: ["UNAUTHENTICATED"],
    403: [
        "ACCOUNT_SUSPENDED",
        "LIVE_ACCESS_DISABLED",
        "SANDBOX_ONLY",
        "HTTPS_REQUIRED",
        "INVALID_SIGNATURE",
        "FORBIDDEN",
    ],
    404: ["NOT_FOUND"],
    405: ["METHOD_NOT_ALLOWED"],
    409: [
        "IDEMPOTENCY_KEY_REUSED",
        "CLIENT_BATCH_ID_REUSED",
        "QUOTE_EXPIRED",
        "QUOTE_MISMATCH",
        "QUOTE_USED",
        "ENDPOINT_LIMIT_REACHED",
        "ENDPOINT_DISABLED",
        "NOT_EDITABLE",
        "COD_EXCEEDS_OWED",
        "COD_NOT_CREDITABLE",
        "ILLEGAL_TRANSITION",
        "OFFER_GONE",
    ],
    411: ["LENGTH_REQUIRED"],
    413: ["PAYLOAD_TOO_LARGE"],
    415: ["UNSUPPORTED_MEDIA_TYPE"],
    422: ["EDIT_REJECTED", "WRONG_PIN", "COD_NOT_COLLECTED", "SCAN_MISMATCH", "SIGNATURE_REQUIRED"],
    429: ["RATE_LIMITED"],
    500: ["INTERNAL_ERROR"],
    503: ["SERVICE_UNAVAILABLE"],
}
# What a code needs said beside it in one line; the guide's Errors table says the rest.
_ERROR_NOTES = {
    "HTTPS_REQUIRED": "plain http: the API is https only",
    "FORBIDDEN": "a refusal with no code of its own; none is expected",
    "INVALID_SIGNATURE": "the SMS provider's inbound webhook, unsigned or signed wrong",
    "QUOTE_USED": "the quote already backs another batch",
    "LENGTH_REQUIRED": "a chunked body: send Content-Length",
    "RATE_LIMITED": "with Retry-After",
    "SERVICE_UNAVAILABLE": "the database is briefly away; with Retry-After",
}


def _error_list() -> str:
    return " · ".join(
        f"{status} "
        + ", ".join(f"{c} ({_ERROR_NOTES[c]})" if c in _ERROR_NOTES else c for c in codes)
        for status, codes in ERROR_CODES.items()
    )


API_DESCRIPTION = (
    """\
Same-day delivery orders: create many in one synchronous call, track them by your own
references. The full guide (auth, idempotency, limits, what each error means and how to
fix it, curl examples) is served beside this page, at [/api/v1/guide/](/api/v1/guide/).

**Auth.** `Authorization: Bearer <key>`. `svc_test_` keys act on the sandbox, `svc_live_`
keys on live; no call ever sees the other environment's data.

**Envelope.** Success: `{"statusCode": 200, "success": true, "data": {...}}`.
Error: `{"statusCode": N, "success": false, "error": {"code", "message", "details",
"request_id"}}`. Every response carries `X-Request-Id`. Money is a decimal string with two
places (`"3.45"`); timestamps are ISO 8601 UTC with `Z`.

**Errors.** """
    + _error_list()
    + ".\n"
)
