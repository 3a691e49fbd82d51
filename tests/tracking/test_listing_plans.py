"""GET /orders, /batches and the dashboard's orders page stay indexed: EXPLAIN of every list
query on a 100,000-drop account.

The rows go in by COPY (core.writes.insert_rows) and the planner gets fresh statistics
(ANALYZE), as autovacuum would give it on a live database; then no query shape of the
listing may read the drops table from end to end. The account is built once for the module's
tests, in a transaction rolled back after the last of them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction

from console.provisioning import provision_business
from core.writes import insert_rows
from orders.models import Batch, DeliveryEvent, Drop, DropStatus, Order
from orders.rows import DropRow, OrderRow
from orders.selectors import batch_drops, batch_rows, list_batches
from orders.short_codes import new_short_codes
from tests.fixtures import Tenant
from tracking.listing import DropFilters, list_drops, page_keys, sync_horizon

pytestmark = pytest.mark.django_db

# A drop's status moves (its creation is the drop row itself, not an event).
EVENT_FIELDS = ("drop_id", "status", "at", "actor")

DROPS = 100_000
PER_BATCH = 1000
PER_ORDER = 20  # drops per pickup group: a batch has 50 orders
# A hundred batches an hour apart, all of it over before the test's "now".
START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=30)
# Mostly finished, a few in flight, failures rare: a real account's mix.
MIX = [
    (DropStatus.DELIVERED, 0.80),
    (DropStatus.CANCELLED, 0.06),
    (DropStatus.PENDING, 0.05),
    (DropStatus.ASSIGNED, 0.04),
    (DropStatus.PICKED_UP, 0.03),
    (DropStatus.SCHEDULED, 0.015),
    (DropStatus.FAILED, 0.005),
]


def load_drops(business, environment: str, count: int, rng: random.Random) -> list[uuid.UUID]:
    """`count` drops in batches of PER_BATCH, a minute apart; returns the batch ids."""
    statuses, weights = zip(*MIX, strict=True)
    batch_ids, orders, drops, events = [], [], [], []
    for b in range(count // PER_BATCH):
        at = START + timedelta(minutes=b * 60)
        batch = Batch.objects.create(
            business=business,
            environment=environment,
            client_batch_id=f"PLAN-{environment}-{b}",
            fingerprint="plan",
            status="COMPLETED",
            created_at=at,
        )
        batch_ids.append(batch.pk)
        for i, status in enumerate(rng.choices(statuses, weights, k=PER_BATCH)):
            if i % PER_ORDER == 0:
                order_id = uuid.uuid4()
                orders.append(
                    OrderRow(
                        id=order_id, batch_id=batch.pk, business_id=business.pk,
                        environment=environment, pickup_name="Shop",
                        pickup_phone="+85512345678", pickup_lat=11.5564, pickup_long=104.9282,
                        pickup_address=None, pickup_resolved=False, pickup_scheduled_at=None,
                        created_at=at,
                    )
                )  # fmt: skip
            drop_id = uuid.uuid4()
            changed = at + timedelta(seconds=rng.randrange(1, 86_400))
            drops.append(
                DropRow(
                    id=drop_id, order_id=order_id, batch_id=batch.pk, business_id=business.pk,
                    environment=environment, client_order_id=f"P-{b}-{i}",
                    external_waybill=None, recipient_name="Recipient",
                    recipient_phone="+85512345679", lat=11.5696, long=104.921, address=None,
                    resolved=False, status=status, price=Decimal("2.80"), currency="USD",
                    created_at=at, updated_at=changed, dropoff_pin=None, sandbox_scenario=None,
                    scenario_next_at=None, short_code=new_short_codes(1)[0],
                )
            )  # fmt: skip
            if status != DropStatus.PENDING:  # still where it was created: no move
                events.append((drop_id, status, changed, "plan"))
    insert_rows(Order, OrderRow._fields, orders)
    insert_rows(Drop, DropRow._fields, drops)
    insert_rows(DeliveryEvent, EVENT_FIELDS, events)
    return batch_ids


@pytest.fixture(scope="module")
def big_account(django_db_setup, django_db_blocker) -> Iterator[tuple[Tenant, list[uuid.UUID]]]:
    """Alice (DROPS sandbox drops, a few thousand live) and her sandbox batch ids, Bob beside
    her: built once for the module, the build being most of its time. Each test's own
    transaction is a savepoint inside this one, so what a test writes goes when it ends, and
    the accounts when the module does."""
    with django_db_blocker.unblock(), transaction.atomic():
        tenants = []
        for name in ("Alice", "Bob"):
            made = provision_business(name=f"{name} Shop", email=f"{name.lower()}@plans.example")
            tenants.append(Tenant(made.business, made.sandbox_key, made.live_key))
        alice, bob = tenants
        rng = random.Random(14)
        batch_ids = load_drops(alice.business, "sandbox", DROPS, rng)
        load_drops(alice.business, "live", 5 * PER_BATCH, rng)
        load_drops(bob.business, "sandbox", 5 * PER_BATCH, rng)
        with connection.cursor() as cursor:
            for table in ("orders_drop", "orders_batch", "orders_order", "orders_deliveryevent"):
                cursor.execute(f"ANALYZE {table}")
        # The foreign keys are checked at commit (deferred), and each test's end checks them
        # inside its savepoint, whose rollback leaves them pending again: checked here,
        # once, they are off the list instead of checked anew after every test.
        connection.check_constraints()
        yield alice, batch_ids
        transaction.set_rollback(True)


PRINT_PLANS = False


def plan_of(queryset) -> str:
    return queryset.explain()


SHAPES = {
    "newest first": DropFilters(),
    "one status": DropFilters(statuses=(DropStatus.FAILED,)),
    "two statuses": DropFilters(statuses=(DropStatus.PENDING, DropStatus.ASSIGNED)),
    "created since": DropFilters(created_since=START + timedelta(days=2)),
    "updated since": DropFilters(updated_since=START + timedelta(days=2)),
    "updated since, one status": DropFilters(statuses=(DropStatus.DELIVERED,), updated_since=START),
}


def test_no_list_query_reads_the_whole_drops_table(big_account):
    tenant, batch_ids = big_account
    business = tenant.business
    assert Drop.objects.filter(business=business, environment="sandbox").count() == DROPS
    shapes = {**SHAPES, "one batch": DropFilters(batch_id=batch_ids[len(batch_ids) // 2])}
    # The dashboard's: both environments, a search, the first page.
    dashboard = DropFilters(client_order_id_contains="p-5")
    plans = {}
    for name, filters in shapes.items():
        first = list_drops(business=business, environments=["sandbox"], filters=filters)
        assert first.orders, name
        # The first page, and a page from the middle (the cursor of a later page).
        middle = _position_of(first.orders[-1], filters)
        horizon = sync_horizon() if filters.by_change else None
        for after in (None, middle):
            keys = page_keys(
                business=business,
                environments=["sandbox"],
                filters=filters,
                after=after,
                horizon=horizon,
                limit=100,
            )
            plans[name, after is not None] = plan_of(keys)
    plans["dashboard", False] = plan_of(
        page_keys(
            business=business,
            environments=["sandbox", "live"],
            filters=dashboard,
            after=None,
            horizon=None,
            limit=25,
        )
    )
    ids = [uuid.UUID(o["drop_id"]) for o in first.orders]
    plans["entries", False] = plan_of(Drop.objects.filter(pk__any=ids))
    plans["events", False] = plan_of(DeliveryEvent.objects.filter(drop__id__any=ids))
    # GET /batches/{id}: its drops' statuses.
    plans["batch detail", False] = plan_of(batch_drops(batch_ids[len(batch_ids) // 2]))
    # GET /batches: the first page and one further on.
    batches = list_batches(
        business=business, environment="sandbox", limit=10, cursor=None, base_url=""
    )
    assert len(batches.batches) == 10 and batches.has_more
    last = Batch.objects.get(pk=batches.batches[-1]["batch_id"])
    for after in (None, (last.created_at, last.pk)):
        rows = batch_rows(business=business, environment="sandbox", after=after, limit=10)
        plans["batches", after is not None] = plan = plan_of(rows)
        assert "batch_listing" in plan, plan
    # The sync order reads changed drops from the index of changes only, and drops still as
    # created from the created index (a new drop is written to one index, not both).
    for name in ("updated since", "updated since, one status"):
        for later in (False, True):
            assert "drop_listing_by_change" in plans[name, later], plans[name, later]
    assert "drop_listing_by_created" in plans["updated since", False]
    assert "drop_listing_by_created" not in plans["updated since, one status", False]
    # Drops have no index by batch: a batch's are found through its orders (Drop.batch).
    for shape in (("one batch", False), ("one batch", True), ("batch detail", False)):
        assert "orders_order_batch_id" in plans[shape], plans[shape]
        assert "orders_drop_order_id" in plans[shape], plans[shape]
    for shape, plan in plans.items():
        assert "Seq Scan on orders_order" not in plan, f"{shape}:\n{plan}"
        assert "Seq Scan on orders_drop" not in plan, f"{shape}:\n{plan}"
        assert "Seq Scan on orders_deliveryevent" not in plan, f"{shape}:\n{plan}"
        assert "Seq Scan on orders_batch" not in plan, f"{shape}:\n{plan}"
        assert "Index" in plan, f"{shape}:\n{plan}"
    if PRINT_PLANS:
        for shape, plan in plans.items():
            print(shape, plan, sep="\n")


def test_no_dashboard_filter_reads_the_whole_drops_table(big_account):
    """The orders page's filters: both environments, 25 a page."""
    tenant, batch_ids = big_account
    shapes = {
        "search": DropFilters(search="p-5"),
        "days": DropFilters(
            created_since=START + timedelta(days=2), created_before=START + timedelta(days=3)
        ),
        "statuses and search": DropFilters(
            statuses=(DropStatus.FAILED, DropStatus.PENDING), search="recipient"
        ),
        "two batches": DropFilters(batch_ids=tuple(batch_ids[40:42]), search="p-4"),
        "everything": DropFilters(
            statuses=(DropStatus.DELIVERED,),
            created_since=START,
            created_before=START + timedelta(days=20),
            search="P-1",
        ),
    }
    both = ["sandbox", "live"]
    for name, filters in shapes.items():
        page = list_drops(business=tenant.business, environments=both, filters=filters, limit=25)
        assert page.orders, name
        plan = page_keys(
            business=tenant.business,
            environments=both,
            filters=filters,
            after=None,
            horizon=None,
            limit=25,
        ).explain()
        assert "Seq Scan on orders_drop" not in plan, f"{name}:\n{plan}"
        assert "Index" in plan, f"{name}:\n{plan}"


