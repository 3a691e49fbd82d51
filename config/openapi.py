"""The OpenAPI 3 description of /api/v1: documentation-only shapes, and the decorators using them.

Nothing here parses or renders a request. Runtime validation stays hand-written for speed
(orders/inputs.py, tracking/inputs.py) and responses are built by the services; these
serializers only tell drf-spectacular what goes over the wire, so the schema at
/api/v1/schema/ says what the code does. The request shapes describe exactly what is
refused with 400: a value that is only wrong for one drop (a bad phone, a pin outside the
area) is not a schema violation, it is a `rejected` entry inside a 200.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import AllowAny

from accounts.models import BillingModel, Environment
from billing.models import InvoiceStatus
from orders.decisions import Reason
from orders.inputs import MAX_ADDRESS_PART, MAX_ID, MAX_NAME, MAX_WAYBILL
from orders.models import BatchStatus, DropStatus
from tracking.lifecycle import ADVANCE_TARGETS

# Named enums (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
FAILURE_REASONS = [reason.name for reason in Reason]
DROP_STATUSES = list(DropStatus.values)
BATCH_STATUSES = [s for s in BatchStatus.values if s != BatchStatus.PROCESSING]
ENVIRONMENTS = list(Environment.values)
BILLING_MODELS = list(BillingModel.values)
INVOICE_STATUSES = list(InvoiceStatus.values)
ADVANCE_TARGET_VALUES = [s for s in DROP_STATUSES if s in ADVANCE_TARGETS]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

MONEY_PATTERN = r"^-?\d+\.\d{2}$"
# What orders/inputs.py refuses with 400, so that a schema-valid body is never a 400:
# text that is blank after strip() or holds a NUL (PostgreSQL text cannot).
NOT_BLANK = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
NO_NUL = r"^[^\u0000]*$"


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer svc_test_…|svc_live_…` (accounts.auth.ApiKeyAuthentication)."""

    target_class = "accounts.auth.ApiKeyAuthentication"
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


def _schema_field(schema: dict) -> type[serializers.Field]:
    """A serializer field class whose OpenAPI schema is `schema`, verbatim."""
    return extend_schema_field(schema)(type("SchemaField", (serializers.JSONField,), {}))


def one_of(values: list, **kwargs) -> serializers.Field:
    """An enum that stays inline: error codes differ per endpoint, constants are constants.

    Wrapped in allOf so that spectacular's enum hook leaves it in place instead of making
    a named component of every status code and code set.
    """
    kind = {bool: "boolean", int: "integer"}.get(type(values[0]), "string")
    return _schema_field({"type": kind, "allOf": [{"enum": list(values)}]})(**kwargs)


def const(value, **kwargs) -> serializers.Field:
    return one_of([value], **kwargs)


def anything(example, **kwargs) -> serializers.Field:
    """Any JSON value at request level: a wrong one rejects the drop, not the request."""
    return _schema_field({"example": example})(required=False, **kwargs)


def money(**kwargs) -> serializers.Field:
    return serializers.RegexField(MONEY_PATTERN, **kwargs)


def shape(component: str, /, **fields) -> type[serializers.Serializer]:
    """A serializer class built from fields; its name is the component's name."""
    return type(component, (serializers.Serializer,), fields)


def text(max_length: int, **kwargs) -> serializers.RegexField:
    """Required text: not blank, no NUL."""
    return serializers.RegexField(NOT_BLANK, min_length=1, max_length=max_length, **kwargs)


def optional_text(max_length: int, **kwargs) -> serializers.RegexField:
    """Optional text: may be empty (or null, unless allow_null=False), no NUL."""
    kwargs.setdefault("allow_null", True)
    return serializers.RegexField(NO_NUL, max_length=max_length, required=False, **kwargs)


# --- Requests -----------------------------------------------------------------------


class Address(serializers.Serializer):
    """The geocoder reads complete_address (and city); any other field must be a string too."""

    # "Any other field" is additionalProperties, which describe_api() adds to the component.
    complete_address = optional_text(MAX_ADDRESS_PART, allow_null=False)
    city = optional_text(MAX_ADDRESS_PART, allow_null=False)
    country = optional_text(MAX_ADDRESS_PART, allow_null=False)


_ADDRESS_HELP = (
    "An object of strings (each at most 500 characters, no NUL); other string fields are "
    "kept too. Used when no coordinates are given: forward-geocoded, and the pin is echoed "
    "as resolved_pin. null counts as absent."
)
_PHONE_HELP = (
    "E.164 string, e.g. +85512345678. Not checked at request level: a missing or invalid "
    "phone rejects the drop with INVALID_PHONE (a pickup's: every drop of its group)."
)
_COORD_HELP = (
    "Number ({}). Give lat and long together, or an address. A missing partner, a "
    "non-number, out of range or exactly (0, 0) rejects the drop with INVALID_COORDINATES; "
    "null counts as absent. Coordinates win over an address."
)


