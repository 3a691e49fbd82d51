"""The dashboard's one way into the batch pipeline: a bulk body's drops built from the fields a
page or a spreadsheet row has, and the body sent through the API's own `create_batch`.

The CSV upload (dashboard/uploads.py, dashboard/csv_orders.py) and New delivery
(dashboard/views/booking.py) both come through here, so every rule, price and idempotency
guarantee is the API's (docs/contract.md §4), and a drop's fields are named in one place.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest

from orders.api import base_url_of
from orders.inputs import BatchIn
from orders.services import BatchResult, create_batch


def present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that were given: an empty cell or input is an absent field, not an empty one."""
    return {name: value for name, value in fields.items() if value is not None}


def drop_body(
    *,
    client_order_id: str | None,
    recipient: dict[str, Any],
    external_waybill: str | None = None,
    ask_pin: bool = False,
    sandbox_scenario: str | None = None,
    window_start: str | None = None,
    window_end: str | None = None,
    notes: str | None = None,
    undeliverable_action: str | None = None,
    parcel: dict[str, Any] | None = None,
    cod_amount: str | None = None,
    recipient_language: str | None = None,
) -> dict[str, Any]:
    """One drop of a bulk body (docs/contract.md §4, §14, §17, §18); None is "not sent"."""
    return present(
        {
            "client_order_id": client_order_id,
            "external_waybill": external_waybill,
            "dropoff": present(recipient),
            "dropoff_verification": {"pin": True} if ask_pin else None,
            "sandbox_scenario": sandbox_scenario,
            # Either time alone sends the window without the other: the pipeline names it.
            "dropoff_window": present({"start": window_start, "end": window_end}) or None,
            "notes": notes,
            "undeliverable_action": undeliverable_action,
            "parcel": present(parcel or {}) or None,
            # A money string, judged by the batch's rule 9 (INVALID_COD).
            "cod": {"amount": cod_amount} if cod_amount else None,
            "recipient_language": recipient_language,
        }
    )


def send_batch(
    request: HttpRequest, *, environment: str, idempotency_key: uuid.UUID, batch: BatchIn
) -> BatchResult:
    """The checked body through create_batch for the page's business: exactly once per key
    (a retry, a double click or a concurrent duplicate replays the first answer).

    Raises what create_batch raises (BatchRefused, BillingError): the page says it in words.
    """
    return create_batch(
        business=request.business,
        environment=environment,
        idempotency_key=idempotency_key,
        batch=batch,
        base_url=base_url_of(request),
    )
