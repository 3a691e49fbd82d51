"""The money of an edit after creation (docs/contract.md §17): a drop whose new price differs
from what it was charged settles the difference in the edit's own transaction.

A wallet is debited or credited the difference by one ADJUSTMENT naming the drop, through
billing.services.append_entries (a credit pays what the wallet owes first); an invoiced
account gets one line of the difference on its open invoice. The drop's stored price is
then its new price, so a later cancel refunds exactly what was charged in all.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import F

from accounts.models import BillingModel, Business
from billing.models import EntryKind, Invoice, InvoiceLine, Wallet
from billing.services import Movement, append_entries, open_invoice
from core.formats import money


class CannotCover(Exception):
    """The wallet cannot pay a price increase: its balance is short, or it owes money."""


def settle_price_change(
    *,
    business: Business,
    wallet: Wallet,
    drop_id,
    charged: Decimal,
    price: Decimal,
    at: datetime,
) -> Decimal:
    """Charge or give back `price - charged` for the drop; the difference settled.

    The caller holds the account lock (`wallet`, from billing.services.lock_account) and
    the drop's row lock. Raises CannotCover, writing nothing, when a wallet cannot pay an
    increase: an edit never takes a wallet below zero nor adds to what it owes.
    """
    difference = price - charged
    if not difference:
        return difference
    if business.billing_model == BillingModel.WALLET:
        if difference > 0 and (wallet.owed > 0 or difference > wallet.balance):
            raise CannotCover(
                f"The wallet balance ({money(wallet.balance)}) does not cover the price "
                f"difference ({money(difference)})."
                + (f" It owes {money(wallet.owed)}." if wallet.owed > 0 else "")
            )
        note = f"Edited: price {money(charged)} → {money(price)}"
        move = Movement(EntryKind.ADJUSTMENT, -difference, drop_id=drop_id, note=note)
        append_entries(wallet=wallet, movements=[move], at=at)
        return difference
    invoice = open_invoice(business=business, environment=wallet.environment, at=at)
    InvoiceLine.objects.create(
        invoice=invoice, drop_id=drop_id, amount=difference, description="Edited delivery"
    )
    Invoice.objects.filter(pk=invoice.pk).update(accrued=F("accrued") + difference)
    return difference
