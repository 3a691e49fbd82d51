"""The body of POST /account/cod/credit-wallet, declared once: its every 400 and its OpenAPI
description (billing/schema.py) come from one table (core.shapes)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from rest_framework import serializers

from core.api import validation_error
from core.shapes import Field, Kind, Problems, Shape, path_of

# A money string: digits, at most two decimals (the columns hold ten digits before them).
MONEY_TEXT = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,2})?\Z")


class Amount(Kind):
    """A money string of at least 0.01, read as its Decimal."""

    message = 'Must be a money string of at least 0.01, such as "25.00".'

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if isinstance(value, str) and MONEY_TEXT.match(value) and Decimal(value) > 0:
            return Decimal(value)
        problems.add(path_of(parent, field.name), self.message)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.RegexField(r"^[0-9]{1,10}(\.[0-9]{1,2})?$", **kwargs)


def _unknown(problems: Problems, body: dict, where: str, known: dict) -> None:
    for name in body:
        if name not in known:
            problems.add(path_of(where, name), "Unknown field.")


CREDIT = Shape(
    "CodCreditIn",
    [
        Field(
            "amount",
            Amount(),
            required=True,
            help='Money string, e.g. "25.00": at least 0.01, at most `cod.owed`.',
        )
    ],
    unknown=_unknown,
)


def parse_credit(body: Any) -> Decimal:
    """The body's `amount`; every problem a 400 naming it."""
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": 'Send a JSON object: {"amount": "…"}.'}])
    problems = Problems()
    values = CREDIT.read(problems, body, "")
    if problems.items:
        raise validation_error(problems.items, problems.more)
    return values["amount"]
