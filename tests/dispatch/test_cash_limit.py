"""The cash limit (docs/contract.md §23): a courier holding more than COURIER_CASH_LIMIT
(300.00) is offered no order with cash to collect until they hand it over, by the
dispatcher or by hand, and the board says why."""

from __future__ import annotations

import pytest
from django.test import Client

from billing.custody import hand_over
from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer
from dispatch.offers import assign_by_hand
from tests.billing.custody_helpers import delivered_by

# ruff: noqa: F811
from tests.couriers.conftest import make_courier  # noqa: F401
from tests.dispatch.conftest import FAR, NEAR, courier_near, live_order, online_at, shop  # noqa: F401
from tests.factories import drop
from tests.operators import staff_client
from tracking.services import DriverRefused

BOARD = "/admin/dispatch/board/"
ASSIGN = "/admin/dispatch/board/assign/"


def cod_drop(amount: str = "20.00") -> dict:
    return {**drop(), "cod": {"amount": amount}}


@pytest.fixture
def operator() -> Client:
    return staff_client("ops@example.com", groups=["Operators"])


@pytest.fixture
def loaded(api, shop, make_courier):
    """Dara, near the shop, holding 300.01 of live cash: over the limit."""
    courier, _ = make_courier("Dara Loaded")
    delivered_by(api, shop, courier, "300.01")
    online_at(courier, NEAR)
    return courier


def test_the_dispatcher_offers_a_cod_order_past_a_courier_over_the_limit(
    api, shop, loaded, courier_near
):
    farther, _ = courier_near(FAR, "Sophea Light")
    order = live_order(api, shop, cod_drop())

    dispatch_waiting()

    [offer] = Offer.objects.filter(order=order)
    assert offer.courier_id == farther.pk  # the nearer one holds too much cash


def test_a_courier_over_the_limit_still_gets_orders_without_cash(api, shop, loaded):
    order = live_order(api, shop, drop())

    dispatch_waiting()

    assert Offer.objects.get(order=order).courier_id == loaded.pk


def test_at_the_limit_exactly_and_after_a_hand_over_cod_orders_come_again(api, shop, loaded):
    order = live_order(api, shop, cod_drop())
    dispatch_waiting()
    assert not Offer.objects.filter(order=order).exists()

    hand_over(
        courier=loaded,
        currency="USD",
        expected="300.01",
        counted="0.01",
        receipt="R-1",
        note="Brings the rest tomorrow",
    )  # fmt: skip  nothing in hand now
    dispatch_waiting()

    assert Offer.objects.get(order=order).courier_id == loaded.pk


def test_hand_assignment_refuses_a_cod_order_to_a_courier_over_the_limit(api, shop, loaded):
    order = live_order(api, shop, cod_drop())

    with pytest.raises(DriverRefused, match="holds more cash than the limit"):
        assign_by_hand(order=order, courier=loaded, actor="test")

    plain = live_order(api, shop, drop())
    assert assign_by_hand(order=plain, courier=loaded, actor="test").moved


def test_the_board_says_why_and_offers_no_such_choice(api, shop, loaded, operator):
    order = live_order(api, shop, cod_drop())

    page = operator.get(BOARD).content.decode()

    assert 'data-testid="cash-over-limit"' in page
    assert f'<option value="{loaded.pk}">' not in page
    assert "under the cash limit (it has cash to collect)" in page
    posted = operator.post(ASSIGN, {"order": str(order.pk), "courier": str(loaded.pk)})
    said = [str(m) for m in operator.get(posted["Location"]).context["messages"]]
    assert len(said) == 1 and "holds more cash than the limit (300.00)" in said[0]
