"""Reads of batches, reused by the API and the dashboard."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from datetime import datetime

import orjson
from django.db.models import F, Q, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleLessThan

from core.cursors import InvalidCursor, make_cursor, read_cursor
from core.formats import iso_z
from orders.models import Batch, Drop
from orders.results import ResultEntry, stored_entries

BATCHES_CURSOR_SALT = "orders.selectors.batches"


def batch_detail(*, business, environment: str, batch_id: uuid.UUID) -> dict | None:
    """The stored result, each accepted entry with its drop's current delivery_status."""
    row = (
        Batch.objects.filter(pk=batch_id, business=business, environment=environment)
        .values_list("response", "status")
        .first()
    )
    if row is None:
        return None
    response, status = row
    data = orjson.loads(bytes(response))["data"]
    data["status"] = status
    statuses = dict(batch_drops(batch_id).values_list("id", "status"))
    for entry in data["orders"]:
        if entry["status"] == "accepted":
            entry["delivery_status"] = statuses.get(uuid.UUID(entry["drop_id"]))
    return data


def batch_drops(batch_id: uuid.UUID) -> QuerySet[Drop]:
    """A batch's drops, found through its orders: drops have no index by batch of their own
    (orders.models.Drop.batch)."""
    return Drop.objects.filter(order__batch_id=batch_id)


@dataclass(frozen=True)
class BatchPage:
    batches: list[dict]
    has_more: bool
    next_cursor: str | None  # None on the last page


def list_batches(
    *, business, environment: str, limit: int, cursor: str | None, base_url: str
) -> BatchPage:
    """Batch summaries (as in `batch.created`, with their created_at), newest first, through
    index batch_listing.

    Raises InvalidCursor for a cursor this listing did not make for this account.
    """
    bound_to = {"business": business.pk, "environment": environment}
    after = None
    if cursor:
        position = read_cursor(cursor, salt=BATCHES_CURSOR_SALT, filters=bound_to)
        try:
            after = datetime.fromisoformat(position[0]), uuid.UUID(position[1])
        except (IndexError, TypeError, ValueError) as exc:
            raise InvalidCursor("Not a cursor this listing gave out.") from exc
    found = list(batch_rows(business=business, environment=environment, after=after, limit=limit))
    shown, has_more = found[:limit], len(found) > limit
    next_cursor = None
    if has_more:
        pk, at = shown[-1][0], shown[-1][1]
        position = [at.isoformat(), str(pk)]
        next_cursor = make_cursor(salt=BATCHES_CURSOR_SALT, position=position, filters=bound_to)
    return BatchPage(
        batches=[
            {
                "batch_id": str(pk),
                "client_batch_id": client_batch_id,
                "status": status,
                "created_at": iso_z(created_at),
                "counts": {"total": total, "accepted": accepted, "rejected": rejected},
                "poll_url": f"{base_url}/api/v1/batches/{pk}",
            }
            for pk, created_at, client_batch_id, status, total, accepted, rejected in shown
        ],
        has_more=has_more,
        next_cursor=next_cursor,
    )


def batch_rows(
    *, business, environment: str, after: tuple[datetime, uuid.UUID] | None, limit: int
) -> QuerySet:
    """Up to limit + 1 batches older than `after` (created_at, id), newest first: one query."""
    rows = Batch.objects.filter(business=business, environment=environment)
    if after is not None:
        rows = rows.filter(TupleLessThan(Tuple(F("created_at"), F("id")), after))
    return rows.order_by("-created_at", "-id").values_list(
        "id", "created_at", "client_batch_id", "status", "total", "accepted", "rejected"
    )[: limit + 1]


def batches_named(*, business, environments: list[str], text: str) -> list[uuid.UUID]:
    """The account's batches with this client_batch_id or batch_id: one per environment at
    most (one query)."""
    named = Q(client_batch_id=text)
    with contextlib.suppress(ValueError):  # not an id: a client_batch_id only
        named |= Q(pk=uuid.UUID(text))
    rows = Batch.objects.filter(named, business=business, environment__in=environments)
    return list(rows.values_list("pk", flat=True)[:4])


def stored_results(batch: Batch) -> list[ResultEntry]:
    """The batch's result entries as answered to POST /orders/bulk, in submission order."""
    return stored_entries(bytes(batch.response))
