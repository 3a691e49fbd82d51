"""What the batch hot path must still guarantee, on PostgreSQL.

One ORDER_DEBIT per batch instead of one per drop, a drop's creation that is its own row
instead of an event, optimistic writes that the unique index corrects, owner checks by
triggers instead of foreign keys, COPY with a hand-made encoder: each test here fails if
the guarantee it names is lost.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from itertools import pairwise

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import BillingModel
from billing.models import EntryKind, InvoiceLine, LedgerEntry
from billing.services import sandbox_top_up
from core.formats import iso_z, money
from core.writes import insert_rows
from orders.models import Batch, DeliveryEvent, Drop, DropStatus, Order
from orders.rows import DropRow, OrderRow
from orders.services import DROP_CHUNK_ROWS
from orders.short_codes import new_short_codes
from tests.billing.helpers import (
    assert_debited_per_batch,
    assert_ledger_consistent,
    batch_debit,
    outcomes,
    wallet_of,
)
from tests.factories import SHOP, batch, drop, group
from tests.helpers import timeline_of
from tests.tracking.helpers import THIS_AFTERNOON, advance, cancel, entries, place

S = DropStatus
# With base 1.00 + 1.00/km: a drop at the shop costs 1.00, at HOME (the default) 2.66,
# at FAR 6.56.
FAR = {"lat": 11.6064, "long": 104.9282}


@pytest.fixture
def per_km(make_tenant):
    def make(balance: str):
        return make_tenant(base_fee="1.00", per_km_fee="1.00", sandbox_balance=balance)

    return make


def bulk(api, tenant, *groups, key: str | None = None):
    response = api.bulk(batch(*groups), key or tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return response


def stored(client_order_id: str) -> Drop:
    return Drop.objects.get(client_order_id=client_order_id)


def refused(match: str):
    """The database's own refusal, recognised by its message (not any IntegrityError)."""
    return pytest.raises(IntegrityError, match=match)


# --- 1. money: the balance is the sum of the ledger -----------------------------------------


def test_balance_equals_the_ledger_sum_after_batches_a_top_up_and_a_refund(
    open_for_business, per_km, api
):
    tenant = per_km("20.00")
    start = wallet_of(tenant).balance

    bulk(api, tenant, group(drop("A-1"), drop("A-2", **SHOP), drop("A-3", **FAR)))
    partial = bulk(api, tenant, group(drop("B-1", **FAR), drop("B-2", **FAR), drop("B-3", **SHOP)))
    sandbox_top_up(business=tenant.business, amount=Decimal("5.00"))
    entries(cancel(api, tenant.sandbox_key, "A-2"))
    bulk(api, tenant, group(drop("C-1")))

    assert outcomes(partial) == ["accepted", "INSUFFICIENT_BALANCE", "accepted"]
    kept = Drop.objects.exclude(status=S.CANCELLED).aggregate(total=Sum("price"))["total"]
    balance = assert_ledger_consistent(tenant)  # balance == sum of entries, chain intact
    assert balance == start + Decimal("5.00") - kept == Decimal("5.56")
    refund = LedgerEntry.objects.get(kind=EntryKind.REFUND)
    assert (refund.drop_id, refund.amount) == (stored("A-2").pk, stored("A-2").price)
    assert len(assert_debited_per_batch(tenant)) == 3


# --- 2. every accepted drop is traceable to its charge --------------------------------------


def test_every_batch_is_charged_once_for_exactly_its_drops(open_for_business, per_km, api):
    tenant = per_km("12.00")
    responses = [
        bulk(api, tenant, group(drop("T-1"), drop("T-2", **SHOP)), group(drop("T-3", **FAR))),
        bulk(api, tenant, group(drop("U-1", **FAR), drop("U-2", **SHOP))),  # 1.78 left: U-2
        bulk(api, tenant, group(drop("V-1", phone="12"), drop("V-2", lat=0, long=0))),
        bulk(api, tenant, group(drop("W-1", **FAR))),  # 0.78 left: nothing
    ]

    assert [r.json()["data"]["counts"]["accepted"] for r in responses] == [3, 1, 0, 0]
    for response in responses:
        data = response.json()["data"]
        accepted = [o for o in data["orders"] if o["status"] == "accepted"]
        charges = LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT, batch_id=data["batch_id"])
        if not accepted:
            assert not charges.exists()
            assert not LedgerEntry.objects.filter(batch_id=data["batch_id"]).exists()
            continue
        debit = batch_debit(data["batch_id"])
        assert list(charges) == [debit]
        assert -debit.amount == sum(Decimal(o["price"]) for o in accepted)
        for entry in accepted:  # what the answer said is what is stored
            assert money(Drop.objects.get(pk=entry["drop_id"]).price) == entry["price"]
    assert len(assert_debited_per_batch(tenant)) == 2
    assert assert_ledger_consistent(tenant) == Decimal("0.78")


