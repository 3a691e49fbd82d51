"""Movers racing on one drop, with real threads on PostgreSQL: never two winners, money exact.

Every request runs on its own thread, client and database connection, all released at
once by a Barrier; the drop's row lock (apply_moves) is what must serialise them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from billing.models import EntryKind, LedgerEntry, Wallet
from couriers.models import Driver
from orders.models import Drop, DropStatus
from tests.fixtures import Api
from tests.helpers import run_concurrently
from tests.tracking.helpers import (
    advance,
    assert_legal_history,
    cancel,
    error_code,
    history_of,
    ledger_sum,
    place,
)

pytestmark = pytest.mark.django_db(transaction=True)

S = DropStatus
ROUNDS = 10


def run_together(*requests: Callable[[Api], object]) -> list:
    """Start every request at the same moment, each on its own client and connection."""
    return run_concurrently(len(requests), lambda api, i: requests[i](api))


def only_entry(response) -> dict:
    assert response.status_code == 200, response.content
    [entry] = response.json()["data"]["orders"]
    return entry


def sandbox_wallet(tenant) -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment="sandbox")


def test_advance_and_cancel_racing_on_one_drop_have_exactly_one_winner(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    start = sandbox_wallet(alice).balance
    kept = []  # prices of the drops the driver won
    winners = []
    for round_ in range(ROUNDS):
        client_order_id = f"RACE-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]
        only_entry(advance(api, key, client_order_id, to=S.ASSIGNED))

        moved, cancelled = run_together(
            lambda api, i=client_order_id: advance(api, key, i, to=S.PICKED_UP),
            lambda api, i=client_order_id: cancel(api, key, i),
        )

        moved, cancelled = only_entry(moved), only_entry(cancelled)
        drop = Drop.objects.get(pk=drop_id)
        refunds = LedgerEntry.objects.filter(drop=drop, kind=EntryKind.REFUND)
        if drop.status == S.CANCELLED:
            winners.append("cancel")
            assert "error" not in cancelled
            assert error_code(moved) == "ILLEGAL_TRANSITION"
            assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.CANCELLED]
            assert [r.amount for r in refunds] == [drop.price]
        else:
            winners.append("advance")
            assert drop.status == S.PICKED_UP
            assert "error" not in moved
            assert error_code(cancelled) == "NOT_CANCELLABLE"
            assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PICKED_UP]
            assert not refunds.exists()
            kept.append(drop.price)
        wallet = sandbox_wallet(alice)
        assert wallet.balance == start - sum(kept) == ledger_sum(wallet)

    assert len(winners) == ROUNDS
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == winners.count("cancel")


def test_two_concurrent_one_step_advances_leave_a_legal_history(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    assert not Driver.objects.filter(is_sandbox_test_driver=True).exists()
    for round_ in range(ROUNDS):
        client_order_id = f"STEP-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]

        answers = run_together(
            lambda api, i=client_order_id: advance(api, key, i),
            lambda api, i=client_order_id: advance(api, key, i),
        )

        answers = [only_entry(a) for a in answers]
        # Each call moves one step from what it finds once it holds the row lock, so both
        # succeed one after the other: PENDING → ASSIGNED → PICKED_UP, never a step skipped
        # or the same step written twice.
        assert [error_code(a) for a in answers] == [None, None]
        assert sorted(a["status"] for a in answers) == [S.ASSIGNED, S.PICKED_UP]
        assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PICKED_UP]
        assert_legal_history(drop_id)
        assert Drop.objects.get(pk=drop_id).order.driver.is_sandbox_test_driver

    # The first round raced to create the built-in driver too: there must be one.
    assert Driver.objects.filter(is_sandbox_test_driver=True).count() == 1


def test_two_concurrent_cancels_refund_once(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    start = sandbox_wallet(alice).balance
    for round_ in range(ROUNDS // 2):
        client_order_id = f"TWICE-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]

        answers = run_together(
            lambda api, i=client_order_id: cancel(api, key, i),
            lambda api, i=client_order_id: cancel(api, key, i),
        )

        # The second one finds it cancelled: answered as done, as a retry expects.
        answers = [only_entry(a) for a in answers]
        assert [(error_code(a), a["status"]) for a in answers] == [(None, S.CANCELLED)] * 2
        assert history_of(drop_id) == [S.PENDING, S.CANCELLED]
        assert LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.REFUND).count() == 1
        wallet = sandbox_wallet(alice)
        assert wallet.balance == start == ledger_sum(wallet)
