"""Cashiers and deliveries racing on one courier's cash, on PostgreSQL with real threads
(docs/contract.md §23): two cashiers recording one hand-over at once, exactly one wins."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.custody import HandOverStale, hand_over
from billing.models import CashKind, CourierCashEntry
from couriers.services import provision_courier
from orders.models import DropStatus
from tests.billing.cod_helpers import assert_cod_consistent
from tests.billing.custody_helpers import delivered_by, in_hand
from tests.couriers.conftest import assigned_drops
from tests.factories import drop
from tests.helpers import run_concurrently
from tracking.services import move_drops_as_operator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dara(db):
    return provision_courier(
        name="Dara Sok", phone="+85512340002", vehicle="motorbike", password="correct horse"
    )


def test_two_cashiers_recording_one_hand_over_at_once_exactly_one_wins(
    open_for_business, api, alice, dara
):
    delivered_by(api, alice, dara, "30.00", "12.50")

    def record(api, i):
        try:
            hand_over(
                courier=dara, currency="USD", expected="42.50", counted="42.50",
                receipt=f"R-{i}",
            )  # fmt: skip
        except HandOverStale:
            return "stale"
        return "won"

    answers = run_concurrently(4, record)

    assert sorted(answers) == ["stale", "stale", "stale", "won"]
    handed = CourierCashEntry.objects.filter(kind=CashKind.HANDED_OVER)
    assert [e.amount for e in handed] == [Decimal("-42.50")]
    assert in_hand(dara) == Decimal("0.00")
    assert_cod_consistent()


def test_a_delivery_during_a_hand_over_is_either_counted_or_makes_it_stale(
    open_for_business, api, alice, dara
):
    delivered_by(api, alice, dara, "30.00")
    racing = _picked_up_cod(api, alice, dara, "5.00")

    def work(api, i):
        if i == 0:
            moved = move_drops_as_operator(
                drop_ids=[racing], to=DropStatus.DELIVERED, actor="operator test"
            )
            return "delivered" if moved.moved else "refused"
        try:
            hand_over(courier=dara, currency="USD", expected="35.00", counted="35.00",
                      receipt="R-1")  # fmt: skip
        except HandOverStale:
            return "stale"
        return "won"

    delivered, handed = run_concurrently(2, work)

    assert delivered == "delivered"
    # Before the delivery, 35.00 was not in hand: stale. After it: all of it handed over.
    assert in_hand(dara) == (Decimal("35.00") if handed == "stale" else Decimal("0.00"))
    assert_cod_consistent()


def _picked_up_cod(api, tenant, courier, amount: str):
    [one] = assigned_drops(
        api, tenant, courier, {**drop(), "cod": {"amount": amount}}, environment="live"
    )
    move_drops_as_operator(drop_ids=[one.pk], to=DropStatus.PICKED_UP, actor="operator test")
    return one.pk
