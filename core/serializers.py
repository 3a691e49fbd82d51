"""DRF serializers as our request validators: strict text fields, and errors in our envelope.

An `Input` serializer both validates a body and documents it in the OpenAPI schema; its
errors become one 400 VALIDATION_ERROR whose details carry field paths such as
`identifiers[3]` (docs/contract.md §3), capped like every other error list.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from core.api import ApiError, bounded_details, validation_error

# Text that is blank after strip() or holds a NUL (PostgreSQL text cannot) is refused.
NOT_BLANK = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
NO_NUL = r"^[^\u0000]*$"
_NOT_BLANK = re.compile(NOT_BLANK)


class Text(serializers.RegexField):
    """A JSON string of 1..max_length characters, not blank, no NUL.

    Stricter than CharField, which would take 7 for "7". With `message`, every way of
    being wrong (missing, null, not a string, too long…) answers that one message.
    """

    def __init__(self, max_length: int, *, message: str | None = None, **kwargs) -> None:
        self.message = message
        self.checks_only_shape = "validators" not in kwargs
        kwargs.setdefault("min_length", 1)
        super().__init__(NOT_BLANK, max_length=max_length, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data

    def run_validation(self, data: Any = empty) -> Any:
        # A good value passes the checks its validators make (length, pattern, no NUL) in
        # one go: six times faster on 1000 identifiers. Anything else takes the full path
        # for its message. (Lone surrogates, which DRF also refuses, never get past
        # core.api.JsonParser.)
        if (
            self.checks_only_shape
            and isinstance(data, str)
            and self.min_length <= len(data) <= self.max_length
            and _NOT_BLANK.match(data)
        ):
            return data
        try:
            return super().run_validation(data)
        except serializers.ValidationError:
            if self.message is None:
                raise
            raise serializers.ValidationError(self.message, code="invalid") from None


def text(max_length: int, **kwargs) -> Text:
    """Required text: not blank, no NUL."""
    return Text(max_length, **kwargs)


def optional_text(max_length: int, **kwargs) -> serializers.RegexField:
    """Optional text: may be empty (or null, unless allow_null=False), no NUL."""
    kwargs.setdefault("allow_null", True)
    return serializers.RegexField(NO_NUL, max_length=max_length, required=False, **kwargs)


# A request body: a JSON object; every problem found is one VALIDATION_ERROR detail.
# (A comment, not a docstring: drf-spectacular would print it on every subclass.)
class Input(serializers.Serializer):
    @classmethod
    def parse(cls, body: Any) -> dict[str, Any]:
        """The validated data, or raise 400 VALIDATION_ERROR listing every problem."""
        if not isinstance(body, dict):
            raise validation_error([{"field": "", "message": "The body must be a JSON object."}])
        try:
            return cls._validator().run_validation(body)
        except serializers.ValidationError as exc:
            # What is_valid() would have kept as .errors: always a dict of the fields'.
            raise validation_error(error_details(exc.detail)) from None

    @classmethod
    def _validator(cls) -> Input:
        """This shape's serializer, made once per thread. Making one deep-copies every
        declared field (DRF's get_fields), which cost more than validating a small body
        (~8% of tracking one id, docs/decisions.md); validating keeps no state on it
        (run_validation returns the data or raises), so it serves every request."""
        made = _validators.__dict__
        validator = made.get(cls)
        if validator is None:
            validator = made[cls] = cls()
            validator.fields  # noqa: B018 (made and bound now, not at the first request)
        return validator


_validators = threading.local()


def error_details(errors: Any, path: str = "") -> list[dict[str, str]]:
    """A serializer's nested errors as our flat details: `{"field": "a.b[2]", "message"}`.

    Only a field's first message is kept, as core.api does for other DRF errors.
    """
    if isinstance(errors, dict):
        details: list[dict[str, str]] = []
        for key, value in errors.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                where = path
            elif isinstance(key, int):  # a ListField's errors, by index
                where = f"{path}[{key}]"
            else:
                where = f"{path}.{key}" if path else str(key)
            details.extend(error_details(value, where))
        return details
    if isinstance(errors, list):
        if errors and all(isinstance(e, str) for e in errors):
            return [{"field": path, "message": str(errors[0])}]
        # A nested many=True serializer: one entry per item, empty for the valid ones.
        return [d for i, item in enumerate(errors) for d in error_details(item, f"{path}[{i}]")]
    return [{"field": path, "message": str(errors)}]


class QueryNumber(serializers.IntegerField):
    """A whole number in a query string: digits only (not "5.0", "+5" or " 5")."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and data.isascii() and data.isdigit() and len(data) <= 19:
            return super().to_internal_value(data)
        self.fail("invalid")


QUERY_NOT_VALID = "The query parameters are not valid."


@functools.cache
def _field_names(shape: type[Input]) -> frozenset[str]:
    """A query shape's parameters: read once, as making a serializer deep-copies its fields."""
    return frozenset(shape().fields)


def parse_query(request, shape: type[Input]) -> dict:
    """The validated query parameters, or 400 VALIDATION_ERROR naming each bad one.

    An unknown parameter is refused too: a misspelt `limit` must not silently mean 100.
    """
    params = request.query_params.dict()
    known = _field_names(shape)
    unknown = [
        {"field": name, "message": "Unknown query parameter."}
        for name in params
        if name not in known
    ]
    try:
        parsed = shape.parse(params)
    except ApiError as exc:
        exc.details = bounded_details([*unknown, *exc.details])
        exc.message = QUERY_NOT_VALID
        raise
    if unknown:
        raise ApiError(400, "VALIDATION_ERROR", QUERY_NOT_VALID, bounded_details(unknown))
    return parsed
