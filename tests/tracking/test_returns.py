"""Failed deliveries that come back (docs/contract.md §19): FAILED → RETURNING → RETURNED in the
one state machine, each move an event, RETURNING active, RETURNED with its receipt; a drop
to be disposed of ends at FAILED."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.models import EntryKind, LedgerEntry
from events.models import Event, EventType
from orders.models import Drop, DropStatus, UndeliverableAction
from tests.factories import batch, drop, group
from tests.tracking.helpers import (
    advance,
    assert_legal_history,
    cancel,
    drop_in,
    entries,
    error_code,
    history_of,
    place,
)
from tracking.lifecycle import Outcome, apply_moves, single_step
from tracking.services import move_drops_as_operator

S = DropStatus
RETURN_WALK = [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED, S.RETURNING, S.RETURNED]


@pytest.fixture
def sandbox(open_for_business, alice, api):
    return alice.sandbox_key


def dispose_of(drop_id) -> None:
    Drop.objects.filter(pk=drop_id).update(undeliverable_action=UndeliverableAction.DISPOSE)


def test_advance_to_returned_walks_through_failed_and_returning(sandbox, api):
    ids = place(api, sandbox, "R-1")

    entry = entries(advance(api, sandbox, "R-1", to=S.RETURNED))["R-1"]

    assert "error" not in entry
    assert [e["status"] for e in entry["events"]] == RETURN_WALK
    assert history_of(ids["R-1"]) == RETURN_WALK
    assert_legal_history(ids["R-1"])
    returned_at = entry["events"][-1]["at"]
    assert entry["return"] == {"at": returned_at, "received_by": "Sandbox pickup desk"}
    # Why it came back still shows, with when it failed.
    assert entry["failure"] == {"reason": "RECIPIENT_UNAVAILABLE", "at": entry["events"][3]["at"]}
    assert entry["eta"] is None
    row = Drop.objects.get(pk=ids["R-1"])
    assert row.returned_at.isoformat().replace("+00:00", "Z").startswith(returned_at[:19])
    assert row.return_received_by == "Sandbox pickup desk"
    assert entries(api.track(["R-1"], sandbox))["R-1"] == entry


def test_every_return_move_is_a_status_changed_event(sandbox, alice, api):
    place(api, sandbox, "R-1")
    advance(api, sandbox, "R-1", to=S.FAILED)
    Event.objects.all().delete()

    advance(api, sandbox, "R-1")  # one step: RETURNING
    advance(api, sandbox, "R-1")  # one more: RETURNED

    changes = Event.objects.filter(
        business=alice.business, type=EventType.ORDER_STATUS_CHANGED
    ).order_by("seq")
    assert [(e.data["previous_status"], e.data["status"]) for e in changes] == [
        (S.FAILED, S.RETURNING),
        (S.RETURNING, S.RETURNED),
    ]
    assert changes[0].data["return"] is None
    assert changes[1].data["return"]["received_by"] == "Sandbox pickup desk"


def test_a_drop_to_dispose_of_ends_at_failed(sandbox, api):
    ids = place(api, sandbox, "D-1")
    dispose_of(ids["D-1"])

    refused = entries(advance(api, sandbox, "D-1", to=S.RETURNED))["D-1"]

    assert error_code(refused) == "ILLEGAL_TRANSITION"
    assert 'undeliverable_action is "return"' in refused["error"]["message"]
    assert refused["status"] == S.PENDING  # the whole walk is refused, not half made
    entry = entries(advance(api, sandbox, "D-1", to=S.FAILED))["D-1"]
    assert entry["status"] == S.FAILED
    again = entries(advance(api, sandbox, "D-1"))["D-1"]
    assert error_code(again) == "ILLEGAL_TRANSITION"
    assert history_of(ids["D-1"]) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED]
    result = move_drops_as_operator(drop_ids=[ids["D-1"]], to=S.RETURNING, actor="operator")
    assert result.moved == [] and result.refused == {Drop.objects.get().pk: S.FAILED}


def test_a_returning_drop_cannot_be_cancelled(sandbox, api):
    ids = place(api, sandbox, "R-1")
    advance(api, sandbox, "R-1", to=S.RETURNING)

    entry = entries(cancel(api, sandbox, "R-1"))["R-1"]

    assert error_code(entry) == "NOT_CANCELLABLE"
    assert Drop.objects.get(pk=ids["R-1"]).status == S.RETURNING
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()


def test_a_returning_drop_holds_its_client_order_id_until_it_is_returned(sandbox, api):
    place(api, sandbox, "R-1")
    advance(api, sandbox, "R-1", to=S.RETURNING)

    again = api.bulk(batch(group(drop("R-1"))), sandbox).json()["data"]["orders"][0]
    assert again["failure_reason"] == "DUPLICATE_CLIENT_ORDER_ID"

    advance(api, sandbox, "R-1")  # RETURNED: finished
    accepted = api.bulk(batch(group(drop("R-1"))), sandbox).json()["data"]["orders"][0]
    assert accepted["status"] == "accepted"


def test_operators_move_a_failed_drop_back_with_who_received_it(alice):
    ids = place_live_failed(alice)

    moved = move_drops_as_operator(drop_ids=ids, to=S.RETURNING, actor="op")
    assert [d.status for d in moved.moved] == [S.RETURNING]
    done = move_drops_as_operator(
        drop_ids=ids,
        to=S.RETURNED,
        actor="op",
        outcome=Outcome(return_received_by="Dara at the shop"),
    )

    assert [d.status for d in done.moved] == [S.RETURNED]
    row = Drop.objects.get(pk=ids[0])
    assert (row.status, row.return_received_by) == (S.RETURNED, "Dara at the shop")
    assert row.returned_at is not None
    fee = LedgerEntry.objects.get(kind=EntryKind.RETURN_FEE)
    assert (fee.drop_id, fee.amount) == (row.pk, Decimal("-1.40"))  # 50 % of 2.80


def place_live_failed(tenant) -> list:
    """One live drop of `tenant` (price 2.80), failed at the door."""
    made = drop_in(S.PICKED_UP, business=tenant.business, environment="live")
    apply_moves(drop_ids=[made.pk], steps=single_step(S.FAILED), actor="op")
    return [made.pk]


def test_a_drop_sent_to_dispose_of_is_never_walked_back(sandbox, api):
    body = batch(group({**drop("D-2"), "undeliverable_action": "dispose"}))
    assert api.bulk(body, sandbox).json()["data"]["orders"][0]["status"] == "accepted"

    failed = entries(advance(api, sandbox, "D-2", to=S.FAILED))["D-2"]
    refused = entries(advance(api, sandbox, "D-2", to=S.RETURNED))["D-2"]

    assert failed["undeliverable_action"] == "dispose"
    assert (refused["status"], error_code(refused)) == (S.FAILED, "ILLEGAL_TRANSITION")
    assert refused["return"] is None
    assert not LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE).exists()