class Pickup(serializers.Serializer):
    name = text(MAX_NAME)
    phone = anything("+85512345678", help_text=_PHONE_HELP)
    lat = anything(11.5564, help_text=_COORD_HELP.format("latitude, -90..90"))
    long = anything(104.9282, help_text=_COORD_HELP.format("longitude, -180..180"))
    address = Address(required=False, allow_null=True, help_text=_ADDRESS_HELP)
    pickup_scheduled_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text=(
            "ISO 8601 with a time zone (e.g. 2026-01-31T09:30:00Z). Absent: pickup now, "
            "the drops start PENDING; given: they start SCHEDULED. In the past: "
            "SCHEDULE_IN_PAST; outside the area's opening hours: OUTSIDE_OPERATING_HOURS."
        ),
    )


class Recipient(serializers.Serializer):
    name = text(MAX_NAME)
    phone = anything("+85512345679", help_text=_PHONE_HELP)
    lat = anything(11.5696, help_text=_COORD_HELP.format("latitude, -90..90"))
    long = anything(104.9210, help_text=_COORD_HELP.format("longitude, -180..180"))
    address = Address(required=False, allow_null=True, help_text=_ADDRESS_HELP)


class Drop(serializers.Serializer):
    client_order_id = text(
        MAX_ID,
        help_text="Your reference for this drop; unique among your active drops.",
    )
    external_waybill = optional_text(MAX_WAYBILL, help_text="Echoed in results; null if absent.")
    dropoff = Recipient(help_text="The recipient.")


class PickupGroup(serializers.Serializer):
    pickup = Pickup()
    dropoff = serializers.ListField(child=Drop(), min_length=1, help_text="One or more drops.")


class BatchRequest(serializers.Serializer):
    client_batch_id = text(
        MAX_ID,
        help_text="Your reference for the batch; unique per business and environment for good.",
    )
    orders = serializers.ListField(
        child=PickupGroup(),
        min_length=1,
        help_text=f"Pickup groups; at most {settings.MAX_DROPS_PER_BATCH} drops in all.",
    )


class IdentifiersRequest(serializers.Serializer):
    identifiers = serializers.ListField(
        child=text(100),
        min_length=1,
        max_length=settings.MAX_TRACKING_IDENTIFIERS,
        help_text="Your client_order_id values; one answer per distinct value, in order.",
    )


class AdvanceRequest(IdentifiersRequest):
    to = serializers.ChoiceField(
        choices=ADVANCE_TARGET_VALUES,
        required=False,
        allow_null=True,
        help_text="Walk up to this status (FAILED goes through PICKED_UP); absent: one step.",
    )


# --- Responses ----------------------------------------------------------------------


class Pin(serializers.Serializer):
    lat = serializers.FloatField()
    long = serializers.FloatField()


class Counts(serializers.Serializer):
    total = serializers.IntegerField()
    accepted = serializers.IntegerField()
    rejected = serializers.IntegerField()


class AcceptedOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    external_waybill = serializers.CharField(allow_null=True)
    status = const("accepted")
    pass_order_id = serializers.UUIDField(help_text="The order (pickup group) it belongs to.")
    drop_id = serializers.UUIDField()
    price = money()
    currency = serializers.CharField()
    resolved_pin = Pin(required=False, help_text="Only when the drop was address-only.")
    pickup_resolved_pin = Pin(required=False, help_text="Only when the pickup was address-only.")


class RejectedOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    external_waybill = serializers.CharField(allow_null=True)
    status = const("rejected")
    failure_reason = serializers.ChoiceField(choices=FAILURE_REASONS)
    message = serializers.CharField()


class AcceptedOrderNow(AcceptedOrder):
    delivery_status = serializers.ChoiceField(
        choices=DROP_STATUSES, help_text="The drop's current lifecycle status."
    )


def _order_results(name: str, accepted) -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(
        component_name=name,
        serializers={"accepted": accepted, "rejected": RejectedOrder},
        resource_type_field_name="status",
        many=True,
    )


class BatchResult(serializers.Serializer):
    batch_id = serializers.UUIDField()
    client_batch_id = serializers.CharField()
    status = serializers.ChoiceField(choices=BATCH_STATUSES)
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    created_at = serializers.DateTimeField()
    counts = Counts()
    orders = _order_results("OrderResult", AcceptedOrder)
    poll_url = serializers.URLField()


