"""Concurrent batches on PostgreSQL with real threads: claimed once, one drop per id, exact money.

Each test holds the first request inside its transaction, just after it took the account
lock, until every other request is seen waiting on a database lock; so the requests
really overlap, whatever the scheduler does, and a missing lock shows up as a failure.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Sum

from billing.models import EntryKind, LedgerEntry, Wallet
from orders.models import ACTIVE_STATUSES, Batch, Drop, IdempotencyRecord
from tests.billing.helpers import assert_debited_per_batch, batch_debit
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tests.helpers import in_own_connection, wait_until
from tests.orders.conftest import (
    WAIT_SECONDS,
    sessions_waiting_on_a_lock,
)

pytestmark = pytest.mark.django_db(transaction=True)


def run_together(n: int, request, release: threading.Event) -> list:
    """Start n requests at once (a Barrier), each on its own client and connection.

    The first is held (see first_batch_held) until the other n - 1 wait on a lock.
    """
    barrier = threading.Barrier(n)

    def one(i: int):
        try:
            api = Api()
            barrier.wait(WAIT_SECONDS)
            return request(api, i)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(one, i) for i in range(n)]
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            waiting = sessions_waiting_on_a_lock()
            # Polling an observable state with a deadline, not sleeping in place of a lock.
            while waiting < n - 1 and time.monotonic() < deadline:
                time.sleep(0.01)
                waiting = sessions_waiting_on_a_lock()
        finally:
            release.set()
        responses = [f.result(timeout=WAIT_SECONDS) for f in futures]
    assert waiting >= n - 1, f"only {waiting} of {n - 1} concurrent requests waited on a lock"
    return responses


def replay_headers(responses) -> Counter:
    return Counter(r.headers.get("Idempotent-Replayed", "processed") for r in responses)


def assert_wallet_consistent(tenant, environment: str = "sandbox") -> Decimal:
    wallet = Wallet.objects.get(business=tenant.business, environment=environment)
    assert wallet.balance >= 0
    assert wallet.balance == wallet.entries.aggregate(total=Sum("amount"))["total"]
    return wallet.balance


def test_concurrent_identical_requests_process_the_batch_once(
    open_for_business, alice, first_batch_held
):
    body = batch(group(drop("T-1"), drop("T-2")))
    key = str(uuid.uuid4())

    responses = run_together(
        12, lambda api, i: api.bulk(body, alice.sandbox_key, key), first_batch_held
    )

    assert [r.status_code for r in responses] == [200] * 12, responses[0].content
    assert len({r.content for r in responses}) == 1
    assert replay_headers(responses) == {"processed": 1, "true": 11}
    assert Batch.objects.count() == 1
    assert IdempotencyRecord.objects.get().batch == Batch.objects.get()
    assert Drop.objects.count() == 2
    # The batch's two drops are charged once, by one debit for the batch.
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).count() == 1
    assert batch_debit(Batch.objects.get().pk).note == "2 drops"
    assert_wallet_consistent(alice)


def test_concurrent_keys_with_one_client_batch_id_make_one_batch(
    open_for_business, alice, first_batch_held
):
    body = batch(group(drop("U-1")), client_batch_id="B-shared")

    responses = run_together(12, lambda api, i: api.bulk(body, alice.sandbox_key), first_batch_held)

    assert [r.status_code for r in responses] == [200] * 12, responses[0].content
    assert len({r.content for r in responses}) == 1
    assert replay_headers(responses) == {"processed": 1, "true": 11}
    only = Batch.objects.get()
    assert only.client_batch_id == "B-shared"
    assert IdempotencyRecord.objects.count() == 12
    assert set(IdempotencyRecord.objects.values_list("batch", flat=True)) == {only.pk}
    assert Drop.objects.count() == 1
    assert_wallet_consistent(alice)


@pytest.mark.parametrize("racers", [2, 8])
def test_concurrent_batches_racing_for_one_client_order_id_accept_it_once(
    open_for_business, alice, first_batch_held, racers
):
    responses = run_together(
        racers,
        lambda api, i: api.bulk(batch(group(drop("RACE-1"))), alice.sandbox_key),
        first_batch_held,
    )

    assert [r.status_code for r in responses] == [200] * racers, responses[0].content
    outcomes = Counter(
        r.json()["data"]["orders"][0].get("failure_reason", "accepted") for r in responses
    )
    assert outcomes == {"accepted": 1, "DUPLICATE_CLIENT_ORDER_ID": racers - 1}
    assert Drop.objects.filter(client_order_id="RACE-1", status__in=ACTIVE_STATUSES).count() == 1
    assert Batch.objects.count() == racers
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).count() == 1
    assert_wallet_consistent(alice)


def test_concurrent_batches_of_one_account_all_succeed_and_the_money_adds_up(
    open_for_business, alice, first_batch_held
):
    start = Wallet.objects.get(business=alice.business, environment="sandbox").balance
    assert start == Decimal("100.00")

    responses = run_together(
        10,
        lambda api, i: api.bulk(
            batch(group(*[drop(f"W-{i}-{j}") for j in range(3)])), alice.sandbox_key
        ),
        first_batch_held,
    )

    assert [r.status_code for r in responses] == [200] * 10, responses[0].content
    results = [entry for r in responses for entry in r.json()["data"]["orders"]]
    assert {entry["status"] for entry in results} == {"accepted"}
    charged = sum(Decimal(entry["price"]) for entry in results)
    assert Drop.objects.count() == 30
    assert Drop.objects.aggregate(total=Sum("price"))["total"] == charged
    assert assert_wallet_consistent(alice) == start - charged
    # One debit per batch, each minus its own three drops' prices.
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).count() == 10
    assert len(assert_debited_per_batch(alice)) == 10


def test_wallet_never_overdraws_under_concurrent_batches(
    open_for_business, make_tenant, first_batch_held
):
    tenant = make_tenant(sandbox_balance="10.00")  # three drops at 2.83 each

    responses = run_together(
        10,
        lambda api, i: api.bulk(batch(group(drop(f"O-{i}"))), tenant.sandbox_key),
        first_batch_held,
    )

    results = [r.json()["data"]["orders"][0] for r in responses]
    accepted = [entry for entry in results if entry["status"] == "accepted"]
    assert {entry["price"] for entry in accepted} == {"2.83"}
    assert len(accepted) == 3
    assert Counter(e.get("failure_reason") for e in results)["INSUFFICIENT_BALANCE"] == 7
    assert assert_wallet_consistent(tenant) == Decimal("1.51")
    assert Drop.objects.count() == 3


def test_a_batch_waiting_on_an_id_that_ends_failed_is_processed_fresh(
    open_for_business, alice, first_batch_held
):
    # The first batch claims "B" and is held; the second waits on the claim. The first ends
    # FAILED, which reserves nothing (docs/contract.md §4), so the second then goes through.
    failing = batch(group(drop("F-1", lat=13.4125, long=103.8670)), client_batch_id="B")
    good = batch(group(drop("G-1")), client_batch_id="B")
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(in_own_connection, lambda: Api().bulk(failing, alice.sandbox_key))
        assert first_batch_held.holding.wait(WAIT_SECONDS)  # the first holds "B"
        second = pool.submit(in_own_connection, lambda: Api().bulk(good, alice.sandbox_key))
        wait_until(lambda: sessions_waiting_on_a_lock() >= 1)
        first_batch_held.set()
        first, second = first.result(WAIT_SECONDS), second.result(WAIT_SECONDS)

    assert first.json()["data"]["status"] == "FAILED"
    assert second.status_code == 200, second.content
    assert second.json()["data"]["status"] == "COMPLETED"
    assert Drop.objects.get().client_order_id == "G-1"
