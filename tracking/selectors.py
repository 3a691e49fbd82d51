"""Tracking by the caller's own references: two queries for any number of identifiers.

Ids and timestamps come out of the database already as wire text (core/functions.py):
turning thousands of them into UUID and datetime objects only to format them again cost
more than the queries themselves.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from core.formats import money
from core.functions import IsoZ, UuidText
from geo.geometry import haversine_km
from orders.links import tracking_url
from orders.models import (
    ACTIVE_STATUSES,
    DeliveryEvent,
    Drop,
    DropStatus,
    FailureReason,
    ProofMethod,
)
from tracking.eta import eta_of
from tracking.proof import photo_url

_FIELDS = (
    "client_order_id",
    "status",
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
    "tracking_token",
    "pod_method",
    "pod_received_by",
    "pod_photo",
    "failure_reason",
)
_AS_TEXT = {
    "drop_id": UuidText("id"),
    "pass_order_id": UuidText("order_id"),
    "batch_text_id": UuidText("batch_id"),
    "created": IsoZ("created_at"),
    "updated": IsoZ("updated_at"),
    "scheduled": IsoZ("order__pickup_scheduled_at"),
}


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
        # Joined on the same identifiers (strings, one array parameter); events of drops
        # that were not chosen (an id used again) are left out by the lookup below.
        for drop_id, status, at in (
            DeliveryEvent.objects.filter(
                drop__business=business,
                drop__environment=environment,
                drop__client_order_id__any=list(chosen),
            )
            .order_by("at", "id")
            .values_list(UuidText("drop_id"), "status", IsoZ("at"))
        ):
            events[drop_id].append({"status": status, "at": at})
    return [
        _entry(chosen[i], events[chosen[i]["drop_id"]])
        if i in chosen
        else {"client_order_id": i, "status": "NOT_FOUND"}
        for i in wanted
    ]


def entries_by_drop_id(drop_ids: list) -> dict[str, dict]:
    """The tracking entries of these drops, keyed by drop id text: two queries in all."""
    rows = Drop.objects.filter(pk__any=list(drop_ids)).values(*_FIELDS, **_AS_TEXT)
    events = defaultdict(list)
    for drop_id, status, at in (
        DeliveryEvent.objects.filter(drop__id__any=list(drop_ids))
        .order_by("at", "id")
        .values_list(UuidText("drop_id"), "status", IsoZ("at"))
    ):
        events[drop_id].append({"status": status, "at": at})
    return {row["drop_id"]: _entry(row, events[row["drop_id"]]) for row in rows}


def pick_drop_ids(*, business, environment: str, identifiers: list[str]) -> dict[str, object]:
    """identifier → the id of its active drop, else its newest (one query)."""
    chosen: dict[str, dict] = {}
    for row in Drop.objects.filter(
        business=business, environment=environment, client_order_id__any=list(set(identifiers))
    ).values("id", "client_order_id", "status", drop_id=UuidText("id"), created=IsoZ("created_at")):
        current = chosen.get(row["client_order_id"])
        if current is None or _preferred(row, current):
            chosen[row["client_order_id"]] = row
    return {identifier: row["id"] for identifier, row in chosen.items()}


def _preferred(row: dict, current: dict) -> bool:
    row_active = row["status"] in ACTIVE_STATUSES
    if row_active != (current["status"] in ACTIVE_STATUSES):
        return row_active
    return (row["created"], row["drop_id"]) > (current["created"], current["drop_id"])


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
        "scheduled_at": row["scheduled"],
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
        "drop_id": row["drop_id"],
        "pass_order_id": row["pass_order_id"],
        "batch_id": row["batch_text_id"],
        "external_waybill": row["external_waybill"],
        "environment": row["environment"],
        "pickup": pickup,
        "dropoff": dropoff,
        "driver": driver,
        "price": money(row["price"]),
        "currency": row["currency"],
        "created_at": row["created"],
        "updated_at": row["updated"],
        "events": events,
        # How many status events the drop has had: receivers order webhooks by it.
        "sequence": len(events),
        "eta": _eta(row, events),
        "tracking_url": tracking_url(row["tracking_token"]),
        "proof_of_delivery": _proof(row, events),
        "failure": _failure(row, events),
    }


def _at(events: list[dict], status: str) -> str | None:
    return next((e["at"] for e in reversed(events) if e["status"] == status), None)


def _proof(row: dict, events: list[dict]) -> dict | None:
    """How a DELIVERED drop was handed over (DESIGN.md §14); None before."""
    if row["status"] != DropStatus.DELIVERED:
        return None
    return {
        "method": row["pod_method"] or ProofMethod.NONE,
        "at": _at(events, DropStatus.DELIVERED),
        "received_by": row["pod_received_by"],
        "photo_url": photo_url(row["drop_id"]) if row["pod_photo"] else None,
    }


def _failure(row: dict, events: list[dict]) -> dict | None:
    if row["status"] != DropStatus.FAILED:
        return None
    return {
        "reason": row["failure_reason"] or FailureReason.OTHER,
        "at": _at(events, DropStatus.FAILED),
    }


def _eta(row: dict, events: list[dict]) -> dict | None:
    picked_up = next((e["at"] for e in events if e["status"] == DropStatus.PICKED_UP), None)
    # The pickup time is when the drop started waiting for a courier; before that, when it
    # is scheduled (the sandbox test driver may dispatch a drop before its time).
    waiting = next((e["at"] for e in events if e["status"] == DropStatus.PENDING), None)
    return eta_of(
        status=row["status"],
        pickup_time=datetime.fromisoformat(waiting or row["scheduled"] or row["created"]),
        picked_up_at=datetime.fromisoformat(picked_up) if picked_up else None,
        km=haversine_km(
            row["order__pickup_lat"], row["order__pickup_long"], row["lat"], row["long"]
        ),
        now=timezone.now(),
    )
