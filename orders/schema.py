"""POST /orders/bulk, GET /batches and /batches/<id> on the wire: their OpenAPI description.

Documentation only. The request bodies are described by the serializers their one
declaration makes (orders/inputs.py, core.shapes): the tables the parser reads, so the
description says exactly what is refused with 400. A value that is only wrong for one drop
(a bad phone, a pin outside the area) is not a schema violation, it is a `rejected` entry
inside a 200. The results are built by the services; tests/api_docs (Schemathesis
included) keep this description and that code in step.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer
from rest_framework import serializers

from accounts.schema import ENVIRONMENTS
from core.openapi import (
    EVERY_CALL,
    EVERY_POST,
    QUERY_BAD_REQUEST,
    UUID_PATTERN,
    const,
    failure,
    money,
    operation,
    success,
)
from core.serializers import NO_NUL
from orders.decisions import Reason
from orders.inputs import (
    ADDRESS,
    BATCH_REQUEST,
    COD,
    MAX_ADDRESS_FIELDS,
    MAX_ADDRESS_PART,
    PARCEL,
    QUOTE_REQUEST,
    UNDELIVERABLE_ACTIONS,
    VERIFICATION,
    WINDOW,
    BatchesQuery,
)
from orders.models import BatchStatus, DropStatus, WindowStatus
from orders.short_codes import SHORT_CODE_HELP, SHORT_CODE_PATTERN

# Named enums (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
FAILURE_REASONS = [reason.name for reason in Reason]
DROP_STATUSES = list(DropStatus.values)
BATCH_STATUSES = [s for s in BatchStatus.values if s != BatchStatus.PROCESSING]
WINDOW_STATUSES = list(WindowStatus.values)
UNDELIVERABLE_ACTION_VALUES = list(UNDELIVERABLE_ACTIONS)

# --- Requests: made from their one declaration (orders/inputs.py) ----------------------

Address = ADDRESS.serializer()
DropoffVerification = VERIFICATION.serializer()
DropoffWindow = WINDOW.serializer()
Parcel = PARCEL.serializer()
CashOnDelivery = COD.serializer()
QuoteRequest = QUOTE_REQUEST.serializer()
BatchRequest = BATCH_REQUEST.serializer()


class PriceBreakdown(serializers.Serializer):
    """docs/contract.md §18: price = delivery + cod_fee."""

    delivery = money(
        help_text="The plan's base fee + distance (rounded half-up to cents) × the vehicle's "
        "multiplier, rounded half-up."
    )
    cod_fee = money(
        help_text="The plan's cod_fee_percent of the COD amount, half-up; 0.00 without."
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
    short_code = serializers.RegexField(
        SHORT_CODE_PATTERN,
        required=False,
        help_text=f"{SHORT_CODE_HELP} Always here, but in the stored answers of batches "
        "sent before short codes existed (replayed as they were).",
    )
    price = money(help_text="What is charged: price_breakdown's delivery + cod_fee.")
    price_breakdown = PriceBreakdown()
    currency = serializers.CharField()
    tracking_url = serializers.URLField(help_text="The recipient's tracking page.")
    dropoff_pin = serializers.RegexField(
        r"^[0-9]{4}$",
        required=False,
        help_text="Only when the drop asked for a PIN: pass it on to the recipient.",
    )
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


class QuotableOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    external_waybill = serializers.CharField(allow_null=True)
    status = const("quotable")
    price = money()
    price_breakdown = PriceBreakdown()
    resolved_pin = Pin(required=False, help_text="Only when the drop was address-only.")
    pickup_resolved_pin = Pin(required=False, help_text="Only when the pickup was address-only.")


class QuoteCounts(serializers.Serializer):
    total = serializers.IntegerField()
    quotable = serializers.IntegerField()
    rejected = serializers.IntegerField()


class QuoteResult(serializers.Serializer):
    quote_id = serializers.UUIDField()
    expires_at = serializers.DateTimeField()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    currency = serializers.CharField()
    total_price = money()
    counts = QuoteCounts()
    orders = PolymorphicProxySerializer(
        component_name="QuoteOrderResult",
        serializers={"quotable": QuotableOrder, "rejected": RejectedOrder},
        resource_type_field_name="status",
        many=True,
    )


# --- Errors and headers of these two endpoints ----------------------------------------

BULK_BAD_REQUEST = failure(
    "BulkBadRequest",
    400,
    ["VALIDATION_ERROR", "MALFORMED_JSON", "IDEMPOTENCY_KEY_MISSING", "IDEMPOTENCY_KEY_INVALID"],
    "As for every POST, plus IDEMPOTENCY_KEY_MISSING / IDEMPOTENCY_KEY_INVALID: the "
    "Idempotency-Key header is absent or not a UUID. Nothing is stored; retry freely.",
)
CONFLICT = failure(
    "Conflict",
    409,
    [
        "IDEMPOTENCY_KEY_REUSED",
        "CLIENT_BATCH_ID_REUSED",
        "QUOTE_EXPIRED",
        "QUOTE_USED",
        "QUOTE_MISMATCH",
    ],
    "IDEMPOTENCY_KEY_REUSED: this Idempotency-Key came with a different body. "
    "CLIENT_BATCH_ID_REUSED: this client_batch_id came with a different body. "
    "QUOTE_EXPIRED: the quote_id's quote expired. "
    "QUOTE_USED: the quote_id's quote already backs another batch (a quote backs one). "
    "QUOTE_MISMATCH: the body (less quote_id) is not the quoted one. "
    "Nothing was created; send a new key (and client_batch_id) for a new batch.",
)
NOT_FOUND = failure(
    "NotFound",
    404,
    ["NOT_FOUND"],
    "No such batch (or quote) for this key: unknown, not a UUID, or another business's or "
    "environment's.",
)

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    # A string with a pattern, not `format: uuid`: see core.openapi.UUID_PATTERN.
    {"type": "string", "pattern": UUID_PATTERN},
    OpenApiParameter.HEADER,
    required=True,
    description=(
        "A fresh UUID per batch, e.g. 3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b. The same key "
        "with the same body replays the stored response byte for byte (with "
        "`Idempotent-Replayed: true`); with another body, 409 IDEMPOTENCY_KEY_REUSED. "
        f"Kept {settings.IDEMPOTENCY_TTL_HOURS} hours."
    ),
)
REPLAYED = OpenApiParameter(
    "Idempotent-Replayed",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    enum=["true"],
    response=[200],
    description="`true` when this is the stored response of an earlier identical batch.",
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
        **EVERY_POST,
        400: BULK_BAD_REQUEST,
        404: NOT_FOUND,
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
    responses={200: success("BatchDetail", BatchDetail), **EVERY_CALL, 404: NOT_FOUND},
)


class BatchSummary(serializers.Serializer):
    """As in the data of a `batch.created` event, with the batch's created_at."""

    batch_id = serializers.UUIDField()
    client_batch_id = serializers.CharField()
    status = serializers.ChoiceField(choices=BATCH_STATUSES)
    created_at = serializers.DateTimeField(
        help_text="When the batch was made: its result's created_at, and the listing's order."
    )
    counts = Counts()
    poll_url = serializers.URLField()