class BatchDetail(BatchResult):
    orders = _order_results("OrderResultNow", AcceptedOrderNow)


class Party(serializers.Serializer):
    name = serializers.CharField()
    phone = serializers.CharField()
    lat = serializers.FloatField()
    long = serializers.FloatField()
    address = Address(allow_null=True)
    resolved_pin = Pin(required=False, help_text="Only when the pin came from the geocoder.")


class TrackedPickup(Party):
    scheduled_at = serializers.DateTimeField(allow_null=True)


class Driver(serializers.Serializer):
    name = serializers.CharField()
    phone = serializers.CharField()


class Event(serializers.Serializer):
    status = serializers.ChoiceField(choices=DROP_STATUSES)
    at = serializers.DateTimeField()


class TrackedOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    status = serializers.ChoiceField(choices=DROP_STATUSES)
    drop_id = serializers.UUIDField()
    pass_order_id = serializers.UUIDField()
    batch_id = serializers.UUIDField()
    external_waybill = serializers.CharField(allow_null=True)
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    pickup = TrackedPickup()
    dropoff = Party()
    driver = Driver(allow_null=True, help_text="Set once a driver is assigned.")
    price = money()
    currency = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    events = Event(many=True, help_text="Every status change, oldest first.")


class UnknownOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    status = const("NOT_FOUND")


def _entry_error(name: str, codes: list[str]):
    return shape(name, code=one_of(codes), message=serializers.CharField())


CancelError = _entry_error("CancelError", ["NOT_CANCELLABLE", "NOT_FOUND"])
AdvanceError = _entry_error("AdvanceError", ["ILLEGAL_TRANSITION", "NOT_FOUND"])


def _entries(name: str, error=None) -> PolymorphicProxySerializer:
    """Found or NOT_FOUND, one per distinct identifier; with `error` where nothing was done."""
    found, unknown = TrackedOrder, UnknownOrder
    if error is not None:
        found = type(f"{name}Order", (TrackedOrder,), {"error": error(required=False)})
        unknown = type(f"{name}Unknown", (UnknownOrder,), {"error": error()})
    return PolymorphicProxySerializer(
        component_name=f"{name}Entry",
        serializers=[found, unknown],
        resource_type_field_name=None,
        many=True,
    )


def _orders_of(name: str, error=None):
    return shape(f"{name}Result", orders=_entries(name, error))


class Pricing(serializers.Serializer):
    base_fee = money(allow_null=True)
    per_km_fee = money(allow_null=True)
    included_km = serializers.CharField(allow_null=True, help_text="Decimal string, in km.")


class Wallet(serializers.Serializer):
    balance = money()


class CurrentInvoice(serializers.Serializer):
    period = serializers.RegexField(r"^\d{4}-\d{2}$", help_text="YYYY-MM, service time zone.")
    accrued = money()
    status = serializers.ChoiceField(choices=INVOICE_STATUSES)


class Account(serializers.Serializer):
    business = shape("AccountBusiness", id=serializers.UUIDField(), name=serializers.CharField())()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    billing_model = serializers.ChoiceField(choices=BILLING_MODELS)
    currency = serializers.CharField()
    pricing = Pricing()
    wallet = Wallet(required=False, help_text="Wallet accounts only.")
    invoice = CurrentInvoice(required=False, help_text="Invoiced accounts: this month's bill.")


class OpeningHours(serializers.Serializer):
    weekday = serializers.ChoiceField(choices=WEEKDAYS)
    opens = serializers.RegexField(r"^\d{2}:\d{2}$", help_text="HH:MM, inclusive.")
    closes = serializers.RegexField(r"^\d{2}:\d{2}$", help_text="HH:MM, exclusive.")


