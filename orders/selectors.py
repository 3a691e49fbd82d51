"""Reads of batches, reused by the API and the dashboard."""

from __future__ import annotations

import uuid

import orjson

from orders.models import Batch, Drop


def batch_detail(*, business, environment: str, batch_id: uuid.UUID) -> dict | None:
    """The stored result, each accepted entry with its drop's current delivery_status."""
    row = (
        Batch.objects.filter(pk=batch_id, business=business, environment=environment)
        .values_list("response", "status")
        .first()
    )
    if row is None:
        return None
    data = orjson.loads(bytes(row[0]))["data"]
    data["status"] = row[1]
    statuses = dict(Drop.objects.filter(batch_id=batch_id).values_list("id", "status"))
    for entry in data["orders"]:
        if entry["status"] == "accepted":
            entry["delivery_status"] = statuses.get(uuid.UUID(entry["drop_id"]))
    return data
