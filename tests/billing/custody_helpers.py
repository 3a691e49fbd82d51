"""Helpers of the cash custody tests (docs/contract.md §23): COD drops a courier delivered."""

from __future__ import annotations

from decimal import Decimal

from billing.models import CourierCashAccount
from orders.models import Drop, DropStatus
from tests.couriers.conftest import assigned_drops
from tests.factories import drop
from tracking.services import move_drops_as_operator


def delivered_by(api, tenant, courier, *amounts: str, environment: str = "live") -> list[Drop]:
    """One COD drop per amount, assigned to the courier and delivered: the courier took the
    cash of each."""
    drops = assigned_drops(
        api,
        tenant,
        courier,
        *({**drop(), "cod": {"amount": amount}} for amount in amounts),
        environment=environment,
    )
    ids = [d.pk for d in drops]
    for to in (DropStatus.PICKED_UP, DropStatus.DELIVERED):
        moved = move_drops_as_operator(drop_ids=ids, to=to, actor="operator test")
        assert len(moved.moved) == len(ids), moved.refused
    return drops


def cash_account(courier, environment: str = "live") -> CourierCashAccount:
    return CourierCashAccount.objects.get(courier=courier, environment=environment)


def in_hand(courier, environment: str = "live") -> Decimal:
    account = CourierCashAccount.objects.filter(courier=courier, environment=environment).first()
    return account.in_hand if account else Decimal("0.00")
