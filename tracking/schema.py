"""GET /orders, POST /orders/tracking, /orders/cancel, PATCH /orders/<drop_id>,
/sandbox/orders/advance: their OpenAPI description.

Requests are the Input serializers of tracking/inputs.py, which also validate them, and
PATCH's body, made from its one declaration (tracking/edit_inputs.py). The answers are
documented here only: the tracking entry is built by hand for speed (tracking/selectors.py;
1000 entries per call), and tests/api_docs (Schemathesis included) keep this description
and that code in step.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
)
from rest_framework import serializers

from accounts.schema import ENVIRONMENTS
from core.openapi import (
    EVERY_CALL,
    EVERY_POST,
    QUERY_BAD_REQUEST,
    ErrorDetail,
    const,
    envelope,
    failure,
    money,
    one_of,
    operation,
    shape,
    success,
)
from orders.decisions import Reason
from orders.inputs import PARCEL_SIZES, RECIPIENT_LANGUAGES
from orders.schema import (
    DROP_STATUSES,
    UNDELIVERABLE_ACTION_VALUES,
    WINDOW_STATUSES,
    Address,
    DropoffWindow,
    Pin,
    PriceBreakdown,
)
from orders.short_codes import SHORT_CODE_HELP, SHORT_CODE_PATTERN
from tracking.edit_inputs import DROP_EDIT
from tracking.inputs import AdvanceRequest, IdentifiersRequest, OrdersQuery
from tracking.listing import SYNC_MARGIN

# --- The tracking entry: the one shape of a drop (docs/contract.md §5) ------------------------


class Party(serializers.Serializer):
    name = serializers.CharField()
    phone = serializers.CharField()
    lat = serializers.FloatField()
    long = serializers.FloatField()
    address = Address(allow_null=True)
    resolved_pin = Pin(required=False, help_text="Only when the pin came from the geocoder.")


class TrackedPickup(Party):
    scheduled_at = serializers.DateTimeField(allow_null=True)
    vehicle = serializers.CharField(help_text="The vehicle type's code (GET /vehicle-types).")


class TrackedParcel(serializers.Serializer):
    """docs/contract.md §18: as sent, or the defaults (S, 1 kg)."""

    size = serializers.ChoiceField(choices=list(PARCEL_SIZES))
    weight_kg = serializers.FloatField()
    description = serializers.CharField(allow_null=True)
    value = money(allow_null=True)


COD_STATUSES = ["pending", "collected", "not_collected"]  # tracking.selectors._Context._cod


class TrackedCod(serializers.Serializer):
    amount = money(help_text="The cash to collect at the door.")
    status = serializers.ChoiceField(
        choices=COD_STATUSES,
        help_text="pending while the drop is active; collected once DELIVERED (the courier took "
        "the cash); not_collected once it failed, is returning or returned, or was cancelled.",
    )
    collected_at = serializers.DateTimeField(allow_null=True, help_text="Set once collected.")


class CourierPosition(serializers.Serializer):
    lat = serializers.FloatField()
    long = serializers.FloatField()
    at = serializers.DateTimeField(help_text="When the courier's phone took it.")


class Driver(serializers.Serializer):
    name = serializers.CharField()
    phone = serializers.CharField()
    vehicle = serializers.CharField(help_text="The vehicle type the courier rides.")
    position = CourierPosition(
        allow_null=True,
        help_text="Where the courier is: only while on the way to this drop (assigned or "
        "picked up) and under 2 minutes old; else null.",
    )


class Event(serializers.Serializer):
    status = serializers.ChoiceField(choices=DROP_STATUSES)
    at = serializers.DateTimeField()


class Eta(serializers.Serializer):
    pickup_at = serializers.DateTimeField()
    dropoff_at = serializers.DateTimeField()


class ProofOfDelivery(serializers.Serializer):
    method = serializers.ChoiceField(choices=["pin", "photo", "signature", "none"])
    at = serializers.DateTimeField()
    received_by = serializers.CharField(allow_null=True)
    photo_url = serializers.URLField(
        allow_null=True, help_text="A signed link to the photo, valid for 1 hour."
    )
    signature_url = serializers.URLField(
        allow_null=True,
        help_text="A signed link to the recipient's signature (a PNG drawn in the courier "
        "app), valid for 1 hour; null unless the drop asked for one.",
    )


class Failure(serializers.Serializer):
    reason = serializers.ChoiceField(
        choices=["RECIPIENT_UNAVAILABLE", "ADDRESS_NOT_FOUND", "REFUSED", "WRONG_PIN", "OTHER"]
    )
    at = serializers.DateTimeField()


class ReturnReceipt(serializers.Serializer):
    at = serializers.DateTimeField(help_text="When the parcel was back at the pickup (RETURNED).")
    received_by = serializers.CharField(
        allow_null=True, help_text="Who took it back at the pickup, when they said."
    )


class TrackedOrder(serializers.Serializer):
    client_order_id = serializers.CharField()
    status = serializers.ChoiceField(choices=DROP_STATUSES)
    drop_id = serializers.UUIDField()
    short_code = serializers.RegexField(SHORT_CODE_PATTERN, help_text=SHORT_CODE_HELP)
    pass_order_id = serializers.UUIDField()
    batch_id = serializers.UUIDField()
    external_waybill = serializers.CharField(allow_null=True)
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    pickup = TrackedPickup()
    dropoff = Party()
    driver = Driver(allow_null=True, help_text="Set once a driver is assigned.")
    price = money(help_text="What was charged: price_breakdown's delivery + cod_fee.")
    price_breakdown = PriceBreakdown()
    currency = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    events = Event(many=True, help_text="Every status change, oldest first.")
    sequence = serializers.IntegerField(
        help_text="How many status events the drop has had: a later state has a larger one."
    )
    eta = Eta(
        allow_null=True,
        help_text=(
            "Estimated pickup and drop-off (UTC), from the model of docs/api.md; null once "
            "the drop is delivered, failed (returning or returned too) or cancelled."
        ),
    )
    tracking_url = serializers.URLField(help_text="The recipient's tracking page.")
    proof_of_delivery = ProofOfDelivery(allow_null=True, help_text="Set once DELIVERED.")
    failure = Failure(
        allow_null=True,
        help_text="Set once FAILED, and kept while the parcel comes back (RETURNING, RETURNED).",
    )
    dropoff_window = DropoffWindow(
        allow_null=True, help_text="The drop-off window promised (UTC); null without one."
    )
    window_status = serializers.ChoiceField(
        choices=WINDOW_STATUSES,
        allow_null=True,
        help_text="null without a window. on_track; at_risk: still active and the ETA is after "
        "the window's end (order.window_at_risk fires the first time); met: delivered by the "
        "end; missed: delivered later, failed, returned or cancelled.",
    )
    notes = serializers.CharField(
        allow_null=True,
        help_text="The instructions for the courier; never on the recipient's page.",
    )
    undeliverable_action = serializers.ChoiceField(
        choices=UNDELIVERABLE_ACTION_VALUES,
        help_text="return (the default) or dispose: what happens to the parcel if delivery fails.",
    )
    recipient_language = serializers.ChoiceField(
        choices=RECIPIENT_LANGUAGES,
        allow_null=True,
        help_text="As sent in POST /orders/bulk (km or en): the recipient's page and messages "
        "speak it. null: the business's setting (docs/contract.md §26).",
    )
    parcel = TrackedParcel()
    cod = TrackedCod(allow_null=True, help_text="Cash on delivery; null when none is collected.")
    stop_sequence = serializers.IntegerField(
        allow_null=True,
        help_text="The drop's place on its order's route (1 = the first drop after the pickup), "
        "set when the order is offered to a courier and renumbered if a drop is cancelled or "
        "moved before pickup; null until then, and for a cancelled drop.",
    )


# "return" is a Python keyword: the field is declared on the class after it is made (the
# entries' subclasses below inherit it). docs/contract.md §19.
TrackedOrder._declared_fields["return"] = ReturnReceipt(
    allow_null=True,
    help_text="Set once RETURNED (the failed parcel is back at its pickup); null otherwise.",
)


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


SANDBOX_FORBIDDEN = failure(
    "SandboxForbidden",
    403,
    ["ACCOUNT_SUSPENDED", "LIVE_ACCESS_DISABLED", "HTTPS_REQUIRED", "SANDBOX_ONLY"],
    "As for every call, plus SANDBOX_ONLY: the test driver takes sandbox keys only.",
)

# --- The operations -----------------------------------------------------------------

TRACKING = operation(
    "orders_tracking",
    "tracking",
    "Track orders by your client_order_id",
    f"1..{settings.MAX_TRACKING_IDENTIFIERS} identifiers; one entry per distinct "
    "identifier, in request order. When several drops share one, the active drop, else "
    "the newest. Unknown: `{client_order_id, status: NOT_FOUND}`.",
    request=IdentifiersRequest,
    responses={200: success("Tracking", _orders_of("Tracking")), **EVERY_POST},
)
CANCEL = operation(
    "orders_cancel",
    "tracking",
    "Cancel orders before pickup",
    "Cancels drops in SCHEDULED, PENDING or ASSIGNED and refunds (or un-accrues) their "
    "price. Answers a tracking entry per distinct identifier; where nothing was done, "
    "with `error` (NOT_CANCELLABLE or NOT_FOUND). A drop already CANCELLED is answered as "
    "cancelled, without an error and without a second refund: a retry is safe.",
    request=IdentifiersRequest,
    responses={200: success("Cancel", _orders_of("Cancel", CancelError)), **EVERY_POST},
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
        **EVERY_POST,
        403: SANDBOX_FORBIDDEN,
    },
)


# --- GET /orders -----------------------------------------------------------------------

OrderPage = shape(
    "OrderPage",
    orders=TrackedOrder(many=True, help_text="Tracking entries, in the listing's order."),
    has_more=serializers.BooleanField(help_text="Another page is there now."),
    next_cursor=serializers.CharField(
        allow_null=True,
        help_text=(
            "Send it as `cursor`, with the same filters, for the next page. Newest first: "
            "null on the last page. With `updated_since`: always set; keep the last one "
            "and ask again later for what changed since."
        ),
    ),
)

_ORDER_EXAMPLE = {
    "client_order_id": "A-1",
    "status": "ASSIGNED",
    "drop_id": "0b8f7c1e-2d4a-4f6b-9c3e-5a7d9e1f2b4c",
    "short_code": "K7QXM4TBR2NA",
    "pass_order_id": "6e2d4c8a-1b3f-4a5e-8d7c-9f0e1a2b3c4d",
    "batch_id": "3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b",
    "external_waybill": "WB-1",
    "environment": "sandbox",
    "pickup": {
        "name": "Shop",
        "phone": "+85512345678",
        "lat": 11.5564,
        "long": 104.9282,
        "address": None,
        "scheduled_at": None,
    },
    "dropoff": {
        "name": "Dara",
        "phone": "+85512345679",
        "lat": 11.5696,
        "long": 104.921,
        "address": None,
    },
    "driver": {
        "name": "Sandbox Test Driver",
        "phone": "+85512000000",
        "vehicle": "motorbike",
        "position": None,
    },
    "price": "2.80",
    "currency": "USD",
    "created_at": "2026-11-23T03:00:00.000Z",
    "updated_at": "2026-11-23T03:05:00.000Z",
    "events": [
        {"status": "PENDING", "at": "2026-11-23T03:00:00.000Z"},
        {"status": "ASSIGNED", "at": "2026-11-23T03:05:00.000Z"},
    ],
    "sequence": 2,
    "eta": {"pickup_at": "2026-11-23T03:20:00.000Z", "dropoff_at": "2026-11-23T03:33:41.000Z"},
    "tracking_url": "https://deliver.example.com/t/pS0TQm1x5Kq8e9G2b3tE4w",
    "proof_of_delivery": None,
    "failure": None,
    "return": None,
}

ORDERS = operation(
    "orders_list",
    "tracking",
    "List orders: newest first, or what changed since",
    "The key's drops as tracking entries, `limit` per page (1..500, default 100). Without "
    "`updated_since`: newest first. With it: oldest change first (`updated_at`, then "
    "`drop_id`); a drop that changes again is listed again, later, so the last time you "
    "see a drop you see its latest state. Keep `next_cursor` and call again with it "
    "(and the same filters) to sync. Changes of the last "
    f"{SYNC_MARGIN.seconds} seconds (and of transactions still running) are left for the "
    "next call, so that none is ever skipped. `cursor` is opaque: an altered one, or one "
    "sent with other filters, is 400 VALIDATION_ERROR (field `cursor`).",
    parameters=[OrdersQuery],
    responses={200: success("OrderPage", OrderPage), **EVERY_CALL, 400: QUERY_BAD_REQUEST},
    examples=[
        OpenApiExample(
            "A page",
            value={
                "statusCode": 200,
                "success": True,
                "data": {
                    "orders": [_ORDER_EXAMPLE],
                    "has_more": True,
                    "next_cursor": "eyJwIjpbIjIwMjYtMTEtMjNUMDM6MDA6MDArMDA6MDAiXX0:1vB2xQ:abc",
                },
            },
            response_only=True,
        )
    ],
)


# --- PATCH /orders/<drop_id> (docs/contract.md §17) -----------------------------------------


# The body: made from its one declaration (tracking/edit_inputs.py).
DropEdit = DROP_EDIT.serializer()


EDIT_REASONS = [
    Reason.INVALID_PHONE.name,
    Reason.INVALID_COORDINATES.name,
    Reason.GEOCODE_FAILED.name,
    Reason.OUT_OF_SERVICE_AREA.name,
    Reason.INVALID_TIME_WINDOW.name,
    Reason.PARCEL_TOO_LARGE.name,
    Reason.INVALID_COD.name,
    Reason.INSUFFICIENT_BALANCE.name,
]
_EditRejectedError = shape(
    "EditRejectedError",
    code=const("EDIT_REJECTED"),
    failure_reason=one_of(EDIT_REASONS, help_text="The rule of creation the edited drop fails."),
    message=serializers.CharField(),
    details=ErrorDetail(many=True, help_text="The fields that fail it."),
    request_id=serializers.CharField(help_text="Also in the X-Request-Id header."),
)
EDIT_REJECTED = OpenApiResponse(
    response=envelope(
        "EditRejectedErrorResponse",
        statusCode=const(422),
        success=const(False),
        error=_EditRejectedError(),
    ),
    description="The edited drop fails a rule of creation (`failure_reason`, as a rejected "
    "drop of a batch would): nothing changed. INSUFFICIENT_BALANCE: the wallet cannot pay "
    "the new price's difference.",
)
NOT_EDITABLE = failure(
    "NotEditable",
    409,
    ["NOT_EDITABLE"],
    "A field sent that may not change now (`details` names each): the location, window, "
    "undeliverable_action, parcel or cod past PENDING, a field that never changes, or any "
    "field of a finished drop. Nothing changed.",
)
ORDER_NOT_FOUND = failure(
    "OrderNotFound",
    404,
    ["NOT_FOUND"],
    "No such drop for this key: unknown, not a UUID, or another business's or environment's.",
)
DROP_ID = OpenApiParameter("drop_id", OpenApiTypes.UUID, OpenApiParameter.PATH, required=True)

LABEL = operation(
    "orders_label",
    "tracking",
    "A drop's parcel label (PDF)",
    "One A6 page (100 × 150 mm) to stick on the parcel: the business's name, the recipient's "
    "first name, the area, the business's client_order_id, and the drop's short_code as text, "
    "as a Code 128 barcode and as a QR code, which the courier scans. Always a PDF, whatever "
    "the Accept header asks for; errors are JSON as everywhere.",
    parameters=[DROP_ID],
    responses={
        (200, "application/pdf"): OpenApiResponse(
            OpenApiTypes.BINARY, description="The label, application/pdf."
        ),
        **EVERY_CALL,
        404: ORDER_NOT_FOUND,
    },
)

EDIT = operation(
    "orders_edit",
    "tracking",
    "Change an order after creation",
    "A partial drop: only the fields sent change. While the drop is active: the recipient's "
    "name and phone, notes, external_waybill. In SCHEDULED or PENDING only: the location, "
    "dropoff_window, undeliverable_action, parcel and cod. The edited drop must pass the rules "
    "of creation (422 EDIT_REJECTED with failure_reason). A location or COD amount that moves "
    "the price settles the difference at once: a wallet ADJUSTMENT naming the drop (a debit "
    "the wallet cannot cover is INSUFFICIENT_BALANCE), or a line on the open invoice. Answers "
    "the tracking entry; an `order.updated` event carries it with `changed`, the fields "
    "that changed (and `price`). An edit that changes nothing changes and sends nothing.",
    request=DropEdit,
    parameters=[DROP_ID],
    responses={
        200: success("OrderEdited", TrackedOrder),
        **EVERY_POST,
        404: ORDER_NOT_FOUND,
        409: NOT_EDITABLE,
        422: EDIT_REJECTED,
    },
    examples=[
        OpenApiExample(
            "A new phone and a note",
            value={"dropoff": {"phone": "+85512345670"}, "notes": "Gate code 42"},
            request_only=True,
        ),
        OpenApiExample(
            "A heavier parcel and cash to collect",
            value={"parcel": {"size": "M", "weight_kg": 4.5}, "cod": {"amount": "25.00"}},
            request_only=True,
        ),
        OpenApiExample(
            "A corrected address",
            value={"dropoff": {"address": {"complete_address": "St. 310, Phnom Penh"}}},
            request_only=True,
        ),
    ],
)
