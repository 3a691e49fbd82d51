"""Dispatch by operators in admin, and dispatch_due_orders: every move through the state machine."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from billing.models import EntryKind, LedgerEntry, Wallet
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.factories import DriverFactory
from tests.tracking.helpers import (
    THIS_AFTERNOON,
    TOMORROW_AFTERNOON,
    assert_legal_history,
    history_of,
    ledger_sum,
    place,
)
from tracking.services import dispatch_due_orders

S = DropStatus
ORDERS = "/admin/orders/order/"
DROPS = "/admin/orders/drop/"


@pytest.fixture
def operator(db) -> Client:
    client = Client()
    user = get_user_model().objects.create_superuser("ops@example.com", "ops@example.com", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def driver(db):
    return DriverFactory(name="Sokha", phone="+85512111111")


def run_action(operator: Client, changelist: str, action: str, *pks, **extra):
    """Submit an action from a changelist, following the redirect; returns (response, messages)."""
    data = {"action": action, "index": "0", "_selected_action": [str(pk) for pk in pks], **extra}
    response = operator.post(changelist, data, follow=True)
    assert response.status_code == 200
    return response, [(m.level_tag, str(m)) for m in response.context["messages"]]


def assign(operator: Client, changelist: str, driver, *pks):
    """The assign_driver action's second step: the form posted back with apply=1."""
    data = {
        "action": "assign_driver",
        "apply": "1",
        "driver": str(driver.pk),
        "_selected_action": [str(pk) for pk in pks],
    }
    response = operator.post(changelist, data, follow=True)
    assert response.status_code == 200
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def order_of(drop_id) -> Order:
    return Order.objects.get(drops__pk=drop_id)


def status_of(drop_id) -> str:
    return Drop.objects.get(pk=drop_id).status


def live_wallet(tenant) -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment="live")


def test_assign_driver_first_shows_a_form_and_changes_nothing(
    open_for_business, alice, api, operator, driver
):
    ids = place(api, alice.live_key, "O-1")
    order = order_of(ids["O-1"])

    response = operator.post(
        ORDERS, {"action": "assign_driver", "index": "0", "_selected_action": [str(order.pk)]}
    )

    assert response.status_code == 200
    assert b"Assign a driver" in response.content
    assert f'value="{driver.pk}"'.encode() in response.content
    assert f'value="{order.pk}"'.encode() in response.content
    assert status_of(ids["O-1"]) == S.PENDING
    order.refresh_from_db()
    assert order.driver is None


def test_an_order_is_assigned_picked_up_and_delivered(
    open_for_business, alice, api, operator, driver
):
    ids = place(api, alice.live_key, "O-1", "O-2")
    order = order_of(ids["O-1"])

    assert assign(operator, ORDERS, driver, order.pk) == [
        ("success", "2 drop(s) assigned to Sokha.")
    ]
    order.refresh_from_db()
    assert order.driver == driver
    assert {status_of(i) for i in ids.values()} == {S.ASSIGNED}

    _, messages = run_action(operator, ORDERS, "mark_picked_up", order.pk)
    assert messages == [("success", "2 drop(s) picked up.")]
    _, messages = run_action(operator, ORDERS, "mark_delivered", order.pk, apply="1")
    assert messages == [("success", "2 drop(s) delivered.")]

    for drop_id in ids.values():
        assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
        # Every stored event is a move, and every move is the operator's.
        actors = DeliveryEvent.objects.filter(drop_id=drop_id)
        assert [e.actor for e in actors] == ["operator ops@example.com"] * 3


def test_a_single_drop_is_assigned_and_failed(open_for_business, alice, api, operator, driver):
    ids = place(api, alice.live_key, "D-1", "D-2")

    assert assign(operator, DROPS, driver, ids["D-1"]) == [
        ("success", "1 drop(s) assigned to Sokha.")
    ]
    run_action(operator, DROPS, "mark_picked_up", ids["D-1"])
    _, messages = run_action(
        operator, DROPS, "mark_failed", ids["D-1"], apply="1", reason="RECIPIENT_UNAVAILABLE"
    )

    assert messages == [("success", "1 drop(s) failed.")]
    assert history_of(ids["D-1"]) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED]
    assert status_of(ids["D-2"]) == S.PENDING  # its sibling was not selected
    assert order_of(ids["D-1"]).driver == driver


