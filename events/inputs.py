"""Request shapes of /events and /webhook-endpoints: each validates a request and documents it.

Strict about JSON types (a boolean is `true`, not "true"; a string is a string), since
whatever the OpenAPI description calls wrong must be refused with 400 VALIDATION_ERROR.
"""

from __future__ import annotations

import copy
from typing import Any

from rest_framework import serializers

from core.serializers import NO_NUL, Input, QueryNumber
from events.endpoints import (
    ALL_TYPES,
    MAX_DESCRIPTION_LENGTH,
    MAX_URL_LENGTH,
    check_endpoint_url,
)
from events.models import EventType
from events.selectors import MAX_BIGINT
from events.ssrf import UnsafeUrl

# Named enums (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
EVENT_TYPES = list(EventType.values)
SUBSCRIBABLE_TYPES = [ALL_TYPES, *EVENT_TYPES]
# "evt_" and a ULID in Crockford's base 32 (events.services.new_event_id).
EVENT_ID_PATTERN = r"^evt_[0-9A-HJKMNP-TV-Z]{26}$"
MAX_EVENTS_PAGE = 500
MAX_DELIVERIES_PAGE = 100


class Flag(serializers.BooleanField):
    """true or false: DRF's BooleanField would also take "yes", 1 and "on"."""

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        self.fail("invalid")


class PlainText(serializers.RegexField):
    """A JSON string, possibly empty, of at most max_length characters, no NUL."""

    def __init__(self, max_length: int, **kwargs) -> None:
        kwargs.setdefault("error_messages", {"invalid": "Must not contain NUL characters."})
        super().__init__(NO_NUL, max_length=max_length, **kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data is not serializers.empty and not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.", code="not_a_string")
        # Blank is fine, and stored empty. (Not allow_blank=True: drf-spectacular would
        # describe it as a oneOf that "" matches twice, which makes "" invalid.)
        if isinstance(data, str) and not data.strip():
            return ""
        return super().run_validation(data)


class WebhookUrl(serializers.RegexField):
    """An http(s) URL we may call: https and a public address, unless private URLs are allowed."""

    def __init__(self, **kwargs) -> None:
        super().__init__(
            r"^https?://\S+$",
            max_length=MAX_URL_LENGTH,
            min_length=1,
            trim_whitespace=False,
            error_messages={"invalid": "Must be a valid http(s) URL."},
            **kwargs,
        )

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data

    def run_validation(self, data: Any = serializers.empty) -> Any:
        url = super().run_validation(data)
        if url is None or url is serializers.empty:
            return url
        try:
            check_endpoint_url(url)  # may resolve the host: never inside a transaction
        except UnsafeUrl as exc:
            raise serializers.ValidationError(str(exc), code="unsafe_url") from exc
        return url


class EventTypes(serializers.ListField):
    """["*"] for every type (today's and future ones), or a list of event types."""

    def __init__(self, **kwargs) -> None:
        super().__init__(
            child=serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES),
            min_length=1,
            max_length=len(SUBSCRIBABLE_TYPES),
            **kwargs,
        )

    def get_default(self) -> Any:
        # A new list each time: the serializer and its default serve every request
        # (core.serializers.Input.parse).
        return copy.deepcopy(super().get_default())

    def to_internal_value(self, data: Any) -> list[str]:
        chosen = super().to_internal_value(data)
        if ALL_TYPES in chosen and len(set(chosen)) > 1:
            raise serializers.ValidationError('"*" stands for every type: send it alone.')
        return chosen


_URL_HELP = (
    f"Where we POST the events: at most {MAX_URL_LENGTH} characters; https, and a host that "
    "resolves to a public address (plain http and private addresses only where the "
    "operator set WEBHOOK_ALLOW_PRIVATE_URLS, for local demos)."
)
_TYPES_HELP = (
    '["*"] (the default): every event type, including types added later. Else the types '
    "to receive, each once. A `webhook.test` is sent on request whatever this says."
)


class EndpointCreate(Input):
    url = WebhookUrl(help_text=_URL_HELP)
    event_types = EventTypes(required=False, default=[ALL_TYPES], help_text=_TYPES_HELP)
    description = PlainText(MAX_DESCRIPTION_LENGTH, required=False, default="")
    enabled = Flag(required=False, default=True, help_text="false: nothing is sent to it.")


class EndpointChange(Input):
    url = WebhookUrl(required=False, help_text=_URL_HELP)
    event_types = EventTypes(required=False, help_text=_TYPES_HELP)
    description = PlainText(MAX_DESCRIPTION_LENGTH, required=False)
    enabled = Flag(
        required=False,
        help_text="true also clears `disabled_reason` if we had switched it off.",
    )


class EventsQuery(Input):
    type = serializers.ChoiceField(
        choices=EVENT_TYPES, required=False, help_text="Only events of this type."
    )
    after = serializers.RegexField(
        EVENT_ID_PATTERN,
        required=False,
        error_messages={"invalid": "Must be an event id (evt_ and 26 characters)."},
        help_text="An event id: list the events created after it. Absent: from the oldest kept.",
    )
    limit = QueryNumber(
        min_value=1,
        max_value=MAX_EVENTS_PAGE,
        required=False,
        default=100,
        help_text=f"1..{MAX_EVENTS_PAGE}, default 100.",
    )


class DeliveriesQuery(Input):
    before = QueryNumber(
        min_value=1,
        max_value=MAX_BIGINT,
        required=False,
        help_text="A delivery id of this endpoint: list the deliveries older than it.",
    )
    limit = QueryNumber(
        min_value=1,
        max_value=MAX_DELIVERIES_PAGE,
        required=False,
        default=20,
        help_text=f"1..{MAX_DELIVERIES_PAGE}, default 20.",
    )
