"""Returns in the operator console (docs/contract.md §19): failed live drops sent back to the
pickup and marked returned with who received them, through the one confirmation step every
finishing move shares; the wallet pages show what is owed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from billing.models import EntryKind, LedgerEntry, Wallet
from orders.models import DeliveryEvent, Drop, DropStatus, UndeliverableAction
from tests.tracking.helpers import drop_in

S = DropStatus
ORDERS = "/admin/orders/order/"
DROPS = "/admin/orders/drop/"


@pytest.fixture
def operator(db) -> Client:
    client = Client()
    user = get_user_model().objects.create_superuser("ops@example.com", "ops@example.com", "pw")
    client.force_login(user)
    return client


def post_action(operator: Client, changelist: str, action: str, *pks, **extra):
    """Post an action (its first step, or with apply=1 its form); (response, messages)."""
    data = {"action": action, "index": "0", "_selected_action": [str(pk) for pk in pks], **extra}
    response = operator.post(changelist, data, follow=True)
    assert response.status_code == 200
    return response, [(m.level_tag, str(m)) for m in response.context["messages"]]


def live_drop(tenant, status: str, **fields) -> Drop:
    return drop_in(status, business=tenant.business, environment="live", **fields)


def test_sending_back_first_asks_then_moves_only_failed_drops_that_return(alice, operator):
    failed = live_drop(alice, S.FAILED, client_order_id="F-1")
    disposed = live_drop(
        alice, S.FAILED, client_order_id="F-2", undeliverable_action=UndeliverableAction.DISPOSE
    )
    on_its_way = live_drop(alice, S.PICKED_UP, client_order_id="P-1")
    selected = (failed.pk, disposed.pk, on_its_way.pk)

    page, _ = post_action(operator, DROPS, "mark_returning", *selected)
    text = " ".join(page.content.decode().split())
    assert "2 failed drop(s) to mark returning" in text
    assert "Not failed, so these will be refused: P-1 (PICKED_UP)." in text
    assert Drop.objects.get(pk=failed.pk).status == S.FAILED  # asked, nothing moved yet

    _, said = post_action(operator, DROPS, "mark_returning", *selected, apply="1")

    assert dict(Drop.objects.values_list("client_order_id", "status")) == {
        "F-1": S.RETURNING,
        "F-2": S.FAILED,
        "P-1": S.PICKED_UP,
    }
    assert ("success", "1 drop(s) on their way back to the pickup.") in said
    assert ("warning", "2 drop(s) refused: illegal from FAILED, PICKED_UP.") in said
    assert (
        "warning",
        "To be disposed of, never returned: F-2 (docs/contract.md §19).",
    ) in said
    event = DeliveryEvent.objects.get(drop=failed, status=S.RETURNING)
    assert event.actor == "operator ops@example.com"


def test_marking_returned_needs_who_received_it_and_charges_the_return_fee(alice, operator):
    returning = live_drop(alice, S.RETURNING, client_order_id="R-1")  # price 2.80

    page, _ = post_action(operator, DROPS, "mark_returned", returning.pk, apply="1")
    assert "This field is required." in page.content.decode()
    assert Drop.objects.get(pk=returning.pk).status == S.RETURNING

    _, said = post_action(
        operator, DROPS, "mark_returned", returning.pk, apply="1", received_by="Dara"
    )

    row = Drop.objects.get(pk=returning.pk)
    assert (row.status, row.return_received_by) == (S.RETURNED, "Dara")
    assert ("success", "1 drop(s) returned (the return fee charged).") in said
    fee = LedgerEntry.objects.get(kind=EntryKind.RETURN_FEE)
    assert (fee.drop_id, fee.amount, fee.actor_id) == (row.pk, Decimal("-1.40"), None)
    assert Wallet.objects.get(business=alice.business, environment="live").balance == Decimal(
        "98.60"
    )
    history = operator.get(f"/admin/orders/drop/{row.pk}/history/").content.decode()
    assert "Marked returned, received by Dara." in history


def test_on_the_orders_list_the_return_actions_take_the_failed_and_returning_drops(alice, operator):
    failed = live_drop(alice, S.FAILED, client_order_id="F-1")

    post_action(operator, ORDERS, "mark_returning", failed.order_id, apply="1")
    assert Drop.objects.get(pk=failed.pk).status == S.RETURNING
    post_action(operator, ORDERS, "mark_returned", failed.order_id, apply="1", received_by="Dara")

    assert Drop.objects.get(pk=failed.pk).status == S.RETURNED


def test_nothing_to_return_is_refused_at_once_without_a_form(alice, operator):
    delivered = live_drop(alice, S.DELIVERED, client_order_id="D-1")

    page, said = post_action(operator, DROPS, "mark_returned", delivered.pk)

    assert said == [("warning", "1 drop(s) refused: illegal from DELIVERED.")]
    assert "drops-to-move" not in page.content.decode()


def test_the_wallet_list_and_ledger_show_what_is_owed(alice, operator):
    wallet = Wallet.objects.get(business=alice.business, environment="live")
    Wallet.objects.filter(pk=wallet.pk).update(balance=Decimal("1.00"))
    LedgerEntry.objects.filter(wallet=wallet).update(amount=Decimal("1.00"), balance_after=1)
    returning = live_drop(alice, S.RETURNING, client_order_id="R-1")  # fee 1.40

    post_action(operator, DROPS, "mark_returned", returning.pk, apply="1", received_by="Dara")

    listing = operator.get("/admin/billing/wallet/").content.decode()
    assert "0.40 USD" in listing  # owed
    page = operator.get(f"/admin/billing/wallet/{wallet.pk}/change/").content.decode()
    assert "0.40" in page and "Owed after" in page