def test_cancelling_an_order_refunds_each_drop(open_for_business, alice, api, operator):
    wallet = live_wallet(alice)
    start = wallet.balance
    ids = place(api, alice.live_key, "O-1", "O-2")

    _, messages = run_action(operator, ORDERS, "mark_cancelled", order_of(ids["O-1"]).pk)

    assert messages == [("success", "2 drop(s) cancelled (refunded).")]
    assert {status_of(i) for i in ids.values()} == {S.CANCELLED}
    refunds = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REFUND)
    assert {r.drop_id for r in refunds} == {Drop.objects.get(pk=i).pk for i in ids.values()}
    wallet.refresh_from_db()
    assert wallet.balance == start == ledger_sum(wallet)


def test_cancelling_a_drop_refunds_it_alone(open_for_business, alice, api, operator, driver):
    wallet = live_wallet(alice)
    ids = place(api, alice.live_key, "D-1", "D-2")
    assign(operator, DROPS, driver, ids["D-1"])
    price = Drop.objects.get(pk=ids["D-1"]).price
    before = live_wallet(alice).balance

    _, messages = run_action(operator, DROPS, "mark_cancelled", ids["D-1"])

    assert messages == [("success", "1 drop(s) cancelled (refunded).")]
    assert status_of(ids["D-1"]) == S.CANCELLED and status_of(ids["D-2"]) == S.PENDING
    [refund] = LedgerEntry.objects.filter(kind=EntryKind.REFUND)
    assert refund.amount == price
    wallet.refresh_from_db()
    assert wallet.balance == before + price == ledger_sum(wallet)


def test_cancelling_drops_of_two_businesses_refunds_each_wallet(
    open_for_business, alice, bob, api, operator
):
    mine = place(api, alice.live_key, "A-1")["A-1"]
    theirs = place(api, bob.live_key, "B-1")["B-1"]

    run_action(operator, DROPS, "mark_cancelled", mine, theirs)

    for tenant in (alice, bob):
        wallet = live_wallet(tenant)
        assert wallet.balance == ledger_sum(wallet) == 100
        assert LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REFUND).count() == 1


@pytest.mark.parametrize(
    ("action", "changelist"),
    [
        ("mark_picked_up", DROPS),
        ("mark_delivered", DROPS),
        ("mark_failed", DROPS),
        ("mark_delivered", ORDERS),
    ],
)
def test_an_illegal_admin_move_is_refused_with_a_warning(
    open_for_business, alice, api, operator, action, changelist
):
    drop_id = place(api, alice.live_key, "P-1")["P-1"]
    pk = order_of(drop_id).pk if changelist == ORDERS else drop_id

    _, messages = run_action(operator, changelist, action, pk)

    assert messages == [("warning", "1 drop(s) refused: illegal from PENDING.")]
    assert status_of(drop_id) == S.PENDING
    assert history_of(drop_id) == [S.PENDING]


def test_cancelling_after_pickup_is_refused_and_refunds_nothing(
    open_for_business, alice, api, operator, driver
):
    ids = place(api, alice.live_key, "D-1")
    assign(operator, DROPS, driver, ids["D-1"])
    run_action(operator, DROPS, "mark_picked_up", ids["D-1"])
    balance = live_wallet(alice).balance

    _, messages = run_action(operator, DROPS, "mark_cancelled", ids["D-1"])

    assert messages == [("warning", "1 drop(s) refused: illegal from PICKED_UP.")]
    assert status_of(ids["D-1"]) == S.PICKED_UP
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()
    assert live_wallet(alice).balance == balance


