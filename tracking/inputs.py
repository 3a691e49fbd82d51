"""Shape of the identifier-list calls (tracking, cancel, sandbox advance)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core.api import validation_error


def parse_identifiers(body: Any) -> list[str]:
    limit = settings.MAX_TRACKING_IDENTIFIERS
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": "The body must be a JSON object."}])
    identifiers = body.get("identifiers")
    if not isinstance(identifiers, list) or not 1 <= len(identifiers) <= limit:
        raise validation_error(
            [{"field": "identifiers", "message": f"Must be an array of 1 to {limit} strings."}]
        )
    errors = [
        {
            "field": f"identifiers[{i}]",
            "message": "Must be a non-empty string of at most 100 characters.",
        }
        for i, value in enumerate(identifiers)
        if not isinstance(value, str) or not value.strip() or len(value) > 100 or "\x00" in value
    ]
    if errors:
        raise validation_error(errors)
    return identifiers