def _position_of(entry: dict, filters: DropFilters) -> tuple[datetime, uuid.UUID]:
    at = entry["updated_at"] if filters.by_change else entry["created_at"]
    return datetime.fromisoformat(at), uuid.UUID(entry["drop_id"])


def test_the_window_status_filter_reads_its_own_index(big_account):
    """GET /orders?window_status= (docs/contract.md §17) reads drop_listing_by_window, which
    holds only drops with a window; the minute's job finds the drops turning at risk by
    drop_window_risk_due."""
    tenant, _ = big_account
    business = tenant.business
    # One drop in ten has a window, its status as its delivery went.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE orders_drop SET
                window_start = created_at + interval '1 hour',
                window_end = created_at + interval '3 hours',
                window_status = CASE
                    WHEN status = 'DELIVERED' THEN 'met'
                    WHEN status IN ('FAILED', 'CANCELLED') THEN 'missed'
                    WHEN status = 'PICKED_UP' THEN 'at_risk'
                    ELSE 'on_track' END,
                window_risk_at = CASE
                    WHEN status IN ('SCHEDULED', 'PENDING', 'ASSIGNED')
                    THEN created_at + interval '2 hours' END
            WHERE business_id = %s AND right(client_order_id, 1) = '7'
            """,
            [business.pk],
        )
        cursor.execute("ANALYZE orders_drop")
    shapes = {
        "at risk": DropFilters(window_statuses=("at_risk",)),
        "on track or at risk": DropFilters(window_statuses=("on_track", "at_risk")),
        "missed, one status": DropFilters(
            window_statuses=("missed",), statuses=(DropStatus.CANCELLED,)
        ),
        "met, created since": DropFilters(
            window_statuses=("met",), created_since=START + timedelta(days=2)
        ),
    }
    plans = {}
    for name, filters in shapes.items():
        first = list_drops(business=business, environments=["sandbox"], filters=filters)
        assert first.orders, name
        wanted = set(filters.window_statuses)
        assert {entry["window_status"] for entry in first.orders} <= wanted, name
        middle = _position_of(first.orders[-1], filters)
        for after in (None, middle):
            keys = page_keys(
                business=business,
                environments=["sandbox"],
                filters=filters,
                after=after,
                horizon=None,
                limit=100,
            )
            plans[name, after is not None] = plan_of(keys)
    due = Drop.objects.filter(window_status="on_track", window_risk_at__lt=START).order_by(
        "window_risk_at"
    )
    plans["the minute's job", False] = plan_of(due[:1000])
    assert "drop_window_risk_due" in plans["the minute's job", False]
    for shape, plan in plans.items():
        if shape[0] != "the minute's job":
            assert "drop_listing_by_window" in plan, f"{shape}:\n{plan}"
        assert "Seq Scan on orders_drop" not in plan, f"{shape}:\n{plan}"
        assert "Sort" not in plan.replace("Sort Key", ""), f"{shape}:\n{plan}"
    if PRINT_PLANS:
        for shape, plan in plans.items():
            print(shape, plan, sep="\n")
