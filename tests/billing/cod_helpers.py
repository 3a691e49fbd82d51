"""Helpers of the cash-on-delivery tests: drops with cash to collect, and the consistency of
the COD ledger (docs/contract.md §18) and of the couriers' cash ledger (§23)."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Q

from billing.cod import TOTALS
from billing.custody import KEPT, custody_breaches
from billing.models import CodAccount, CodEntry, CourierCashAccount, CourierCashEntry
from core.functions import MoneySum
from orders.models import Drop, DropStatus
from tests.tracking.helpers import advance, entries, place
from tracking.lifecycle import along_happy_path, apply_moves


def place_cod(api, key: str, amounts: dict[str, str]) -> dict[str, str]:
    """Accept one drop per client_order_id and give each its cash to collect.

    The amount is set on the stored row: the batch's `cod` input is the parcels work's
    (orders/inputs.py), and the ledger only reads the drop's cod_amount.
    """
    ids = place(api, key, *amounts)
    for client_order_id, amount in amounts.items():
        Drop.objects.filter(pk=ids[client_order_id]).update(cod_amount=Decimal(amount))
    return ids


def totals_of_entries() -> dict:
    """Aggregates of an account's entries: each of billing.cod.TOTALS summed from the
    entries themselves, what the account's kept columns must equal."""
    zero = Decimal("0.00")
    return {
        name: sign * MoneySum("amount", filter=Q(kind=kind), default=zero)
        for name, (kind, sign) in TOTALS.items()
    }


def assert_cod_consistent() -> None:
    """Every COD account's owed is the sum of its entries, each total it keeps the sum of its
    entries of that kind, and each entry's owed_after follows from the one before, never
    below zero."""
    for account in CodAccount.objects.all():
        total = account.entries.aggregate(total=MoneySum("amount"))["total"] or Decimal("0.00")
        assert account.owed == total >= 0, account
        summed = account.entries.aggregate(**totals_of_entries())
        assert {name: getattr(account, name) for name in TOTALS} == summed, account
        owed = Decimal("0.00")
        for entry in CodEntry.objects.filter(account=account).order_by("id"):
            owed += entry.amount
            assert entry.owed_after == owed >= 0, f"{entry} breaks the owed_after chain"
    assert_custody_consistent()


def assert_custody_consistent() -> None:
    """Every courier cash account's in_hand is the sum of its entries, each kept total the
    sum of its entries of that kind, each in_hand_after follows from the one before, never
    below zero; and the invariant holds: Σ businesses' COLLECTED = Σ couriers' COLLECTED =
    Σ in_hand + Σ HANDED_OVER + Σ SHORTAGE (billing.custody.custody_breaches)."""
    zero = Decimal("0.00")
    kept = {
        name: sign * MoneySum("amount", filter=Q(kind=kind), default=zero)
        for name, (kind, sign) in KEPT.items()
    }
    for account in CourierCashAccount.objects.all():
        summed = account.entries.aggregate(in_hand=MoneySum("amount", default=zero), **kept)
        assert {name: getattr(account, name) for name in summed} == summed, account
        in_hand = zero
        for entry in CourierCashEntry.objects.filter(account=account).order_by("id"):
            in_hand += entry.amount
            assert entry.in_hand_after == in_hand >= 0, f"{entry} breaks the in_hand chain"
    assert custody_breaches() == []
    # Every COD COLLECTED names the courier whose account has the same COLLECTED.
    collected = CodEntry.objects.filter(kind="COLLECTED")
    for entry in collected.select_related("account"):
        cash = CourierCashEntry.objects.select_related("account").get(
            kind="COLLECTED", drop_id=entry.drop_id
        )
        assert cash.amount == entry.amount, entry
        assert cash.account.courier_id == entry.courier_id, entry
        assert cash.account.environment == entry.account.environment, entry


def owed_of(tenant, environment: str = "sandbox") -> Decimal:
    account = CodAccount.objects.filter(business=tenant.business, environment=environment).first()
    return account.owed if account else Decimal("0.00")


def delivered_cod(api, tenant, amounts: dict[str, str], environment: str = "sandbox") -> None:
    """Place the drops with their cash to collect and deliver them (DELIVERED collects)."""
    key = tenant.key(environment)
    ids = place_cod(api, key, amounts)
    if environment == "sandbox":
        entries(advance(api, key, *amounts, to="DELIVERED"))
        return
    # Live drops are moved by operators (the console's actions call apply_moves).
    steps = along_happy_path(DropStatus.DELIVERED)
    moved = apply_moves(drop_ids=ids.values(), steps=steps, actor="operator")
    assert not moved.refused
