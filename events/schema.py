"""GET /events and /webhook-endpoints on the wire: their OpenAPI description.

Requests are the Input serializers of events/inputs.py, which also validate them. The
answers are built by events/selectors.py (the same event shape a webhook delivers) and
documented here; tests/api_docs (Schemathesis included) keep the two in step.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework import serializers

from accounts.schema import ENVIRONMENTS
from core.openapi import (
    EVERY_CALL,
    EVERY_POST,
    QUERY_BAD_REQUEST,
    const,
    envelope,
    failure,
    operation,
    schema_field,
    shape,
    success,
)
from events.endpoints import MAX_ENDPOINTS
from events.inputs import (
    EVENT_ID_PATTERN,
    EVENT_TYPES,
    SUBSCRIBABLE_TYPES,
    DeliveriesQuery,
    EndpointChange,
    EndpointCreate,
    EventsQuery,
)
from events.models import DeliveryStatus

# Named enum (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
DELIVERY_STATUSES = list(DeliveryStatus.values)
SECRET_PATTERN = r"^whsec_[A-Za-z0-9+/]{32}$"

# --- Events ---------------------------------------------------------------------------


class EventObject(serializers.Serializer):
    id = serializers.RegexField(EVENT_ID_PATTERN, help_text="Also the `webhook-id` header.")
    type = serializers.ChoiceField(choices=EVENT_TYPES)
    created_at = serializers.DateTimeField()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    data = schema_field(
        {
            "type": "object",
            "additionalProperties": True,
            "description": "Depends on `type` (docs/webhooks.md).",
        }
    )()


EventList = shape(
    "EventList",
    events=EventObject(many=True, help_text="Oldest first."),
    has_more=serializers.BooleanField(
        help_text="More events follow: ask again with `after` = the last id of this page."
    ),
)

# --- Endpoints ------------------------------------------------------------------------


class WebhookEndpoint(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES))
    description = serializers.CharField(allow_blank=True)
    enabled = serializers.BooleanField()
    disabled_reason = serializers.CharField(
        allow_null=True,
        help_text="Set when we switched it off (e.g. failing for days); null otherwise.",
    )
    created_at = serializers.DateTimeField()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)


class WebhookEndpointWithSecret(WebhookEndpoint):
    secret = serializers.RegexField(
        SECRET_PATTERN,
        help_text="The signing secret. Shown only in this answer: store it now.",
    )


class RotatedEndpoint(WebhookEndpointWithSecret):
    previous_secret_expires_at = serializers.DateTimeField(
        help_text="Until then the previous secret also signs every delivery."
    )


WebhookEndpointList = shape("WebhookEndpointList", endpoints=WebhookEndpoint(many=True))
WebhookEndpointDeleted = shape(
    "WebhookEndpointDeleted", id=serializers.UUIDField(), deleted=const(True)
)


class DeliveryAttempt(serializers.Serializer):
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(
        allow_null=True, help_text="null when no answer came (timeout, refused, unsafe)."
    )
    duration_ms = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    response_excerpt = serializers.CharField(
        allow_blank=True, help_text="The first 1 KB of the answer."
    )


class Delivery(serializers.Serializer):
    id = serializers.IntegerField()
    event_id = serializers.RegexField(EVENT_ID_PATTERN)
    event_type = serializers.ChoiceField(choices=EVENT_TYPES)
    status = serializers.ChoiceField(choices=DELIVERY_STATUSES)
    attempts = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(
        allow_null=True, help_text="When it is tried next (PENDING only)."
    )
    created_at = serializers.DateTimeField()
    log = DeliveryAttempt(many=True, help_text="Every attempt, oldest first.")


DeliveryList = shape(
    "DeliveryList",
    deliveries=Delivery(many=True, help_text="Newest first."),
    has_more=serializers.BooleanField(
        help_text="Older deliveries follow: ask again with `before` = the last id of this page."
    ),
)

# --- Errors and parameters -------------------------------------------------------------

ENDPOINT_NOT_FOUND = failure(
    "WebhookEndpointNotFound",
    404,
    ["NOT_FOUND"],
    "No such endpoint for this key: unknown, not a UUID, or another business's or environment's.",
)
DELIVERY_NOT_FOUND = failure(
    "DeliveryNotFound",
    404,
    ["NOT_FOUND"],
    "No such endpoint for this key, or no such delivery of it.",
)
LIMIT_REACHED = failure(
    "EndpointLimitReached",
    409,
    ["ENDPOINT_LIMIT_REACHED"],
    f"The environment has {MAX_ENDPOINTS} endpoints already: delete one first.",
)
ENDPOINT_DISABLED = failure(
    "EndpointDisabled",
    409,
    ["ENDPOINT_DISABLED"],
    "The endpoint is disabled: enable it first (PATCH `enabled: true`).",
)
ENDPOINT_ID = OpenApiParameter(
    "endpoint_id", OpenApiTypes.UUID, OpenApiParameter.PATH, required=True
)
DELIVERY_ID = OpenApiParameter(
    "delivery_id", OpenApiTypes.INT64, OpenApiParameter.PATH, required=True
)

_ENDPOINT = success("WebhookEndpoint", WebhookEndpoint)
_CREATED = envelope(
    "WebhookEndpointCreatedResponse",
    statusCode=const(201),
    success=const(True),
    data=WebhookEndpointWithSecret(),
)
_CREATE_EXAMPLE = {
    "url": "https://example.com/webhooks/delivery",
    "event_types": ["order.status_changed", "batch.created"],
    "description": "Order updates for the shop",
}

# --- The operations -----------------------------------------------------------------

EVENTS = operation(
    "events_list",
    "events",
    "The environment's events, oldest first",
    "Events of the key's business and environment in the order they were created, after "
    "the event `after` (from the oldest kept, 30 days, when absent). Page through with "
    "`after` = the last id until `has_more` is false. What webhooks deliver, to catch up "
    "on any you missed.",
    parameters=[EventsQuery],
    responses={200: success("EventList", EventList), **EVERY_CALL, 400: QUERY_BAD_REQUEST},
)
ENDPOINTS = operation(
    "webhook_endpoints_list",
    "webhooks",
    "The environment's webhook endpoints",
    f"At most {MAX_ENDPOINTS}, oldest first. Secrets are never shown here.",
    responses={200: success("WebhookEndpointList", WebhookEndpointList), **EVERY_CALL},
)
ENDPOINT_CREATE = operation(
    "webhook_endpoints_create",
    "webhooks",
    "Add a webhook endpoint",
    "Events of the key's environment are POSTed to `url`, signed as Standard Webhooks "
    "(docs/webhooks.md). The answer carries the signing `secret`, the only time it is "
    f"shown. At most {MAX_ENDPOINTS} per environment (409 ENDPOINT_LIMIT_REACHED).",
    request=EndpointCreate,
    responses={201: _CREATED, **EVERY_POST, 409: LIMIT_REACHED},
    examples=[OpenApiExample("Order updates", value=_CREATE_EXAMPLE, request_only=True)],
)
ENDPOINT = operation(
    "webhook_endpoints_retrieve",
    "webhooks",
    "A webhook endpoint",
    "Without its secret.",
    parameters=[ENDPOINT_ID],
    responses={200: _ENDPOINT, **EVERY_CALL, 404: ENDPOINT_NOT_FOUND},
)
ENDPOINT_UPDATE = operation(
    "webhook_endpoints_update",
    "webhooks",
    "Change a webhook endpoint",
    "Only the fields sent change. `enabled: true` switches it back on after we disabled "
    "it, and clears `disabled_reason`.",
    request=EndpointChange,
    parameters=[ENDPOINT_ID],
    responses={200: _ENDPOINT, **EVERY_POST, 404: ENDPOINT_NOT_FOUND},
)
ENDPOINT_DELETE = operation(
    "webhook_endpoints_delete",
    "webhooks",
    "Delete a webhook endpoint",
    "With its deliveries and their log; nothing more is sent to it. Events stay in GET /events.",
    request=None,
    parameters=[ENDPOINT_ID],
    responses={
        200: success("WebhookEndpointDeleted", WebhookEndpointDeleted),
        **EVERY_CALL,
        404: ENDPOINT_NOT_FOUND,
    },
)
ROTATE_SECRET = operation(
    "webhook_endpoints_rotate_secret",
    "webhooks",
    "Rotate an endpoint's signing secret",
    "Answers the new `secret` (shown only here). For 24 hours both the new and the "
    "previous secret sign each delivery (two signatures in `webhook-signature`), so the "
    "receiver can switch over; rotating again within that time drops the older one at once.",
    request=None,
    parameters=[ENDPOINT_ID],
    responses={
        200: success("RotatedEndpoint", RotatedEndpoint),
        **EVERY_CALL,
        404: ENDPOINT_NOT_FOUND,
    },
)
SEND_TEST = operation(
    "webhook_endpoints_test",
    "webhooks",
    "Send a webhook.test event to this endpoint",
    "Records a `webhook.test` event, delivered to this endpoint only (whatever its "
    "`event_types`) by the same workers and with the same retries as any event. Answers "
    "the event; its delivery shows in the endpoint's deliveries. During a pause after a "
    "timeout it is queued behind the pause (due when the pause ends), never sent before.",
    request=None,
    parameters=[ENDPOINT_ID],
    responses={
        200: success("WebhookTest", EventObject),
        **EVERY_CALL,
        404: ENDPOINT_NOT_FOUND,
        409: ENDPOINT_DISABLED,
    },
)
DELIVERIES = operation(
    "webhook_endpoints_deliveries",
    "webhooks",
    "An endpoint's delivery log",
    "Its deliveries, newest first, each with its status and every attempt (time, HTTP "
    "status, duration, error, the start of the answer). Page with `before`.",
    parameters=[ENDPOINT_ID, DeliveriesQuery],
    responses={
        200: success("DeliveryList", DeliveryList),
        **EVERY_CALL,
        400: QUERY_BAD_REQUEST,
        404: ENDPOINT_NOT_FOUND,
    },
)
RESEND = operation(
    "webhook_endpoints_resend",
    "webhooks",
    "Send a delivery again",
    "Makes the delivery due now, whatever its status (a succeeded one is sent again: "
    "receivers deduplicate on `webhook-id`); during a pause after a timeout, due when "
    "the pause ends instead. Answers the delivery, now PENDING.",
    request=None,
    parameters=[ENDPOINT_ID, DELIVERY_ID],
    responses={
        200: success("ResentDelivery", Delivery),
        **EVERY_CALL,
        404: DELIVERY_NOT_FOUND,
        409: ENDPOINT_DISABLED,
    },
)
