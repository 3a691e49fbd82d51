"""order.courier_position (docs/contract.md §20): while a courier is on the way, where they
are and each drop's ETA. A real courier's are throttled to one every COURIER_EVENT_SECONDS
by couriers.services.report_courier_position; the sandbox's simulated courier's are sent
as the scenario runner moves it. Both are made here, from the drops' tracking entries."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import F, QuerySet

from events.models import EventType
from events.services import NewEvent, record_many
from orders.models import Drop
from orders.statuses import ON_THE_WAY
from tracking.selectors import entries_by_drop_id


def report_simulated_positions(*, order_ids, now: datetime) -> int:
    """order.courier_position for these sandbox orders, as their simulated courier moves
    (tracking/sandbox_driver.py): the scenario runner calls it when it moves the courier,
    every SANDBOX_STEP_SECONDS at most. How many events."""
    return record_positions(Drop.objects.filter(order_id__in=list(order_ids)), now=now)


def record_positions(drops: QuerySet, *, now: datetime) -> int:
    """One order.courier_position per order among these drops with a drop on the way (in
    stop order); how many."""
    rows = list(
        drops.filter(status__in=ON_THE_WAY)
        .order_by("order_id", F("stop_sequence").asc(nulls_last=True), "pk")
        .values_list("pk", "order_id", "business_id", "environment")
    )
    return _record(rows, now) if rows else 0


def _record(drops: list[tuple], now: datetime) -> int:
    """One event per order of these (pk, order, business, environment) drops, in order."""
    entries = entries_by_drop_id([pk for pk, *_ in drops])
    by_order: dict = defaultdict(list)
    for pk, order_id, business_id, environment in drops:
        by_order[(order_id, business_id, environment)].append(entries[str(pk)])
    record_many(
        [
            NewEvent(
                business_id,
                environment,
                EventType.ORDER_COURIER_POSITION,
                _payload(order_id, order_entries),
            )  # fmt: skip
            for (order_id, business_id, environment), order_entries in by_order.items()
        ],
        at=now,
    )
    return len(by_order)


def _payload(order_id, entries: list[dict]) -> dict:
    driver = entries[0]["driver"] or {}
    return {
        "pass_order_id": str(order_id),
        "courier": {"name": driver.get("name"), "position": driver.get("position")},
        "drops": [
            {
                "drop_id": entry["drop_id"],
                "client_order_id": entry["client_order_id"],
                "status": entry["status"],
                "eta": entry["eta"],
            }
            for entry in entries
        ],
    }
