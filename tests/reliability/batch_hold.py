"""Crashing a batch mid-transaction, for the crash proofs of this package.

A batch is sent from a `Background` thread and held inside its transaction until the test
has done its damage; the helpers around that make the batch (`large_batch`), count what is
stored (`stored_rows`), watch the held backend, and check the retry afterwards.

Holding is deterministic, never a guess at timing: a temporary trigger on one of the
batch's writes takes a transaction-level advisory lock that the test already holds, so
the batch's backend stops *inside* its transaction, after the writes before it, and
waits in plain sight in pg_stat_activity (wait_event 'advisory') for as long as the
test wants.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import time as dt_time
from decimal import Decimal
from typing import TypeVar

from django.db import connection
from django.db.models import Sum

from billing.models import EntryKind, LedgerEntry, Wallet
from geo.demo import seed_region
from geo.models import OpeningHours
from orders.models import Batch, DeliveryEvent, Drop, IdempotencyRecord, Order
from tests.factories import batch, drop, group
from tests.reliability.gunicorn_server import WAIT_SECONDS, Reply, wait_for

# The advisory lock the hold trigger waits on. Nothing in the app takes advisory locks.
HOLD_LOCK = 0x7E1AB1E

T = TypeVar("T")


def stored_rows() -> dict[str, int]:
    """Row counts of everything a batch writes."""
    models = (Batch, Order, Drop, DeliveryEvent, IdempotencyRecord, LedgerEntry)
    return {model.__name__: model.objects.count() for model in models}


def open_all_day() -> None:
    """The demo region, open around the clock: gunicorn runs on the real clock, not the
    test's time machine, so the batch must be inside opening hours at any hour."""
    area = seed_region()
    widened = OpeningHours.objects.filter(area=area).update(
        opens=dt_time(0), closes=dt_time(23, 59, 59, 999999)
    )
    assert widened == 7


def large_batch(prefix: str, groups: int = 20, drops_per_group: int = 100) -> dict:
    """groups × drops_per_group coordinate drops inside the demo area."""
    return batch(
        *[
            group(*[drop(f"{prefix}-{g}-{i}") for i in range(drops_per_group)])
            for g in range(groups)
        ],
        client_batch_id=f"{prefix}-batch",
    )


