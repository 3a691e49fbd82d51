"""Tracking by the caller's own references: two queries for any number of identifiers.

Timestamps are read as text (Cast) and reshaped to ISO 8601 with Z in Python: loading
thousands of datetimes through the driver and formatting them again cost more than the
queries themselves.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import TextField
from django.db.models.functions import Cast

from config.formats import iso_z_text, money
from orders.models import ACTIVE_STATUSES, DeliveryEvent, Drop

_AS_TEXT = {
    "created": Cast("created_at", TextField()),
    "updated": Cast("updated_at", TextField()),
    "scheduled": Cast("order__pickup_scheduled_at", TextField()),
}
_FIELDS = (
    "id",
    "client_order_id",
    "status",
    "order_id",
    "batch_id",
    "external_waybill",
    "environment",
    "recipient_name",
    "recipient_phone",
    "lat",
    "long",
    "address",
    "resolved",
    "price",
    "currency",
    "order__pickup_name",
    "order__pickup_phone",
    "order__pickup_lat",
    "order__pickup_long",
    "order__pickup_address",
    "order__pickup_resolved",
    "order__driver__name",
    "order__driver__phone",
)


def track_drops(*, business, environment: str, identifiers: list[str]) -> list[dict]:
    """One entry per distinct identifier, in request order; the active drop, else the newest."""
    wanted = list(dict.fromkeys(identifiers))
    chosen: dict[str, dict] = {}
    rows = Drop.objects.filter(
        business=business, environment=environment, client_order_id__any=wanted
    ).values(*_FIELDS, **_AS_TEXT)
    for row in rows:
        current = chosen.get(row["client_order_id"])
        if current is None or _preferred(row, current):
            chosen[row["client_order_id"]] = row
    events = defaultdict(list)
    if chosen:
        # The chosen drops' ids travel as one uuid[] parameter, probing the (drop, at) index.
        for drop_id, status, at in (
            DeliveryEvent.objects.filter(drop__id__any=[row["id"] for row in chosen.values()])
            .order_by("at", "id")
            .values_list("drop_id", "status", Cast("at", TextField()))
        ):
            events[drop_id].append({"status": status, "at": iso_z_text(at)})
    return [
        _entry(chosen[i], events[chosen[i]["id"]])
        if i in chosen
        else {"client_order_id": i, "status": "NOT_FOUND"}
        for i in wanted
    ]


def pick_drop_ids(*, business, environment: str, identifiers: list[str]) -> dict[str, object]:
    """identifier → the id of its active drop, else its newest (one query)."""
    chosen: dict[str, dict] = {}
    for row in Drop.objects.filter(
        business=business, environment=environment, client_order_id__any=list(set(identifiers))
    ).values("id", "client_order_id", "status", created=_AS_TEXT["created"]):
        current = chosen.get(row["client_order_id"])
        if current is None or _preferred(row, current):
            chosen[row["client_order_id"]] = row
    return {identifier: row["id"] for identifier, row in chosen.items()}


def _preferred(row: dict, current: dict) -> bool:
    row_active, current_active = (
        row["status"] in ACTIVE_STATUSES,
        current["status"] in ACTIVE_STATUSES,
    )
    if row_active != current_active:
        return row_active
    return (row["created"], str(row["id"])) > (current["created"], str(current["id"]))


def _entry(row: dict, events: list[dict]) -> dict:
    driver = None
    if row["order__driver__name"] is not None:
        driver = {"name": row["order__driver__name"], "phone": row["order__driver__phone"]}
    pickup = {
        "name": row["order__pickup_name"],
        "phone": row["order__pickup_phone"],
        "lat": row["order__pickup_lat"],
        "long": row["order__pickup_long"],
        "address": row["order__pickup_address"],
        "scheduled_at": iso_z_text(row["scheduled"]),
    }
    if row["order__pickup_resolved"]:
        pickup["resolved_pin"] = {
            "lat": row["order__pickup_lat"],
            "long": row["order__pickup_long"],
        }
    dropoff = {
        "name": row["recipient_name"],
        "phone": row["recipient_phone"],
        "lat": row["lat"],
        "long": row["long"],
        "address": row["address"],
    }
    if row["resolved"]:
        dropoff["resolved_pin"] = {"lat": row["lat"], "long": row["long"]}
    return {
        "client_order_id": row["client_order_id"],
        "status": row["status"],
        "drop_id": str(row["id"]),
        "pass_order_id": str(row["order_id"]),
        "batch_id": str(row["batch_id"]),
        "external_waybill": row["external_waybill"],
        "environment": row["environment"],
        "pickup": pickup,
        "dropoff": dropoff,
        "driver": driver,
        "price": money(row["price"]),
        "currency": row["currency"],
        "created_at": iso_z_text(row["created"]),
        "updated_at": iso_z_text(row["updated"]),
        "events": events,
    }
