"""Bodies of the identifier-list calls (tracking, cancel, advance): validated and documented.

Real DRF serializers, since these bodies are small: one declaration refuses a bad body
with 400 VALIDATION_ERROR (`identifiers`, `identifiers[3]`, `to`) and describes it in the
OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxLengthValidator, MinLengthValidator
from rest_framework import serializers

from core.serializers import Input, text
from orders.models import DropStatus
from tracking.lifecycle import ADVANCE_TARGETS

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
        help_text="Walk up to this status (FAILED goes through PICKED_UP); absent: one step.",
    )