class Background:
    """One call in a daemon thread: a stuck call can fail the test but never hang it."""

    def __init__(self, call: Callable[..., T], *args) -> None:
        self._done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(call, args), daemon=True).start()

    def _run(self, call, args) -> None:
        try:
            self._result = call(*args)
        except BaseException as exc:  # handed to the test by result()
            self._error = exc
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float = WAIT_SECONDS) -> T:
        if not self._done.wait(timeout):
            raise AssertionError(f"the call did not return within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._result


# --- holding a batch inside its transaction ----------------------------------------------


@dataclass(frozen=True, slots=True)
class HoldPoint:
    """Where in the pipeline a batch is held, and what it has written by then."""

    name: str
    table: str
    event: str
    written: frozenset[str]


# The tables a batch has written to by the time its drops are in.
_UP_TO_THE_DROPS = {"orders_idempotencyrecord", "orders_batch", "orders_order", "orders_drop"}
HOLD_POINTS = {
    hold.name: hold
    for hold in (
        HoldPoint("after writing the drops", "orders_drop", "INSERT", frozenset(_UP_TO_THE_DROPS)),
        HoldPoint(
            "after every write, before commit",
            "orders_batch",
            "UPDATE",
            frozenset(
                # No event row: a drop's creation is its own row.
                _UP_TO_THE_DROPS | {"billing_ledgerentry", "billing_wallet"}
            ),
        ),
    )
}


@dataclass(frozen=True, slots=True)
class HeldBackend:
    pid: int
    query: str
    has_written: bool  # it has a transaction id: it wrote rows that are not committed
    locked_for_writing: frozenset[str]  # tables it holds RowExclusiveLock on


class BatchHold:
    """Install with `hold(point)`; the next batch stops at `point` until `release()`."""

    def __init__(self) -> None:
        self.point: HoldPoint | None = None

    def hold(self, point: HoldPoint) -> None:
        self.remove()
        self.point = point
        with connection.cursor() as cursor:
            # Session-level: ours until released, whatever the batch's backend does.
            cursor.execute("SELECT pg_advisory_lock(%s)", [HOLD_LOCK])
            cursor.execute(
                "CREATE FUNCTION reliability_hold_batch() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$ BEGIN PERFORM pg_advisory_xact_lock({HOLD_LOCK}); RETURN NULL; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER reliability_hold_batch AFTER {point.event} ON {point.table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION reliability_hold_batch()"
            )

    def held_backend(self, request: Background) -> HeldBackend:
        """Wait until `request`'s backend is held by the trigger; what it does and has done."""

        def waiting() -> list[tuple]:
            if request.done:
                raise AssertionError(f"the request was not held; it ended with {request.result()}")
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pid, query, backend_xid IS NOT NULL FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                )
                return cursor.fetchall()

        try:
            [(pid, query, has_written)] = wait_for("a batch held in its transaction", waiting)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the database meanwhile:\n{activity()}") from None
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE l.pid = %s AND l.mode = 'RowExclusiveLock' AND l.granted",
                [pid],
            )
            tables = frozenset(name for (name,) in cursor.fetchall())
        return HeldBackend(pid, query, has_written, tables)

    def release(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")

    def remove(self) -> None:
        with connection.cursor() as cursor:
            # Released first: a batch still held finishes (or dies with its client), so the
            # DROP below gets its table lock; the timeout bounds the wait all the same.
            cursor.execute("SELECT pg_advisory_unlock_all()")
            cursor.execute("SET lock_timeout = '30s'")
            try:
                if self.point is not None:
                    cursor.execute(
                        f"DROP TRIGGER IF EXISTS reliability_hold_batch ON {self.point.table}"
                    )
                cursor.execute("DROP FUNCTION IF EXISTS reliability_hold_batch()")
            finally:
                cursor.execute("RESET lock_timeout")
        self.point = None


def activity() -> str:
    """What every other backend of the test database is doing, for failure messages."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, wait_event_type, wait_event, left(query, 120) "
            "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return "\n".join(repr(row) for row in cursor.fetchall()) or "(no other backends)"


def backend_alive(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0] == 1


def backend_in_transaction(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND xact_start IS NOT NULL",
            [pid],
        )
        return cursor.fetchone()[0] == 1


# --- after the crash ------------------------------------------------------------------------


def assert_processed_fresh_and_charged_once(
    reply: Reply, *, wallet: Wallet, balance_before: Decimal, idempotency_key: str, drops: int
) -> None:
    """The retry was a first run (no replay), accepted everything, and paid for it once."""
    assert reply.status == 200, reply.body[:1000]
    assert "idempotent-replayed" not in reply.headers
    data = reply.json()["data"]
    assert data["counts"] == {"total": drops, "accepted": drops, "rejected": 0}
    charged = sum(Decimal(entry["price"]) for entry in data["orders"])
    wallet.refresh_from_db()
    assert wallet.balance == balance_before - charged
    # One debit for the batch, the drops' prices on the drops.
    debit = LedgerEntry.objects.get(wallet=wallet, kind=EntryKind.ORDER_DEBIT)
    assert str(debit.batch_id) == data["batch_id"] and debit.drop_id is None
    assert debit.amount == -charged
    assert Batch.objects.count() == 1
    stored = Drop.objects.filter(batch_id=data["batch_id"])
    assert stored.count() == drops
    assert stored.aggregate(total=Sum("price"))["total"] == charged
    # A drop's creation is its own row: no event row until it moves.
    assert DeliveryEvent.objects.filter(drop__batch_id=data["batch_id"]).count() == 0
    record = IdempotencyRecord.objects.get(key=idempotency_key)
    assert str(record.batch_id) == data["batch_id"]
