"""A batch's result entries as domain values: what the bulk call answered for each drop.

The batch pipeline makes each entry once, in its wire form, as it writes the drop (the
answer is stored as bytes and replayed byte for byte: docs/contract.md §4); `ResultEntry`
is that entry typed, for callers that are not the API (the dashboard's upload and sandbox
pages, the batch page). They get these, never the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

import orjson

ACCEPTED, REJECTED = "accepted", "rejected"


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """One drop's answer: accepted (its ids, price, link) or rejected (why)."""

    client_order_id: str
    external_waybill: str | None
    status: str  # ACCEPTED or REJECTED
    # Accepted entries only:
    pass_order_id: str | None = None
    drop_id: str | None = None
    short_code: str | None = None  # the label's code; None in answers stored before codes
    price: Decimal | None = None
    currency: str | None = None
    tracking_url: str | None = None
    resolved_pin: dict | None = None  # {"lat", "long"} of a geocoded drop
    pickup_resolved_pin: dict | None = None  # ... and of a geocoded pickup
    dropoff_pin: str | None = None  # the PIN the recipient gives the courier
    # Rejected entries only:
    failure_reason: str | None = None
    message: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status == ACCEPTED

    @classmethod
    def of(cls, wire: dict) -> ResultEntry:
        """The entry of the bulk answer's `orders` list (docs/contract.md §4)."""
        price = wire.get("price")
        return cls(
            client_order_id=wire["client_order_id"],
            external_waybill=wire["external_waybill"],
            status=wire["status"],
            pass_order_id=wire.get("pass_order_id"),
            drop_id=wire.get("drop_id"),
            short_code=wire.get("short_code"),
            price=None if price is None else Decimal(price),
            currency=wire.get("currency"),
            tracking_url=wire.get("tracking_url"),
            resolved_pin=wire.get("resolved_pin"),
            pickup_resolved_pin=wire.get("pickup_resolved_pin"),
            dropoff_pin=wire.get("dropoff_pin"),
            failure_reason=wire.get("failure_reason"),
            message=wire.get("message"),
        )


def entries_of(wire_entries: Iterable[dict]) -> list[ResultEntry]:
    return [ResultEntry.of(entry) for entry in wire_entries]


def stored_entries(body: bytes) -> list[ResultEntry]:
    """The entries of a stored bulk answer (a batch's `response`)."""
    if not body:
        return []
    return entries_of(orjson.loads(body)["data"]["orders"])