class BatchPage(serializers.Serializer):
    batches = BatchSummary(many=True, help_text="Newest first.")
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(
        allow_null=True, help_text="Send it as `cursor` for the next page; null on the last."
    )


BATCHES = operation(
    "batches_list",
    "batches",
    "List batches, newest first",
    "Summaries of the key's batches (as in the `batch.created` event), `limit` per page "
    "(1..500, default 100). Page on with `cursor` = `next_cursor` until `has_more` is "
    "false. The cursor is opaque: an altered one is 400 VALIDATION_ERROR (field `cursor`).",
    parameters=[BatchesQuery],
    responses={200: success("BatchPage", BatchPage), **EVERY_CALL, 400: QUERY_BAD_REQUEST},
)


def describe_address(result, generator, request, public):
    """Postprocessing hook: a serializer cannot say "any other field, if it is a string"."""
    address = result["components"]["schemas"]["Address"]
    address["maxProperties"] = MAX_ADDRESS_FIELDS
    address["additionalProperties"] = {
        "type": "string",
        "maxLength": MAX_ADDRESS_PART,
        "pattern": NO_NUL,
    }
    return result


QUOTE_BAD_REQUEST = failure(
    "QuoteBadRequest",
    400,
    ["VALIDATION_ERROR", "MALFORMED_JSON"],
    "The body is refused as POST /orders/bulk would refuse it. Nothing is stored.",
)
QUOTE = operation(
    "orders_quote",
    "orders",
    "Price a batch without creating it",
    "Every rule of POST /orders/bulk against the current state, in the same order and with "
    "the same messages, INSUFFICIENT_BALANCE simulated in submission order; nothing is "
    f"created or charged. The quote lives {settings.QUOTE_TTL_MINUTES} minutes: send its "
    "`quote_id` in the same bulk body to be charged these prices.",
    request=QuoteRequest,
    responses={200: success("QuoteResult", QuoteResult), **EVERY_POST, 400: QUOTE_BAD_REQUEST},
    examples=[OpenApiExample("Two drops", value=_BATCH_EXAMPLE, request_only=True)],
)