class ServiceArea(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    polygon = _schema_field({"type": "object", "description": "A GeoJSON (Multi)Polygon."})()
    time_zone = serializers.CharField()
    hours = OpeningHours(many=True)


ServiceAreas = shape("ServiceAreas", areas=ServiceArea(many=True))


# --- Envelopes (DESIGN.md §3) --------------------------------------------------------


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
BULK_BAD_REQUEST = failure(
    "BulkBadRequest",
    400,
    ["VALIDATION_ERROR", "MALFORMED_JSON", "IDEMPOTENCY_KEY_MISSING", "IDEMPOTENCY_KEY_INVALID"],
    "As for every POST, plus IDEMPOTENCY_KEY_MISSING / IDEMPOTENCY_KEY_INVALID: the "
    "Idempotency-Key header is absent or not a UUID. Nothing is stored; retry freely.",
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
    ["ACCOUNT_SUSPENDED", "LIVE_ACCESS_DISABLED"],
    "ACCOUNT_SUSPENDED: the account is suspended or has no API access. "
    "LIVE_ACCESS_DISABLED: a live key before live access is switched on.",
)
SANDBOX_FORBIDDEN = failure(
    "SandboxForbidden",
    403,
    ["ACCOUNT_SUSPENDED", "LIVE_ACCESS_DISABLED", "SANDBOX_ONLY"],
    "As for every call, plus SANDBOX_ONLY: the test driver takes sandbox keys only.",
)
NOT_FOUND = failure(
    "NotFound",
    404,
    ["NOT_FOUND"],
    "No such batch for this key: unknown, not a UUID, or another business's or environment's.",
)
METHOD_NOT_ALLOWED = failure(
    "MethodNotAllowed",
    405,
    ["METHOD_NOT_ALLOWED"],
    "The path does not take this method (see the `Allow` header).",
)
CONFLICT = failure(
    "Conflict",
    409,
    ["IDEMPOTENCY_KEY_REUSED", "CLIENT_BATCH_ID_REUSED"],
    "IDEMPOTENCY_KEY_REUSED: this Idempotency-Key came with a different body. "
    "CLIENT_BATCH_ID_REUSED: this client_batch_id came with a different body. "
    "Nothing was created; send a new key (and client_batch_id) for a new batch.",
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

# --- Headers ------------------------------------------------------------------------

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.UUID,
    OpenApiParameter.HEADER,
    required=True,
    description=(
        "A fresh UUID per batch. The same key with the same body replays the stored "
        "response byte for byte (with `Idempotent-Replayed: true`); with another body, 409 "
        f"IDEMPOTENCY_KEY_REUSED. Kept {settings.IDEMPOTENCY_TTL_HOURS} hours."
    ),
)
REQUEST_ID = OpenApiParameter(
    "X-Request-Id",
    str,
    OpenApiParameter.HEADER,
    description="Optional. Echoed back when 1–128 of [A-Za-z0-9._:-]; else a new id is minted.",
)
REPLAYED = OpenApiParameter(
    "Idempotent-Replayed",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    enum=["true"],
    response=[200],
    description="`true` when this is the stored response of an earlier identical batch.",
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

_EVERY_CALL = {
    401: UNAUTHENTICATED,
    403: FORBIDDEN,
    405: METHOD_NOT_ALLOWED,
    413: PAYLOAD_TOO_LARGE,
    429: RATE_LIMITED,
}
_EVERY_POST = {**_EVERY_CALL, 400: BAD_REQUEST, 415: UNSUPPORTED_MEDIA_TYPE}


def operation(operation_id: str, tag: str, summary: str, description: str, **kwargs):
    kwargs["parameters"] = [*kwargs.get("parameters", []), *COMMON_HEADERS]
    return extend_schema(
        operation_id=operation_id,
        tags=[tag],
        summary=summary,
        description=description,
        **kwargs,
    )


# --- The operations -----------------------------------------------------------------

_BATCH_EXAMPLE = {
    "client_batch_id": "2026-11-23-morning",
    "orders": [
        {
            "pickup": {"name": "Shop", "phone": "+85512345678", "lat": 11.5564, "long": 104.9282},
            "dropoff": [
                {
                    "client_order_id": "A-1",
                    "external_waybill": "WB-1",
                    "dropoff": {
                        "name": "Dara",
                        "phone": "+85512345679",
                        "lat": 11.5696,
                        "long": 104.9210,
                    },
                },
                {
                    "client_order_id": "A-2",
                    "dropoff": {
                        "name": "Sokha",
                        "phone": "+85512345680",
                        "address": {"complete_address": "Royal Palace, Phnom Penh"},
                    },
                },
            ],
        }
    ],
}

BULK = operation(
    "orders_bulk",
    "orders",
    "Create delivery orders in one batch",
    "Synchronous: every drop is `accepted` (ids, price) or `rejected` (failure_reason) in "
    "this answer, in submission order. One batch is one transaction. A 200 is also "
    "returned when no drop is accepted (status FAILED); it is stored for replay.",
    request=BatchRequest,
    parameters=[IDEMPOTENCY_KEY, REPLAYED],
    responses={
        200: success("BatchResult", BatchResult),
        **_EVERY_POST,
        400: BULK_BAD_REQUEST,
        409: CONFLICT,
    },
    examples=[OpenApiExample("Two drops", value=_BATCH_EXAMPLE, request_only=True)],
)
BATCH = operation(
    "batches_retrieve",
    "batches",
    "A batch's stored result (the poll_url)",
    "The creation result as stored, with the batch status and, on each accepted entry, "
    "the drop's current `delivery_status`.",
    parameters=[
        OpenApiParameter("batch_id", OpenApiTypes.UUID, OpenApiParameter.PATH, required=True)
    ],
    responses={200: success("BatchDetail", BatchDetail), **_EVERY_CALL, 404: NOT_FOUND},
)
TRACKING = operation(
    "orders_tracking",
    "tracking",
    "Track orders by your client_order_id",
    f"1..{settings.MAX_TRACKING_IDENTIFIERS} identifiers; one entry per distinct "
    "identifier, in request order. When several drops share one, the active drop, else "
    "the newest. Unknown: `{client_order_id, status: NOT_FOUND}`.",
    request=IdentifiersRequest,
    responses={200: success("Tracking", _orders_of("Tracking")), **_EVERY_POST},
)
CANCEL = operation(
    "orders_cancel",
    "tracking",
    "Cancel orders before pickup",
    "Cancels drops in SCHEDULED, PENDING or ASSIGNED and refunds (or un-accrues) their "
    "price. Answers a tracking entry per distinct identifier; where nothing was done, "
    "with `error` (NOT_CANCELLABLE or NOT_FOUND).",
    request=IdentifiersRequest,
    responses={200: success("Cancel", _orders_of("Cancel", CancelError)), **_EVERY_POST},
)
ADVANCE = operation(
    "sandbox_orders_advance",
    "sandbox",
    "Sandbox test driver: move orders along the lifecycle",
    "SCHEDULED → PENDING → ASSIGNED → PICKED_UP → DELIVERED (FAILED from PICKED_UP), "
    "one step or up to `to`, recording every step; the test driver is assigned at "
    "ASSIGNED. Refused moves answer `error: ILLEGAL_TRANSITION` for that identifier. "
    "Sandbox keys only.",
    request=AdvanceRequest,
    responses={
        200: success("Advance", _orders_of("Advance", AdvanceError)),
        **_EVERY_POST,
        403: SANDBOX_FORBIDDEN,
    },
)
ACCOUNT = operation(
    "account_retrieve",
    "account",
    "The calling account: pricing and balance",
    "The business, the key's environment, the billing model and pricing, and the wallet "
    "balance (wallet accounts) or this month's invoice (invoiced accounts).",
    responses={200: success("Account", Account), **_EVERY_CALL},
)
SERVICE_AREAS = operation(
    "service_areas_list",
    "service-areas",
    "Where and when we deliver",
    "Active service areas with their polygon, time zone and weekly opening hours.",
    responses={200: success("ServiceAreas", ServiceAreas), **_EVERY_CALL},
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
    # A serializer cannot say "and any other field, as long as it is a string".
    address = result["components"]["schemas"]["Address"]
    address["additionalProperties"] = {
        "type": "string",
        "maxLength": MAX_ADDRESS_PART,
        "pattern": NO_NUL,
    }
    # Both /orders/bulk and /orders/bulk/ answer; DESIGN.md and the guide write them bare.
    result["paths"] = {path.rstrip("/"): item for path, item in result["paths"].items()}
    return result


API_DESCRIPTION = """\
Same-day delivery orders: create many in one synchronous call, track them by your own
references. The full guide is docs/api.md in the repository.

**Auth.** `Authorization: Bearer <key>`. `svc_test_` keys act on the sandbox, `svc_live_`
keys on live; no call ever sees the other environment's data.

**Envelope.** Success: `{"statusCode": 200, "success": true, "data": {...}}`.
Error: `{"statusCode": N, "success": false, "error": {"code", "message", "details",
"request_id"}}`. Every response carries `X-Request-Id`. Money is a decimal string with two
places (`"3.45"`); timestamps are ISO 8601 UTC with `Z`.

**Errors.** 400 MALFORMED_JSON, VALIDATION_ERROR, IDEMPOTENCY_KEY_MISSING,
IDEMPOTENCY_KEY_INVALID · 401 UNAUTHENTICATED · 403 ACCOUNT_SUSPENDED, LIVE_ACCESS_DISABLED,
SANDBOX_ONLY · 404 NOT_FOUND · 405 METHOD_NOT_ALLOWED · 409 IDEMPOTENCY_KEY_REUSED,
CLIENT_BATCH_ID_REUSED · 413 PAYLOAD_TOO_LARGE · 415 UNSUPPORTED_MEDIA_TYPE ·
429 RATE_LIMITED (with Retry-After).
"""
