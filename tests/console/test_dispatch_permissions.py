"""Dispatch and cancel in admin each need their own permission (docs/contract.md §16)."""

from __future__ import annotations

import pytest

from billing.models import EntryKind, LedgerEntry
from orders.models import Drop, DropStatus, Order
from tests.factories import DriverFactory
from tests.operators import staff_client
from tests.tracking.helpers import history_of, place

S = DropStatus
ORDERS = "/admin/orders/order/"
DROPS = "/admin/orders/drop/"
DISPATCH = ["assign_driver", "mark_picked_up", "mark_delivered", "mark_failed"]
VIEW = ["orders.view_order", "orders.view_drop"]


@pytest.fixture
def driver(db):
    return DriverFactory(name="Sokha", phone="+85512111111")


@pytest.fixture
def placed(open_for_business, alice, api):
    """One live drop, PENDING."""
    return place(api, alice.live_key, "O-1")["O-1"]


def pk_in(changelist: str, drop_id) -> str:
    return str(Order.objects.get(drops__pk=drop_id).pk if changelist == ORDERS else drop_id)


def post_action(client, changelist: str, action: str, drop_id, **extra):
    data = {"action": action, "index": "0", "_selected_action": [pk_in(changelist, drop_id)]}
    return client.post(changelist, {**data, **extra})


def offered(client, changelist: str) -> set[str]:
    response = client.get(changelist)
    assert response.status_code == 200
    html = response.content.decode()
    return {a for a in [*DISPATCH, "mark_cancelled"] if f'value="{a}"' in html}


@pytest.mark.parametrize("changelist", [ORDERS, DROPS])
@pytest.mark.parametrize("action", [*DISPATCH, "mark_cancelled"])
def test_staff_who_may_only_look_gets_no_action_and_403(placed, driver, changelist, action):
    viewer = staff_client("viewer@example.com", perms=VIEW)
    refunds = LedgerEntry.objects.filter(kind=EntryKind.REFUND).count()

    assert offered(viewer, changelist) == set()
    response = post_action(viewer, changelist, action, placed, apply="1", driver=str(driver.pk))

    assert response.status_code == 403
    assert history_of(placed) == [S.PENDING]
    assert Drop.objects.get(pk=placed).order.driver is None
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == refunds


@pytest.mark.parametrize("changelist", [ORDERS, DROPS])
def test_dispatching_does_not_allow_cancelling(placed, changelist):
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])

    assert offered(dispatcher, changelist) == set(DISPATCH)
    assert post_action(dispatcher, changelist, "mark_cancelled", placed).status_code == 403

    assert history_of(placed) == [S.PENDING]
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()


@pytest.mark.parametrize("changelist", [ORDERS, DROPS])
@pytest.mark.parametrize("action", DISPATCH)
def test_cancelling_does_not_allow_dispatching(placed, driver, changelist, action):
    canceller = staff_client("canceller@example.com", perms=[*VIEW, "orders.cancel_drop"])

    assert offered(canceller, changelist) == {"mark_cancelled"}
    response = post_action(canceller, changelist, action, placed, apply="1", driver=str(driver.pk))

    assert response.status_code == 403
    assert history_of(placed) == [S.PENDING]


@pytest.mark.parametrize("changelist", [ORDERS, DROPS])
def test_an_operator_assigns_picks_up_and_delivers(placed, driver, changelist):
    operator = staff_client("operator@example.com", groups=["Operators"])
    assert offered(operator, changelist) == {*DISPATCH, "mark_cancelled"}

    post_action(operator, changelist, "assign_driver", placed, apply="1", driver=str(driver.pk))
    post_action(operator, changelist, "mark_picked_up", placed)
    post_action(operator, changelist, "mark_delivered", placed, apply="1")

    assert history_of(placed) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert Drop.objects.get(pk=placed).order.driver == driver


@pytest.mark.parametrize("changelist", [ORDERS, DROPS])
def test_an_operator_cancels_and_the_drop_is_refunded(placed, changelist):
    operator = staff_client("operator@example.com", groups=["Operators"])

    assert post_action(operator, changelist, "mark_cancelled", placed).status_code == 302

    assert history_of(placed) == [S.PENDING, S.CANCELLED]
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND, drop_id=placed).count() == 1


def test_finance_cannot_see_or_move_drops(placed):
    finance = staff_client("finance@example.com", groups=["Finance"])

    assert finance.get(DROPS).status_code == 403
    assert post_action(finance, DROPS, "mark_cancelled", placed).status_code == 403
    assert history_of(placed) == [S.PENDING]
