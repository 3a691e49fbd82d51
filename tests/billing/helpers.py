"""Helpers shared by the billing tests: the wallet of a tenant, the ledger's consistency, and
the prices and outcomes of a batch response."""

from __future__ import annotations

from decimal import Decimal

from billing.models import EntryKind, LedgerEntry, Wallet
from core.functions import MoneySum
from orders.models import Batch, Drop


def wallet_of(tenant, environment: str = "sandbox") -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment=environment)


def assert_ledger_consistent(tenant, environment: str = "sandbox") -> Decimal:
    """balance = sum of entries' amounts >= 0 and owed = sum of their owed changes >= 0, and
    every entry's balance_after and owed_after follow from the last (docs/contract.md §19).

    Returns the balance so a test can also pin its exact value.
    """
    wallet = wallet_of(tenant, environment)
    totals = wallet.entries.aggregate(balance=MoneySum("amount"), owed=MoneySum("owed_change"))
    assert wallet.balance >= 0
    assert wallet.owed >= 0
    assert wallet.balance == (totals["balance"] or Decimal("0.00"))
    assert wallet.owed == (totals["owed"] or Decimal("0.00"))
    balance = owed = Decimal("0.00")
    for entry in LedgerEntry.objects.filter(wallet=wallet).order_by("id"):
        balance, owed = balance + entry.amount, owed + entry.owed_change
        assert entry.balance_after == balance, f"{entry} breaks the balance_after chain"
        assert entry.owed_after == owed, f"{entry} breaks the owed_after chain"
        assert entry.balance_after >= 0
        assert entry.owed_after >= 0
    return wallet.balance


def batch_debit(batch_id) -> LedgerEntry:
    """The one ORDER_DEBIT that charges a batch's drops, checked.

    It names the batch and no drop, is minus the sum of the prices of the batch's drops,
    says how many they are, and was made by no person.
    """
    debit = LedgerEntry.objects.get(kind=EntryKind.ORDER_DEBIT, batch_id=batch_id)
    drops = Drop.objects.filter(batch_id=batch_id)
    count = drops.count()
    assert count > 0, "a batch that accepted nothing is charged nothing"
    assert debit.drop_id is None
    assert debit.actor_id is None
    assert debit.amount == -drops.aggregate(total=MoneySum("price"))["total"]
    assert debit.note == ("1 drop" if count == 1 else f"{count} drops")
    return debit


def assert_debited_per_batch(tenant, environment: str = "sandbox") -> list[LedgerEntry]:
    """Each batch of this wallet account that accepted drops is charged by exactly one
    ORDER_DEBIT (batch_debit); a batch that accepted none by none. Returns them by id."""
    wallet = wallet_of(tenant, environment)
    debits = list(wallet.entries.filter(kind=EntryKind.ORDER_DEBIT).order_by("id"))
    batches = Batch.objects.filter(business=tenant.business, environment=environment)
    charged = [b.pk for b in batches if Drop.objects.filter(batch=b).exists()]
    assert sorted(str(d.batch_id) for d in debits) == sorted(str(pk) for pk in charged)
    for debit in debits:
        assert batch_debit(debit.batch_id).pk == debit.pk
    return debits


def prices(response) -> list[str | None]:
    """The price of each result entry of a batch response, None where rejected."""
    return [entry.get("price") for entry in response.json()["data"]["orders"]]


def outcomes(response) -> list[str]:
    """'accepted' or the failure reason of each result entry, in submission order."""
    return [
        entry["status"] if entry["status"] == "accepted" else entry["failure_reason"]
        for entry in response.json()["data"]["orders"]
    ]
