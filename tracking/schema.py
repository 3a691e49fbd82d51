"""POST /orders/tracking, /orders/cancel and /sandbox/orders/advance: their OpenAPI description.

Requests are the Input serializers of tracking/inputs.py, which also validate them. The
answers are documented here only: the tracking entry is built by hand for speed
(tracking/selectors.py; 1000 entries per call), and tests/api_docs (Schemathesis
included) keep this description and that code in step.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from accounts.schema import ENVIRONMENTS
from core.openapi import EVERY_POST, const, failure, money, one_of, operation, shape, success
from orders.schema import DROP_STATUSES, Address, Pin
from tracking.inputs import AdvanceRequest, IdentifiersRequest

# --- The tracking entry: the one shape of a drop (DESIGN.md §5) ------------------------


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


SANDBOX_FORBIDDEN = failure(
    "SandboxForbidden",
    403,
    ["ACCOUNT_SUSPENDED", "LIVE_ACCESS_DISABLED", "SANDBOX_ONLY"],
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
    "with `error` (NOT_CANCELLABLE or NOT_FOUND).",
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