def test_an_order_action_moves_what_it_can_and_reports_the_rest(
    open_for_business, alice, api, operator, driver
):
    ids = place(api, alice.live_key, "O-1", "O-2")
    assign(operator, DROPS, driver, ids["O-1"])

    _, messages = run_action(operator, ORDERS, "mark_picked_up", order_of(ids["O-1"]).pk)

    assert messages == [
        ("success", "1 drop(s) picked up."),
        ("warning", "1 drop(s) refused: illegal from PENDING."),
    ]
    assert status_of(ids["O-1"]) == S.PICKED_UP
    assert status_of(ids["O-2"]) == S.PENDING


def test_assigning_a_scheduled_order_is_refused(open_for_business, alice, api, operator, driver):
    drop_id = place(api, alice.live_key, "S-1", scheduled_at=TOMORROW_AFTERNOON)["S-1"]

    messages = assign(operator, ORDERS, driver, order_of(drop_id).pk)

    assert messages == [("warning", "1 drop(s) refused: illegal from SCHEDULED.")]
    assert status_of(drop_id) == S.SCHEDULED
    assert order_of(drop_id).driver is None


def test_assigning_an_inactive_driver_shows_the_form_again(open_for_business, alice, api, operator):
    retired = DriverFactory(active=False)
    drop_id = place(api, alice.live_key, "D-1")["D-1"]

    response = operator.post(
        DROPS,
        {
            "action": "assign_driver",
            "apply": "1",
            "driver": str(retired.pk),
            "_selected_action": [drop_id],
        },
    )

    assert response.status_code == 200
    assert b"Assign a driver" in response.content
    assert status_of(drop_id) == S.PENDING
    assert order_of(drop_id).driver is None


def test_a_finished_order_has_no_drops_to_move(open_for_business, alice, api, operator, driver):
    drop_id = place(api, alice.live_key, "D-1")["D-1"]
    run_action(operator, DROPS, "mark_cancelled", drop_id)

    _, messages = run_action(operator, ORDERS, "mark_picked_up", order_of(drop_id).pk)

    assert messages == []
    assert history_of(drop_id) == [S.PENDING, S.CANCELLED]


def test_dispatch_moves_due_scheduled_drops_to_pending(open_for_business, alice, api):
    due = place(api, alice.live_key, "DUE", scheduled_at=THIS_AFTERNOON)["DUE"]
    later = place(api, alice.live_key, "LATER", scheduled_at=TOMORROW_AFTERNOON)["LATER"]
    sandbox = place(api, alice.sandbox_key, "SBX", scheduled_at=THIS_AFTERNOON)["SBX"]
    waiting = place(api, alice.live_key, "NOW")["NOW"]
    pickup_time = order_of(due).pickup_scheduled_at

    assert dispatch_due_orders(now=pickup_time - timedelta(seconds=1)).moved == []
    result = dispatch_due_orders(now=pickup_time)

    assert {str(d.pk) for d in result.moved} == {due, sandbox}
    assert status_of(due) == status_of(sandbox) == S.PENDING
    assert status_of(later) == S.SCHEDULED
    assert history_of(waiting) == [S.PENDING]
    event = DeliveryEvent.objects.get(drop_id=due, status=S.PENDING)
    assert (event.at, event.actor) == (pickup_time, "dispatcher")
    assert_legal_history(due)
    assert dispatch_due_orders(now=pickup_time).moved == []  # nothing is moved twice


def test_the_dispatch_command_uses_the_clock(open_for_business, alice, api):
    due = place(api, alice.live_key, "DUE", scheduled_at=THIS_AFTERNOON)["DUE"]
    out = StringIO()
    call_command("dispatch_due_orders", stdout=out)
    assert out.getvalue().strip() == "Dispatched 0 drop(s)."

    open_for_business.move_to(order_of(due).pickup_scheduled_at + timedelta(minutes=1))
    call_command("dispatch_due_orders", stdout=out)

    assert out.getvalue().splitlines()[-1] == "Dispatched 1 drop(s)."
    assert history_of(due) == [S.SCHEDULED, S.PENDING]
