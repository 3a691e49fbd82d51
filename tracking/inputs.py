"""Requests of the tracking app: identifier-list bodies (tracking, cancel, advance), GET /orders.

Real DRF serializers, since these bodies are small: one declaration refuses a bad body
with 400 VALIDATION_ERROR (`identifiers`, `identifiers[3]`, `to`) and describes it in the
OpenAPI schema.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator, MinLengthValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.openapi import UUID_PATTERN
from core.serializers import Input, QueryNumber, text
from orders.models import DropStatus, WindowStatus
from tracking.lifecycle import ADVANCE_TARGETS
from tracking.listing import DEFAULT_LIMIT, MAX_LIMIT

MAX_IDENTIFIER = 100
# Named enum (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here), in lifecycle order.
ADVANCE_TARGET_VALUES = [s for s in DropStatus.values if s in ADVANCE_TARGETS]


def identifier_limit() -> int:
    return settings.MAX_TRACKING_IDENTIFIERS


class IdentifierList(serializers.ListField):
    """1..MAX_TRACKING_IDENTIFIERS identifiers; a list of the wrong length is one error."""

    def __init__(self, **kwargs) -> None:
        message = f"Must be a non-empty string of at most {MAX_IDENTIFIER} characters."
        super().__init__(child=text(MAX_IDENTIFIER, message=message), **kwargs)
        # They document minItems/maxItems (the limit read when the schema is made);
        # run_validation checks the same before looking at any item.
        self.validators = [MinLengthValidator(1), MaxLengthValidator(identifier_limit)]

    def run_validation(self, data: Any = serializers.empty) -> Any:
        limit = identifier_limit()
        if not isinstance(data, list) or not 1 <= len(data) <= limit:
            raise serializers.ValidationError(
                f"Must be an array of 1 to {limit} strings.", code="invalid"
            )
        return super().run_validation(data)


class IdentifiersRequest(Input):
    identifiers = IdentifierList(
        help_text="Your client_order_id values; one answer per distinct value, in order."
    )


class AdvanceRequest(IdentifiersRequest):
    to = serializers.ChoiceField(
        choices=ADVANCE_TARGET_VALUES,
        required=False,
        allow_null=True,
        error_messages={"invalid_choice": f"Must be one of {', '.join(sorted(ADVANCE_TARGETS))}."},
        help_text="Walk up to this status (FAILED goes through PICKED_UP; RETURNING and RETURNED "
        'through FAILED, for a drop whose undeliverable_action is "return"); absent: one step.',
    )


# --- GET /orders: query parameters ------------------------------------------------------

STATUS_LIST_PATTERN = "^({0})(,({0}))*$".format("|".join(DropStatus.values))
# RFC 3339 with its time zone (Z or an offset); a time without one would be a guess.
INSTANT_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
CURSOR_PATTERN = r"^[A-Za-z0-9_:-]+$"
MAX_CURSOR = 1000


class StatusList(serializers.RegexField):
    """`PENDING,ASSIGNED`: one or more drop statuses, comma-separated."""

    def __init__(self, **kwargs) -> None:
        message = f"Must be drop statuses separated by commas: {', '.join(DropStatus.values)}."
        super().__init__(
            STATUS_LIST_PATTERN,
            trim_whitespace=False,
            error_messages={"invalid": message},
            **kwargs,
        )

    def run_validation(self, data: Any = serializers.empty) -> tuple[str, ...]:
        return tuple(dict.fromkeys(super().run_validation(data).split(",")))


WINDOW_STATUS_LIST_PATTERN = "^({0})(,({0}))*$".format("|".join(WindowStatus.values))


class WindowStatusList(serializers.RegexField):
    """`on_track,at_risk`: one or more window statuses, comma-separated (docs/contract.md §17)."""

    def __init__(self, **kwargs) -> None:
        message = f"Must be window statuses separated by commas: {', '.join(WindowStatus.values)}."
        super().__init__(
            WINDOW_STATUS_LIST_PATTERN,
            trim_whitespace=False,
            error_messages={"invalid": message},
            **kwargs,
        )

    def run_validation(self, data: Any = serializers.empty) -> tuple[str, ...]:
        return tuple(dict.fromkeys(super().run_validation(data).split(",")))


@extend_schema_field({"type": "string", "format": "date-time", "pattern": INSTANT_PATTERN})
class Instant(serializers.RegexField):
    """An RFC 3339 timestamp with a time zone, as an aware datetime in UTC."""

    def __init__(self, **kwargs) -> None:
        message = "Must be an ISO 8601 date and time with a time zone, e.g. 2026-11-23T03:00:00Z."
        super().__init__(
            INSTANT_PATTERN, trim_whitespace=False, error_messages={"invalid": message}, **kwargs
        )

    def run_validation(self, data: Any = serializers.empty) -> datetime:
        text = super().run_validation(data)
        try:
            return datetime.fromisoformat(text.upper()).astimezone(UTC)
        except (ValueError, OverflowError):
            self.fail("invalid")


class OrdersQuery(Input):
    status = StatusList(
        required=False, help_text="Only drops in these statuses, e.g. `PENDING,ASSIGNED`."
    )
    batch_id = serializers.RegexField(
        UUID_PATTERN,
        required=False,
        trim_whitespace=False,
        error_messages={"invalid": "Must be a batch id (a UUID)."},
        help_text="Only this batch's drops. Another account's batch lists nothing.",
    )
    window_status = WindowStatusList(
        required=False,
        help_text=(
            "Only drops with a drop-off window in these window statuses, e.g. `at_risk`; "
            "newest first (not with `updated_since`)."
        ),
    )
    created_since = Instant(required=False, help_text="Only drops created at or after this.")
    updated_since = Instant(
        required=False,
        help_text=(
            "Only drops changed at or after this, and oldest change first: the sync order. "
            "Keep `next_cursor` and ask again with it (and the same filters)."
        ),
    )
    limit = QueryNumber(
        min_value=1,
        max_value=MAX_LIMIT,
        required=False,
        default=DEFAULT_LIMIT,
        help_text=f"1..{MAX_LIMIT}, default {DEFAULT_LIMIT}.",
    )
    cursor = serializers.RegexField(
        CURSOR_PATTERN,
        max_length=MAX_CURSOR,
        required=False,
        trim_whitespace=False,
        error_messages={"invalid": "Must be a next_cursor from an earlier page."},
        help_text="The `next_cursor` of the previous page, with the same filters.",
    )

    def validate_batch_id(self, value: str) -> uuid.UUID:
        return uuid.UUID(value)

    def validate(self, attrs: dict) -> dict:
        # The sync order reads the index of changes, which knows no window status; and a drop
        # leaving the window status would never be listed again (docs/decisions.md, "The
        # sync order never passes an uncommitted change").
        if attrs.get("window_status") and attrs.get("updated_since"):
            raise serializers.ValidationError(
                {"window_status": "Cannot be combined with updated_since."}
            )
        return attrs
