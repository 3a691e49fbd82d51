"""Helpers shared by the tracking tests: placing orders through the API, forcing a drop
into a status for the state-machine tables, and reading the answers of the identifier-list
endpoints (tracking, cancel, sandbox advance).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from billing.models import LedgerEntry, Wallet
from orders.models import Batch, DeliveryEvent, Drop, DropStatus, Order
from tests.factories import SHOP, batch, drop, group
from tests.helpers import timeline_of
from tracking.lifecycle import is_legal

# The fixture clock starts at 2026-11-23 03:00 UTC (Monday 10:00 in Phnom Penh) and ticks.
THIS_AFTERNOON = "2026-11-23T07:00:00Z"  # 14:00 in Phnom Penh, inside opening hours
TOMORROW_AFTERNOON = "2026-11-24T07:00:00Z"


def place(api, key: str, *client_order_ids: str, scheduled_at: str | None = None, **where):
    """Accept one drop per id in one pickup group; returns client_order_id → drop id."""
    pickup = {"pickup_scheduled_at": scheduled_at} if scheduled_at else {}
    body = batch(group(*[drop(i, **where) for i in client_order_ids], **pickup))
    response = api.bulk(body, key)
    assert response.status_code == 200, response.content
    orders = response.json()["data"]["orders"]
    assert [o["status"] for o in orders] == ["accepted"] * len(client_order_ids), orders
    return {o["client_order_id"]: o["drop_id"] for o in orders}


def advance(api, key: str, *identifiers: str, to: str | None = None):
    body: dict = {"identifiers": list(identifiers)}
    if to is not None:
        body["to"] = to
    return api.post("/sandbox/orders/advance", body, key)


def cancel(api, key: str, *identifiers: str):
    return api.post("/orders/cancel", {"identifiers": list(identifiers)}, key)


def entries(response) -> dict[str, dict]:
    """The per-identifier entries of a 200 answer, by client_order_id."""
    assert response.status_code == 200, response.content
    return {e["client_order_id"]: e for e in response.json()["data"]["orders"]}


def error_code(entry: dict) -> str | None:
    return entry.get("error", {}).get("code")


def statuses_of(drop_id) -> list[str]:
    """The statuses of the drop's stored events (its moves: its creation is no row)."""
    return list(DeliveryEvent.objects.filter(drop_id=drop_id).values_list("status", flat=True))


def history_of(drop_id) -> list[str]:
    """Every status the drop has had: its creation, then one per move (timeline_of checks)."""
    return [event.status for event in timeline_of(drop_id)]


def assert_legal_history(drop_id) -> None:
    """Every status is a legal step from the one before, and the drop ends where they end."""
    history = history_of(drop_id)
    for before, after in zip(history, history[1:], strict=False):
        assert is_legal(before, after), history
    assert Drop.objects.get(pk=drop_id).status == history[-1]


def ledger_sum(wallet: Wallet):
    return sum(LedgerEntry.objects.filter(wallet=wallet).values_list("amount", flat=True))


def drop_in(
    status: str, *, business, environment: str = "sandbox", client_order_id=None, **fields
) -> Drop:
    """A drop written straight to the database in `status`, with its history.

    Its creation is the row itself: SCHEDULED drops get a scheduled pickup, so
    that is their first status; any status past PENDING is one stored move from PENDING.
    """
    now = timezone.now()
    row = Batch.objects.create(
        business=business,
        environment=environment,
        client_batch_id=f"direct-{Batch.objects.count()}-{now.timestamp()}",
        fingerprint="direct",
        created_at=now,
    )
    order = Order.objects.create(
        batch=row,
        business=business,
        environment=environment,
        pickup_name="Shop",
        pickup_phone="+85512345678",
        pickup_lat=SHOP["lat"],
        pickup_long=SHOP["long"],
        pickup_scheduled_at=now + timedelta(hours=1) if status == DropStatus.SCHEDULED else None,
        created_at=now,
    )
    created = Drop.objects.create(
        order=order,
        batch=row,
        business=business,
        environment=environment,
        # The random end of the (time-ordered) batch id: two drops made in one millisecond differ.
        client_order_id=client_order_id or f"D-{row.pk.hex[-10:]}",
        recipient_name="Recipient",
        recipient_phone="+85512345679",
        lat=11.5696,
        long=104.9210,
        status=status,
        price="2.80",
        currency="USD",
        created_at=now,
        updated_at=now,
        **fields,
    )
    if status not in (DropStatus.SCHEDULED, DropStatus.PENDING):
        DeliveryEvent.objects.create(drop=created, status=status, at=now, actor="test")
    return created
