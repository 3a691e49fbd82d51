"""Edits racing a move, a cancel and another edit of the same drop, with real threads on
PostgreSQL: the drop's row lock serialises them, so the second is judged on what the first
left, no update is lost and the money moves exactly once (docs/contract.md §17)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal

import pytest
from django.db import transaction

from billing.models import EntryKind, LedgerEntry
from orders.models import Drop, DropStatus
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.factories import HOME
from tests.fixtures import Api
from tests.helpers import in_own_connection, run_concurrently, wait_until
from tests.orders.conftest import sessions_waiting_on_a_lock
from tests.tracking.helpers import advance, cancel, error_code, history_of, place
from tests.tracking.test_edits import patch, updates_of
from tests.tracking.test_edits_money import AIRPORT, ROYAL_PALACE
from tracking.edit_inputs import parse_drop_change
from tracking.edits import edit_drop
from tracking.lifecycle import apply_moves, single_step
from tracking.services import cancel_orders

pytestmark = pytest.mark.django_db(transaction=True)

S = DropStatus
ROUNDS = 8


def run_together(*requests: Callable[[Api], object]) -> list:
    """Start every request at the same moment, each on its own client and connection."""
    return run_concurrently(len(requests), lambda api, i: requests[i](api))


def only_entry(response) -> dict:
    assert response.status_code == 200, response.content
    [entry] = response.json()["data"]["orders"]
    return entry


def adjustments_of(drop_id) -> list[Decimal]:
    return list(
        LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.ADJUSTMENT).values_list(
            "amount", flat=True
        )
    )


def test_an_edit_of_the_location_racing_the_courier_is_applied_before_or_refused_after(
    open_for_business, alice
):
    api, key = Api(), alice.sandbox_key
    start = wallet_of(alice).balance
    kept = Decimal("0.00")  # what the drops cost in the end
    outcomes = []
    for round_ in range(ROUNDS):
        client_order_id = f"MOVE-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]
        charged = Drop.objects.get(pk=drop_id).price

        edited, moved = run_together(
            lambda api, d=drop_id: patch(api, d, {"dropoff": AIRPORT}, key),
            lambda api, i=client_order_id: advance(api, key, i, to=S.ASSIGNED),
        )

        assert error_code(only_entry(moved)) is None
        drop = Drop.objects.get(pk=drop_id)
        assert drop.status == S.ASSIGNED
        assert history_of(drop_id) == [S.PENDING, S.ASSIGNED]
        if edited.status_code == 200:  # the edit held the row first: judged in PENDING
            outcomes.append("edit first")
            assert (drop.lat, drop.long) == (AIRPORT["lat"], AIRPORT["long"])
            assert adjustments_of(drop_id) == [charged - drop.price]
            assert len(updates_of(drop_id)) == 1
        else:  # the courier held it first: the edit finds the drop ASSIGNED
            outcomes.append("move first")
            assert edited.status_code == 409, edited.content
            assert edited.json()["error"]["code"] == "NOT_EDITABLE"
            assert (drop.lat, drop.long) == (HOME["lat"], HOME["long"])
            assert drop.price == charged and adjustments_of(drop_id) == []
            assert updates_of(drop_id) == []
        kept += drop.price
        assert assert_ledger_consistent(alice) == start - kept
    assert len(outcomes) == ROUNDS


def test_an_edit_racing_a_cancel_leaves_nothing_charged(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    start = wallet_of(alice).balance
    for round_ in range(ROUNDS):
        client_order_id = f"CANCEL-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]
        charged = Drop.objects.get(pk=drop_id).price

        edited, cancelled = run_together(
            lambda api, d=drop_id: patch(api, d, {"dropoff": AIRPORT}, key),
            lambda api, i=client_order_id: cancel(api, key, i),
        )

        assert error_code(only_entry(cancelled)) is None
        drop = Drop.objects.get(pk=drop_id)
        assert drop.status == S.CANCELLED
        [refund] = LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.REFUND)
        if edited.status_code == 200:  # edited, then cancelled: the new price comes back
            assert adjustments_of(drop_id) == [charged - drop.price]
            assert refund.amount == drop.price != charged
        else:  # cancelled first: a finished drop is not editable
            assert edited.status_code == 409, edited.content
            assert adjustments_of(drop_id) == []
            assert refund.amount == drop.price == charged
        # Either way the drop costs nothing in the end, to the cent.
        assert assert_ledger_consistent(alice) == start


def test_two_edits_of_one_drop_are_applied_one_after_the_other(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    start = wallet_of(alice).balance
    kept = Decimal("0.00")
    for round_ in range(ROUNDS):
        client_order_id = f"TWICE-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]
        charged = Drop.objects.get(pk=drop_id).price

        answers = run_together(
            lambda api, d=drop_id: patch(api, d, {"dropoff": AIRPORT, "notes": "A"}, key),
            lambda api, d=drop_id: patch(api, d, {"dropoff": ROYAL_PALACE, "notes": "B"}, key),
        )

        assert [a.status_code for a in answers] == [200, 200]
        drop = Drop.objects.get(pk=drop_id)
        events = updates_of(drop_id)
        assert len(events) == 2
        # The last edit to commit is the drop's state, whole: its place, its notes, its price.
        last = events[-1]
        assert (drop.lat, drop.notes, str(drop.price)) == (
            last["dropoff"]["lat"],
            last["notes"],
            last["price"],
        )
        assert (drop.notes, drop.lat) in {("A", AIRPORT["lat"]), ("B", ROYAL_PALACE["lat"])}
        # Each edit settled against what the other left: the adjustments add up to one move.
        assert sum(adjustments_of(drop_id)) == charged - drop.price
        kept += drop.price
        assert assert_ledger_consistent(alice) == start - kept


def test_the_same_edit_sent_twice_at_once_changes_the_drop_once(open_for_business, alice):
    api, key = Api(), alice.sandbox_key
    body = {"dropoff": {"phone": "+85512345670"}, "notes": "Gate 42"}
    for round_ in range(ROUNDS):
        client_order_id = f"SAME-{round_}"
        drop_id = place(api, key, client_order_id)[client_order_id]

        answers = run_together(*[lambda api, d=drop_id: patch(api, d, body, key)] * 2)

        assert [a.status_code for a in answers] == [200, 200]
        # No account lock for these fields: the row lock alone makes the second wait for the
        # first, find nothing to change, and tell nothing.
        [event] = updates_of(drop_id)
        assert event["changed"] == ["dropoff.phone", "notes"]


# --- Held on purpose: the edit must wait for the drop's row, then see what the holder left ---


@contextmanager
def holding(change: Callable[[], object]) -> Iterator[None]:
    """Run `change` in a transaction on a thread of its own and keep it open (its locks held)
    until the block ends; then commit."""
    changed, release = threading.Event(), threading.Event()

    def hold():
        with transaction.atomic():
            change()
            changed.set()
            release.wait(30)

    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(in_own_connection, hold)
        assert changed.wait(30)
        try:
            yield
        finally:
            release.set()
            held.result(timeout=30)


def patch_waiting(drop_id, body: dict, key: str):
    """PATCH on a thread of its own; returns once it waits on a lock, with its future."""
    pool = ThreadPoolExecutor(1)
    future = pool.submit(in_own_connection, lambda: patch(Api(), drop_id, body, key))
    pool.shutdown(wait=False)
    wait_until(lambda: sessions_waiting_on_a_lock() >= 1)
    return future


def test_an_edit_waits_for_the_courier_holding_the_drop_and_is_refused_after(
    open_for_business, alice
):
    key = alice.sandbox_key
    drop_id = place(Api(), key, "HELD-1")["HELD-1"]
    charged = Drop.objects.get(pk=drop_id).price

    with holding(
        lambda: apply_moves(drop_ids=[drop_id], steps=single_step(S.ASSIGNED), actor="courier")
    ):
        edit = patch_waiting(drop_id, {"dropoff": AIRPORT}, key)

    response = edit.result(timeout=30)
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "NOT_EDITABLE"
    drop = Drop.objects.get(pk=drop_id)
    assert (drop.status, drop.lat, drop.price) == (S.ASSIGNED, HOME["lat"], charged)
    assert adjustments_of(drop_id) == [] and updates_of(drop_id) == []


def test_an_edit_waits_for_a_cancel_and_charges_nothing(open_for_business, alice):
    key = alice.sandbox_key
    start = wallet_of(alice).balance
    drop_id = place(Api(), key, "HELD-1")["HELD-1"]

    with holding(
        lambda: cancel_orders(
            business=alice.business, environment="sandbox", identifiers=["HELD-1"], actor="t"
        )
    ):
        edit = patch_waiting(drop_id, {"dropoff": AIRPORT}, key)

    assert edit.result(timeout=30).status_code == 409
    assert Drop.objects.get(pk=drop_id).status == S.CANCELLED
    assert adjustments_of(drop_id) == []
    assert assert_ledger_consistent(alice) == start


def test_an_edit_waits_for_another_edit_and_builds_on_it(open_for_business, alice):
    key = alice.sandbox_key
    drop_id = place(Api(), key, "HELD-1")["HELD-1"]
    first = parse_drop_change({"notes": "Gate 42", "dropoff": {"phone": "+85512345670"}})

    with holding(
        lambda: edit_drop(
            business=alice.business, environment="sandbox", drop_id=drop_id, change=first
        )
    ):
        same = patch_waiting(drop_id, {"notes": "Gate 42", "dropoff": {"name": "Dara"}}, key)

    assert same.result(timeout=30).status_code == 200
    drop = Drop.objects.get(pk=drop_id)
    # Nothing lost: the first edit's phone and notes, the second's name.
    assert (drop.recipient_phone, drop.notes, drop.recipient_name) == (
        "+85512345670",
        "Gate 42",
        "Dara",
    )
    # The second found the notes already set: only the name was its change.
    assert [e["changed"] for e in updates_of(drop_id)] == [
        ["dropoff.phone", "notes"],
        ["dropoff.name"],
    ]
