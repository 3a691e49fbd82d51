"""Taking an order back from its courier in the console (docs/operator.md "Taking an order
back"): an action on orders behind the dispatch permission, saying what it did."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry

from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from orders.models import Drop, DropStatus, Order

# The dispatch tests' fixtures, imported as tests/console/test_dispatch_board.py does.
# ruff: noqa: F811
from tests.couriers.conftest import make_courier  # noqa: F401
from tests.dispatch.conftest import NEAR, courier_near, live_order, shop  # noqa: F401
from tests.factories import DriverFactory
from tests.operators import staff_client
from tests.tracking.helpers import history_of, place
from tracking.services import move_drops_as_operator

S = DropStatus
ORDERS = "/admin/orders/order/"
VIEW = ["orders.view_order", "orders.view_drop"]


@pytest.fixture
def courier(db):
    return DriverFactory(name="Sokha Keo", phone="+85512111111")


@pytest.fixture
def assigned(open_for_business, alice, api, courier) -> Order:
    """A live order of two drops, given by hand to Sokha (ASSIGNED)."""
    ids = list(place(api, alice.live_key, "TB-1", "TB-2").values())
    moved = move_drops_as_operator(drop_ids=ids, to=S.ASSIGNED, actor="operator x", driver=courier)
    assert len(moved.moved) == 2
    return Order.objects.get(drops__pk=ids[0])


def take_back(client, order: Order):
    data = {"action": "take_back", "index": "0", "_selected_action": [str(order.pk)]}
    return client.post(ORDERS, data, follow=True)


def said(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_a_dispatcher_takes_an_order_back_and_is_told_so(assigned, courier):
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])
    assert 'value="take_back"' in dispatcher.get(ORDERS).content.decode()

    response = take_back(dispatcher, assigned)

    assert response.status_code == 200
    assert said(response) == [
        "Order of Shop: 2 drop(s) taken back from Sokha Keo; it waits for another courier."
    ]
    assert Order.objects.get(pk=assigned.pk).driver is None
    for drop in Drop.objects.filter(order=assigned):
        assert history_of(drop.pk) == [S.PENDING, S.ASSIGNED, S.PENDING]
    assert Offer.objects.get(order=assigned).status == OfferStatus.TAKEN_BACK
    logged = LogEntry.objects.filter(change_message__startswith="Taken back from courier Sokha")
    assert logged.count() == 2


def test_a_picked_up_order_is_refused_with_a_message_and_nothing_changes(assigned, courier):
    drop_ids = list(Drop.objects.filter(order=assigned).values_list("pk", flat=True))
    move_drops_as_operator(drop_ids=drop_ids, to=S.PICKED_UP, actor="operator x")
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])

    response = take_back(dispatcher, assigned)

    assert said(response) == [
        "Order of Shop: Sokha Keo has picked up this order's parcels: it cannot be "
        "taken back. Nothing changed."
    ]
    assert Order.objects.get(pk=assigned.pk).driver_id == courier.pk
    assert {history_of(pk)[-1] for pk in drop_ids} == {S.PICKED_UP}
    assert not Offer.objects.filter(order=assigned).exists()


@pytest.mark.parametrize("perms", [VIEW, [*VIEW, "orders.cancel_drop"]])
def test_without_the_dispatch_permission_there_is_no_action_and_a_post_is_403(
    assigned, courier, perms
):
    operator = staff_client("viewer@example.com", perms=perms)
    assert 'value="take_back"' not in operator.get(ORDERS).content.decode()

    response = take_back(operator, assigned)

    assert response.status_code == 403
    assert Order.objects.get(pk=assigned.pk).driver_id == courier.pk
    assert set(Drop.objects.filter(order=assigned).values_list("status", flat=True)) == {S.ASSIGNED}


# On the dispatch board: a button on the row of a courier whose order may be taken back.
BOARD = "/admin/dispatch/board/"
TAKE_BACK = "/admin/dispatch/board/take-back/"


def post_take_back(client, order_id) -> tuple[int, list[str]]:
    response = client.post(TAKE_BACK, {"order": str(order_id)})
    if response.status_code != 302:
        return response.status_code, []
    return response.status_code, said(client.get(response["Location"]))


def test_the_board_takes_a_courier_s_order_back_behind_the_dispatch_permission(
    api, shop, courier_near
):
    dara, dara_client = courier_near(NEAR, "Dara Sok")
    order = live_order(api, shop)
    dispatch_waiting()
    [offer] = Offer.objects.filter(order=order)
    assert dara_client.post(f"/offers/{offer.pk}/accept", {}).status_code == 200
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])
    viewer = staff_client("viewer@example.com", perms=VIEW)

    assert f'name="order" value="{order.pk}"' in dispatcher.get(BOARD).content.decode()
    assert 'data-testid="take-back"' not in viewer.get(BOARD).content.decode()
    assert post_take_back(viewer, order.pk) == (403, [])
    assert Order.objects.get(pk=order.pk).driver_id == dara.pk

    assert post_take_back(dispatcher, order.pk) == (
        302,
        [
            f"Order of {order.pickup_name}: 2 drop(s) taken back from Dara Sok; "
            "it waits for another courier."
        ],
    )
    assert Order.objects.get(pk=order.pk).driver is None
    assert set(order.drops.values_list("status", flat=True)) == {S.PENDING}
    assert 'data-testid="take-back"' not in dispatcher.get(BOARD).content.decode()
    # Sent again, or for an order that is nobody's: said, nothing changes.
    assert post_take_back(dispatcher, order.pk) == (
        302,
        [f"Order of {order.pickup_name}: No courier has this order. Nothing changed."],
    )
    assert post_take_back(dispatcher, "not-an-id") == (
        302,
        ["Choose an order from the board. Nothing changed."],
    )


def test_the_board_offers_no_take_back_once_a_parcel_is_picked_up(api, shop, courier_near):
    dara, _ = courier_near(NEAR, "Dara Sok")
    order = live_order(api, shop)
    drop_ids = list(order.drops.values_list("pk", flat=True))
    move_drops_as_operator(drop_ids=drop_ids, to=S.ASSIGNED, actor="operator x", driver=dara)
    dispatcher = staff_client("dispatcher@example.com", perms=[*VIEW, "orders.dispatch_drop"])
    assert 'data-testid="take-back"' in dispatcher.get(BOARD).content.decode()

    move_drops_as_operator(drop_ids=drop_ids[:1], to=S.PICKED_UP, actor="operator x")

    assert 'data-testid="take-back"' not in dispatcher.get(BOARD).content.decode()
