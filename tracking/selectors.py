"""Tracking by the caller's own references: a few queries for any number of identifiers.

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
    FINISHED_STATUSES,
    DeliveryEvent,
    Drop,
    DropStatus,
    FailureReason,
    ProofMethod,
    initial_status,
)
from tracking.eta import EtaModel
from tracking.proof import photo_url

_FIELDS = (
    "id",
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
    rows = _by_client_order_ids(business, environment, wanted, *_FIELDS, **_AS_TEXT)
    for row in rows:
        current = chosen.get(row["client_order_id"])
        if current is None or _preferred(row, current):
            chosen[row["client_order_id"]] = row
    events = _moves_of(chosen.values())
    context = _Context()
    return [
        context.entry(chosen[i], events.get(chosen[i]["drop_id"], ()))
        if i in chosen
        else {"client_order_id": i, "status": "NOT_FOUND"}
        for i in wanted
    ]


def _moves_of(rows) -> dict[str, list[dict]]:
    """The stored status moves of these drops (values() rows), oldest first.

    Moves only go forward, so a drop still in its initial status has none: only the others
    are looked up, in one query on (drop, at), or none when every drop is where it started.
    """
    moved = [
        row["id"]
        for row in rows
        if row["status"] != initial_status(scheduled=row["scheduled"] is not None)
    ]
    events = defaultdict(list)
    if not moved:
        return events
    for drop_id, status, at in (
        DeliveryEvent.objects.filter(drop__id__any=moved)
        .order_by("at", "id")
        .values_list(UuidText("drop_id"), "status", IsoZ("at"))
    ):
        events[drop_id].append({"status": status, "at": at})
    return events


def entries_by_drop_id(drop_ids: list) -> dict[str, dict]:
    """The tracking entries of these drops, keyed by drop id text: two queries at most."""
    rows = list(Drop.objects.filter(pk__any=list(drop_ids)).values(*_FIELDS, **_AS_TEXT))
    events = _moves_of(rows)
    context = _Context()
    return {row["drop_id"]: context.entry(row, events.get(row["drop_id"], ())) for row in rows}


def pick_drop_ids(*, business, environment: str, identifiers: list[str]) -> dict[str, object]:
    """identifier → the id of its active drop, else its newest (one or two queries)."""
    chosen: dict[str, dict] = {}
    for row in _by_client_order_ids(
        business,
        environment,
        list(set(identifiers)),
        "id",
        "client_order_id",
        "status",
        drop_id=UuidText("id"),
        created=IsoZ("created_at"),
    ):
        current = chosen.get(row["client_order_id"])
        if current is None or _preferred(row, current):
            chosen[row["client_order_id"]] = row
    return {identifier: row["id"] for identifier, row in chosen.items()}


def _by_client_order_ids(
    business, environment: str, ids: list[str], *fields, **expressions
) -> list[dict]:
    """The drops that matter for these ids, as values(): for each id its active drop, else
    all its finished ones (the caller picks the newest). Active drops come through the
    unique index; only the ids left without one are looked for among finished drops, through
    theirs (orders.models.Drop.Meta). Two queries at most, one when every id is active."""
    mine = Drop.objects.filter(business=business, environment=environment).order_by()
    rows = list(
        mine.filter(status__in=ACTIVE_STATUSES, client_order_id__any=ids).values(
            *fields, **expressions
        )
    )
    found = {row["client_order_id"] for row in rows}
    rest = [i for i in ids if i not in found]
    if rest:
        rows += mine.filter(status__in=FINISHED_STATUSES, client_order_id__any=rest).values(
            *fields, **expressions
        )
    return rows


def _preferred(row: dict, current: dict) -> bool:
    row_active = row["status"] in ACTIVE_STATUSES
    if row_active != (current["status"] in ACTIVE_STATUSES):
        return row_active
    return (row["created"], row["drop_id"]) > (current["created"], current["drop_id"])


# Plain strings: an enum member costs a descriptor call on every access, thousands per answer.
_PICKED_UP, _PENDING = DropStatus.PICKED_UP.value, DropStatus.PENDING.value


class _Context:
    """What every entry of one answer shares: the time, the link prefix, the ETA model."""

    __slots__ = ("eta", "link", "moments", "now")

    def __init__(self) -> None:
        self.now = timezone.now()
        self.link = tracking_url("")
        self.eta = EtaModel()
        self.moments: dict[str, datetime] = {}

    def _moment(self, text: str) -> datetime:
        """A wire time as a datetime, parsed once: the drops of a batch share theirs."""
        moment = self.moments.get(text)
        if moment is None:
            moment = self.moments[text] = datetime.fromisoformat(text)
        return moment

    def entry(self, row: dict, moves) -> dict:
        # The first status is the drop's own creation (no event row: orders.models.DeliveryEvent).
        created = {
            "status": initial_status(scheduled=row["scheduled"] is not None),
            "at": row["created"],
        }
        events = [created, *moves]
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
            "eta": self._eta(row, events),
            "tracking_url": self.link + row["tracking_token"],
            "proof_of_delivery": _proof(row, events),
            "failure": _failure(row, events),
        }

    def _eta(self, row: dict, events: list[dict]) -> dict | None:
        # The pickup time is when the drop started waiting for a courier; before that, when
        # it is scheduled (the sandbox test driver may dispatch a drop before its time).
        picked_up = waiting = None
        for event in events:
            status = event["status"]
            if status == _PENDING and waiting is None:
                waiting = event["at"]
            elif status == _PICKED_UP and picked_up is None:
                picked_up = event["at"]
        return self.eta.of(
            status=row["status"],
            pickup_time=self._moment(waiting or row["scheduled"] or row["created"]),
            picked_up_at=self._moment(picked_up) if picked_up else None,
            km=haversine_km(
                row["order__pickup_lat"], row["order__pickup_long"], row["lat"], row["long"]
            ),
            now=self.now,
        )


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
