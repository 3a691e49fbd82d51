"""Helpers shared by the billing tests: the wallet of a tenant, the ledger's consistency, and
the prices and outcomes of a batch response."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from billing.models import LedgerEntry, Wallet


def wallet_of(tenant, environment: str = "sandbox") -> Wallet:
    return Wallet.objects.get(business=tenant.business, environment=environment)


def assert_ledger_consistent(tenant, environment: str = "sandbox") -> Decimal:
    """balance = sum of entries >= 0, and every entry's balance_after follows from the last.

    Returns the balance so a test can also pin its exact value.
    """
    wallet = wallet_of(tenant, environment)
    total = wallet.entries.aggregate(total=Sum("amount"))["total"] or Decimal("0.00")
    assert wallet.balance >= 0
    assert wallet.balance == total
    running = Decimal("0.00")
    for entry in LedgerEntry.objects.filter(wallet=wallet).order_by("id"):
        running += entry.amount
        assert entry.balance_after == running, f"{entry} breaks the balance_after chain"
        assert entry.balance_after >= 0
    return wallet.balance


def prices(response) -> list[str | None]:
    """The price of each result entry of a batch response, None where rejected."""
    return [entry.get("price") for entry in response.json()["data"]["orders"]]


def outcomes(response) -> list[str]:
    """'accepted' or the failure reason of each result entry, in submission order."""
    return [
        entry["status"] if entry["status"] == "accepted" else entry["failure_reason"]
        for entry in response.json()["data"]["orders"]
    ]