def test_an_invoiced_batch_gets_one_line_per_drop_and_no_ledger_debit(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(billing=BillingModel.INVOICED)

    data = bulk(api, tenant, group(drop("I-1"), drop("I-2", **SHOP))).json()["data"]

    lines = {str(line.drop_id): line.amount for line in InvoiceLine.objects.all()}
    assert lines == {o["drop_id"]: Decimal(o["price"]) for o in data["orders"]}
    assert not LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).exists()


# --- 3. one active drop per client_order_id, guaranteed by the database ----------------------


def copy_of(original: Drop, **changes) -> dict:
    """The column values of a new drop like `original` (its own id and short code), with
    changes."""
    values = {
        f.attname: getattr(original, f.attname)
        for f in Drop._meta.concrete_fields
        if f.attname not in ("id", "short_code")
    }
    return {**values, **changes}


def test_the_database_refuses_a_second_active_drop_with_the_id_inserted_by_the_orm(
    open_for_business, alice, api
):
    place(api, alice.sandbox_key, "D-1")
    first = stored("D-1")

    with refused("client_order_id_active_once"), transaction.atomic():
        Drop.objects.create(**copy_of(first))

    Drop.objects.filter(pk=first.pk).update(status=S.CANCELLED)  # no longer active
    again = Drop.objects.create(**copy_of(first))
    assert Drop.objects.filter(client_order_id="D-1").count() == 2
    assert again.status == S.PENDING


COPY_ROW_SQL = (
    "INSERT INTO orders_drop SELECT (jsonb_populate_record(d, jsonb_build_object("
    "'id', gen_random_uuid(), 'short_code', upper(substr(md5(random()::text), 1, 12))))).*"
    " FROM orders_drop AS d WHERE d.id = %s"
)


