"""One batch is one transaction (docs/contract.md §4 'Atomicity'): a crash mid-batch leaves
nothing."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test import Client

from billing.models import LedgerEntry, Wallet
from billing.services import Till
from events.models import Event
from orders.models import Batch, DeliveryEvent, Drop, IdempotencyRecord, Order
from tests.billing.helpers import batch_debit
from tests.factories import batch, drop, group

pytestmark = pytest.mark.django_db(transaction=True)

INJECTED = "injected failure"


def stored_rows() -> dict[str, int]:
    models = (Batch, Order, Drop, DeliveryEvent, IdempotencyRecord, LedgerEntry)
    return {model.__name__: model.objects.count() for model in models}


@pytest.fixture
def api(api):
    # A 500 is what we test: get the response instead of the re-raised exception.
    api.client = Client(raise_request_exception=False)
    return api


@pytest.fixture
def crash(db, monkeypatch):
    """Install one failure that reports how many drops were written; `crash.undo()` removes it.

    Python steps are monkeypatched. Writes are failed by a PostgreSQL trigger, whatever
    statement the pipeline uses for them, and only once drops exist in the transaction.
    """

    class Crash:
        def __init__(self) -> None:
            self.tables: list[str] = []

        def in_python(self, target, name) -> None:
            def fail(*args, **kwargs):
                raise RuntimeError(f"{INJECTED} after {Drop.objects.count()} drops were written")

            monkeypatch.setattr(target, name, fail)

        def on_write(self, model) -> None:
            table = connection.ops.quote_name(model._meta.db_table)
            with connection.cursor() as cursor:
                cursor.execute(
                    "CREATE OR REPLACE FUNCTION test_injected_failure() RETURNS trigger AS $$ "
                    f"DECLARE n int; BEGIN SELECT count(*) INTO n FROM {Drop._meta.db_table}; "
                    f"IF n > 0 THEN RAISE EXCEPTION '{INJECTED} after % drops were written', n; "
                    "END IF; RETURN NULL; END $$ LANGUAGE plpgsql"
                )
                cursor.execute(
                    f"CREATE TRIGGER test_injected_failure BEFORE INSERT OR UPDATE ON {table} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION test_injected_failure()"
                )
            self.tables.append(table)

        def undo(self) -> None:
            monkeypatch.undo()
            with connection.cursor() as cursor:
                for table in self.tables:
                    cursor.execute(f"DROP TRIGGER IF EXISTS test_injected_failure ON {table}")
                cursor.execute("DROP FUNCTION IF EXISTS test_injected_failure()")
            self.tables.clear()

    injected = Crash()
    yield injected
    injected.undo()


FAILING_STEPS = {
    "settling the wallet": lambda crash: crash.in_python(Till, "settle"),
    # The batch's one ORDER_DEBIT, written by COPY after its drops.
    "writing the ledger debit": lambda crash: crash.on_write(LedgerEntry),
    "storing the batch result": lambda crash: crash.on_write(Batch),
    # The idempotency record names its batch when it goes in, first: the last write after
    # the drops, besides the batch result, is the batch.created event.
    "recording the batch.created event": lambda crash: crash.on_write(Event),
}


@pytest.mark.parametrize("failing_step", list(FAILING_STEPS))
def test_a_crash_mid_batch_leaves_nothing_and_the_retry_is_processed_fresh(
    open_for_business, alice, api, crash, failing_step, caplog
):
    FAILING_STEPS[failing_step](crash)
    wallet = Wallet.objects.get(business=alice.business, environment="sandbox")
    before = stored_rows()
    body = batch(group(drop("A-1"), drop("A-2")))
    key = str(uuid.uuid4())

    crashed = api.bulk(body, alice.sandbox_key, key)

    assert crashed.status_code == 500, crashed.content
    # Logged for the operators, and it came after the drops were written.
    assert f"{INJECTED} after 2 drops were written" in caplog.text
    assert crashed["Content-Type"] == "application/json"
    envelope = crashed.json()
    assert envelope["statusCode"] == 500
    assert envelope["success"] is False
    assert envelope["error"]["code"] == "INTERNAL_ERROR"
    assert envelope["error"]["request_id"] == crashed["X-Request-Id"]
    for leak in (b"Traceback", b"RuntimeError", b"psycopg", b"injected", b'File "', b"orders_"):
        assert leak not in crashed.content
    assert stored_rows() == before
    assert not Batch.objects.exists() and not Drop.objects.exists()
    assert not IdempotencyRecord.objects.exists()
    assert Wallet.objects.get(pk=wallet.pk).balance == wallet.balance

    crash.undo()
    retried = api.bulk(body, alice.sandbox_key, key)

    assert retried.status_code == 200, retried.content
    assert "Idempotent-Replayed" not in retried.headers
    assert retried.json()["data"]["counts"] == {"total": 2, "accepted": 2, "rejected": 0}
    assert Drop.objects.count() == 2
    assert DeliveryEvent.objects.count() == 0  # a drop's creation is no event row
    assert IdempotencyRecord.objects.get().batch == Batch.objects.get()
    assert batch_debit(Batch.objects.get().pk).note == "2 drops"
    assert Wallet.objects.get(pk=wallet.pk).balance < wallet.balance