def test_the_database_refuses_a_second_active_drop_with_the_id_inserted_by_sql(
    open_for_business, alice, api
):
    drop_id = place(api, alice.sandbox_key, "D-1")["D-1"]

    with (
        refused("client_order_id_active_once"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(COPY_ROW_SQL, [drop_id])

    Drop.objects.filter(pk=drop_id).update(status=S.DELIVERED)  # finished: the id is free
    with connection.cursor() as cursor:
        cursor.execute(COPY_ROW_SQL, [drop_id])
    assert Drop.objects.filter(client_order_id="D-1").count() == 2


def test_a_taken_id_is_answered_duplicate_and_only_the_others_are_written_and_charged(
    open_for_business, alice, api
):
    place(api, alice.sandbox_key, "TAKEN")
    before = wallet_of(alice).balance

    with CaptureQueriesContext(connection) as queries:
        response = bulk(
            api, alice, group(drop("N-1"), drop("TAKEN", **SHOP)), group(drop("N-2", **FAR))
        )

    # The optimistic write was refused by the index and done again (the savepoint fallback).
    assert any(q["sql"].startswith("ROLLBACK TO SAVEPOINT") for q in queries.captured_queries)
    data = response.json()["data"]
    assert outcomes(response) == ["accepted", "DUPLICATE_CLIENT_ORDER_ID", "accepted"]
    assert data["counts"] == {"total": 3, "accepted": 2, "rejected": 1}
    assert Drop.objects.filter(client_order_id="TAKEN").count() == 1
    written = Drop.objects.filter(batch_id=data["batch_id"])
    assert sorted(written.values_list("client_order_id", flat=True)) == ["N-1", "N-2"]
    assert Order.objects.filter(batch_id=data["batch_id"]).count() == 2  # none left behind
    debit = batch_debit(data["batch_id"])
    charged = sum(Decimal(o["price"]) for o in data["orders"] if o["status"] == "accepted")
    assert (debit.amount, debit.note) == (-charged, "2 drops")
    assert assert_ledger_consistent(alice) == before - charged


def test_a_taken_id_short_of_balance_is_a_duplicate_and_the_rest_decided_as_if_looked_up_first(
    open_for_business, per_km, api
):
    tenant = per_km("5.00")
    bulk(api, tenant, group(drop("TAKEN", **SHOP)))  # 4.00 left
    body = batch(
        group(drop("TAKEN", **FAR), drop("N-1"), drop("N-2"), drop("N-3", **SHOP), drop("N-4"))
    )
    quoted = api.post("/orders/quote", body, tenant.sandbox_key).json()["data"]["orders"]

    response = api.bulk(body, tenant.sandbox_key)

    # TAKEN (6.56) would not fit either: rule 7 comes first. Then 4.00 - 2.66 - 1.00 = 0.34.
    assert outcomes(response) == [
        "DUPLICATE_CLIENT_ORDER_ID",
        "accepted",
        "INSUFFICIENT_BALANCE",
        "accepted",
        "INSUFFICIENT_BALANCE",
    ]
    # The quote looks the ids up before deciding: the batch must answer the same.
    assert [o.get("failure_reason", "accepted") for o in quoted] == outcomes(response)
    assert [o.get("price") for o in quoted] == [
        o.get("price") for o in response.json()["data"]["orders"]
    ]
    data = response.json()["data"]
    assert batch_debit(data["batch_id"]).amount == Decimal("-3.66")
    assert assert_ledger_consistent(tenant) == Decimal("0.34")


# --- 4. every state move is recorded -------------------------------------------------------


def assert_entry_is_the_timeline(entry: dict, drop_id: str, statuses: list[str]) -> None:
    """The tracking entry lists the creation, then one event per stored move, and counts them."""
    created, *moves = timeline_of(drop_id)
    assert [e["status"] for e in entry["events"]] == statuses
    assert entry["events"][0] == {"status": created.status, "at": iso_z(created.at)}
    assert entry["events"][0]["at"] == entry["created_at"]
    assert entry["events"][1:] == [{"status": m.status, "at": iso_z(m.at)} for m in moves]
    assert entry["sequence"] == len(entry["events"]) == len(statuses)


def test_tracking_lists_the_creation_then_one_event_per_move(open_for_business, alice, api):
    key = alice.sandbox_key
    now = place(api, key, "NOW")["NOW"]
    later = place(api, key, "LATER", scheduled_at=THIS_AFTERNOON)["LATER"]
    assert not DeliveryEvent.objects.exists()  # created: no event rows
    open_for_business.shift(timedelta(minutes=3))
    entries(advance(api, key, "NOW", "LATER", to=S.PICKED_UP))
    open_for_business.shift(timedelta(minutes=3))
    entries(advance(api, key, "NOW"))

    tracked = entries(api.track(["NOW", "LATER"], key))

    assert DeliveryEvent.objects.filter(drop_id=now).count() == 3
    assert DeliveryEvent.objects.filter(drop_id=later).count() == 3
    assert_entry_is_the_timeline(
        tracked["NOW"], now, [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    )
    assert_entry_is_the_timeline(
        tracked["LATER"], later, [S.SCHEDULED, S.PENDING, S.ASSIGNED, S.PICKED_UP]
    )


def test_a_cancel_is_one_more_event_after_the_creation(open_for_business, alice, api):
    drop_id = place(api, alice.sandbox_key, "C-1", scheduled_at=THIS_AFTERNOON)["C-1"]
    open_for_business.shift(timedelta(minutes=1))

    entry = entries(cancel(api, alice.sandbox_key, "C-1"))["C-1"]
    tracked = entries(api.track(["C-1"], alice.sandbox_key))["C-1"]

    assert entry["status"] == tracked["status"] == S.CANCELLED
    assert_entry_is_the_timeline(tracked, drop_id, [S.SCHEDULED, S.CANCELLED])


# --- 5. a drop belongs to an order of its batch, business and environment --------------------


@pytest.fixture
def two_batches(open_for_business, alice, api) -> tuple[Drop, Drop]:
    """Alice's drops A-1 and B-1, each in a batch (and order) of its own."""
    place(api, alice.sandbox_key, "A-1")
    place(api, alice.sandbox_key, "B-1")
    return stored("A-1"), stored("B-1")


OWNER_CHECK = "a drop must belong to an order of its batch, business and environment"
KEYS_FIXED = "keeps its order, batch, business and environment"
ORDER_STAYS = "an order with drops cannot be deleted"


def test_a_drop_matching_its_order_goes_in(two_batches):
    a, _ = two_batches

    Drop.objects.create(**copy_of(a, client_order_id="A-2"))

    assert Drop.objects.filter(order_id=a.order_id).count() == 2


def test_a_drop_naming_an_order_of_another_batch_is_refused(two_batches):
    a, b = two_batches

    with refused(OWNER_CHECK), transaction.atomic():
        Drop.objects.create(**copy_of(a, client_order_id="X-1", order_id=b.order_id))


def test_a_drop_of_another_business_or_environment_than_its_order_is_refused(two_batches, bob, api):
    a, _ = two_batches
    place(api, bob.sandbox_key, "BOB-1")
    bobs = stored("BOB-1")

    for changes in (
        {"business_id": bob.business.pk},  # Alice's order and batch, Bob's drop
        {"order_id": bobs.order_id, "batch_id": bobs.batch_id},  # Bob's order, Alice's drop
        {"environment": "live"},  # a sandbox order, a live drop
    ):
        with refused(OWNER_CHECK), transaction.atomic():
            Drop.objects.create(**copy_of(a, client_order_id="X-1", **changes))


def test_a_drop_never_changes_its_batch_or_order(two_batches):
    a, b = two_batches
    Drop.objects.filter(pk=a.pk).update(batch_id=a.batch_id, status=S.ASSIGNED)  # unchanged

    for changes in (
        {"batch_id": b.batch_id},
        {"order_id": b.order_id},
        {"order_id": b.order_id, "batch_id": b.batch_id},  # consistent, still refused
    ):
        with refused(KEYS_FIXED), transaction.atomic():
            Drop.objects.filter(pk=a.pk).update(**changes)

    assert (stored("A-1").order_id, stored("A-1").batch_id) == (a.order_id, a.batch_id)


def test_an_order_never_changes_its_batch(two_batches):
    a, b = two_batches

    with refused(KEYS_FIXED), transaction.atomic():
        Order.objects.filter(pk=a.order_id).update(batch_id=b.batch_id)


def delete_order(order_id) -> None:
    """DELETE in SQL: the ORM would refuse first (PROTECT) without asking the database."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM orders_order WHERE id = %s", [order_id])


def test_an_order_with_drops_cannot_be_deleted(two_batches):
    a, _ = two_batches

    with refused(ORDER_STAYS), transaction.atomic():
        delete_order(a.order_id)

    assert Order.objects.filter(pk=a.order_id).exists()


def test_an_order_without_drops_can_be_deleted(two_batches):
    a, _ = two_batches
    empty = Order.objects.get(pk=a.order_id)
    empty.pk = uuid.uuid4()
    empty.save(force_insert=True)

    delete_order(empty.pk)

    assert not Order.objects.filter(pk=empty.pk).exists()
    assert Order.objects.filter(pk=a.order_id).exists()


def test_an_order_of_another_business_than_its_batch_is_refused(two_batches, bob):
    a, _ = two_batches
    order = Order.objects.get(pk=a.order_id)
    order.pk, order.business_id = uuid.uuid4(), bob.business.pk

    with refused("order_belongs_to_its_batch"), transaction.atomic():
        with connection.cursor() as cursor:  # it is checked at commit: check it now
            cursor.execute("SET CONSTRAINTS order_belongs_to_its_batch IMMEDIATE")
        order.save(force_insert=True)


def _orders_read_by(session, statement) -> int:
    """Rows of orders that `statement` read by sequential scan, in `session`'s transaction."""
    read = "SELECT seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = 'orders_order'"
    before = session.execute(read).fetchone()[0]
    statement()
    return session.execute(read).fetchone()[0] - before


@pytest.mark.django_db(transaction=True)
def test_the_owner_check_is_planned_for_the_drops_of_each_statement(alice):
    """A connection's first statement must not fix the check's plan for its later ones.

    The check once kept the plan of a connection's first insert: for one drop and a few
    orders, a nested loop reading every order for every drop; a later batch of thousands of
    drops then read the orders table thousands of times over (orders migration 0012).
    """
    business, now = alice.business, timezone.now()
    small, big = (
        Batch.objects.create(
            business=business, environment="sandbox", client_batch_id=name, fingerprint="f",
            created_at=now,
        )
        for name in ("SMALL", "BIG")
    )  # fmt: skip
    first = [order_row(small, now)]
    insert_rows(Order, OrderRow._fields, first)
    params = connection.settings_dict
    with psycopg.connect(
        host=params["HOST"], port=params["PORT"], user=params["USER"], dbname=params["NAME"]
    ) as session:  # a fresh session: nothing planned in it yet
        with connection.cursor() as cursor:  # statistics that say: a handful of orders
            cursor.execute("ANALYZE orders_order")
        copy_drops(session, first[0], 1)  # planned here, for one drop and one order
        many = [order_row(big, now) for _ in range(2000)]
        insert_rows(Order, OrderRow._fields, many)  # committed: the session sees them

        read = _orders_read_by(session, lambda: copy_drops(session, many[-1], 1000))

        session.rollback()
    # Planned for 1000 drops and 2001 orders: one pass over the orders at most, where the
    # first statement's plan read them once per drop (2,001,000 rows).
    assert read <= len(many) + 1, read


def order_row(batch, now) -> OrderRow:
    return OrderRow(
        id=str(uuid.uuid4()), batch_id=str(batch.pk), business_id=str(batch.business_id),
        environment=batch.environment, pickup_name="Shop", pickup_phone="+85512345678",
        pickup_lat=11.5564, pickup_long=104.9282, pickup_address=None, pickup_resolved=False,
        pickup_scheduled_at=None, created_at=now,
    )  # fmt: skip


def copy_drops(session, order: OrderRow, count: int) -> None:
    fields = ", ".join(DropRow._fields)
    with session.cursor().copy(f"COPY orders_drop ({fields}) FROM STDIN") as copy:
        for _ in range(count):
            copy.write_row(
                DropRow(
                    id=str(uuid.uuid4()), order_id=order.id, batch_id=order.batch_id,
                    business_id=order.business_id, environment=order.environment,
                    client_order_id=f"PLAN-{uuid.uuid4().hex}", external_waybill=None,
                    recipient_name="Recipient", recipient_phone="+85512345679", lat=11.5696,
                    long=104.921, address=None, resolved=False, status="PENDING",
                    price=Decimal("2.80"), currency="USD", created_at=timezone.now(),
                    updated_at=timezone.now(), dropoff_pin=None, sandbox_scenario=None,
                    scenario_next_at=None, short_code=new_short_codes(1)[0],
                )
            )  # fmt: skip


# --- 6. COPY stores any text byte for byte -------------------------------------------------

KHMER = "សុភា ភ្នំពេញ"
NASTY = [
    "tab\there",
    "line\nbreak",
    "carriage\rreturn\r\n",
    "back\\slash \\N \\t \\\\",
    "ends with a backslash\\",
    "quotes \" ' `",
    f"{KHMER}\t\\{KHMER}\n",
]


def test_copy_stores_tabs_newlines_backslashes_quotes_and_khmer_byte_for_byte(
    open_for_business, alice, api
):
    address = {f"part{i}": text for i, text in enumerate(NASTY)} | {"city": KHMER}
    drops = [
        drop(f"C-{i} {text}", waybill=text, name=f"{text} name", address=address)
        for i, text in enumerate(NASTY)
    ]
    drops.append(drop("C-null", waybill="\\N"))  # the text \N, not NULL
    pickup = {"name": f"Shop {NASTY[-1]}", "address": address}

    data = bulk(api, alice, group(*drops, **pickup)).json()["data"]

    assert data["counts"]["accepted"] == len(drops)
    tracked = entries(api.track([d["client_order_id"] for d in drops], alice.sandbox_key))
    for sent in drops:
        row = Drop.objects.select_related("order").get(client_order_id=sent["client_order_id"])
        entry = tracked[sent["client_order_id"]]
        dropoff = sent["dropoff"]
        expected = (sent["external_waybill"], dropoff["name"], dropoff.get("address"))
        assert (row.external_waybill, row.recipient_name, row.address) == expected
        assert (entry["external_waybill"], entry["dropoff"]["name"]) == expected[:2]
        assert entry["dropoff"]["address"] == expected[2]
        assert (row.order.pickup_name, row.order.pickup_address) == (pickup["name"], address)
        assert (entry["pickup"]["name"], entry["pickup"]["address"]) == (pickup["name"], address)


# --- 7. drops stream into the database in chunks ---------------------------------------------

SIEM_REAP = {"lat": 13.4125, "long": 103.8670}  # outside the demo area
# Two and a half chunks (orders.services.DROP_CHUNK_ROWS), over three pickup groups.
STREAMED = 2 * DROP_CHUNK_ROWS + DROP_CHUNK_ROWS // 2
REFUSED_AT = {0, 7, DROP_CHUNK_ROWS - 1, DROP_CHUNK_ROWS, 2 * DROP_CHUNK_ROWS + 3, STREAMED - 1}


@pytest.mark.parametrize(
    "taken_at",
    [None, 1, STREAMED - 2],
    ids=["no id taken", "a taken id in the first chunk", "a taken id in the last chunk"],
)
def test_a_batch_of_several_chunks_answers_and_stores_in_submission_order(
    open_for_business, per_km, api, taken_at
):
    tenant = per_km("100000.00")
    if taken_at is not None:
        bulk(api, tenant, group(drop(f"S-{taken_at}")))
    before = wallet_of(tenant).balance
    sent = [
        drop(f"S-{n}", **(SIEM_REAP if n in REFUSED_AT else FAR if n % 3 else SHOP))
        for n in range(STREAMED)
    ]
    cuts = (0, 40, DROP_CHUNK_ROWS + 60, STREAMED)  # groups straddle the chunks
    groups = [group(*sent[a:b], name=f"Shop {g}") for g, (a, b) in enumerate(pairwise(cuts))]

    with CaptureQueriesContext(connection) as queries:
        response = bulk(api, tenant, *groups)

    # A taken id stops the stream where the index meets it; the batch is written again.
    rewritten = any(q["sql"].startswith("ROLLBACK TO SAVEPOINT") for q in queries)
    assert rewritten == (taken_at is not None)
    expected = [
        "OUT_OF_SERVICE_AREA"
        if n in REFUSED_AT
        else "DUPLICATE_CLIENT_ORDER_ID"
        if n == taken_at
        else "accepted"
        for n in range(STREAMED)
    ]
    assert outcomes(response) == expected
    data = response.json()["data"]
    assert [o["client_order_id"] for o in data["orders"]] == [d["client_order_id"] for d in sent]
    accepted = [o for o in data["orders"] if o["status"] == "accepted"]
    assert (
        data["counts"]["accepted"]
        == len(accepted)
        == STREAMED - len(REFUSED_AT) - (taken_at is not None)
    )
    # Every accepted drop is stored once, as answered, under its own group's order.
    rows = {
        d.client_order_id: d
        for d in Drop.objects.filter(batch_id=data["batch_id"]).select_related("order")
    }
    assert sorted(rows) == sorted(o["client_order_id"] for o in accepted)
    for entry in accepted:
        row = rows[entry["client_order_id"]]
        n = int(entry["client_order_id"].removeprefix("S-"))
        group_of = next(g for g, cut in enumerate(cuts[1:]) if n < cut)
        assert (str(row.pk), str(row.order_id), money(row.price)) == (
            entry["drop_id"],
            entry["pass_order_id"],
            entry["price"],
        )
        assert row.order.pickup_name == f"Shop {group_of}"
    assert Order.objects.filter(batch_id=data["batch_id"]).count() == len(groups)
    charged = sum(Decimal(o["price"]) for o in accepted)
    debit = batch_debit(data["batch_id"])
    assert (debit.amount, debit.note) == (-charged, f"{len(accepted)} drops")
    assert assert_ledger_consistent(tenant) == before - charged
