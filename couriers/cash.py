"""The courier's cash (docs/contract.md §23, docs/couriers.md "Cash in hand"): what they hold
now, what they owe from shortages, and today's collections drop by drop, for GET
/courier/cash and the app's home page."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone

from billing.custody import cash_of
from billing.models import ZERO, CashKind, CourierCashAccount
from core.formats import iso_z, money
from couriers.changes import first_name


def environment_of(courier) -> str:
    """The environment of a courier's cash: the sandbox test driver's is play money."""
    return "sandbox" if courier.is_sandbox_test_driver else "live"


def _entry(entry, currency: str) -> dict:
    drop = entry.drop
    return {
        "kind": entry.kind,
        "amount": money(entry.amount),
        "currency": currency,
        "in_hand_after": money(entry.in_hand_after),
        "at": iso_z(entry.created_at),
        "time": timezone.localtime(entry.created_at).strftime("%H:%M"),
        "drop_id": str(drop.pk) if drop else None,
        "client_order_id": drop.client_order_id if drop else None,
        "shop": drop.business.name if drop else None,
        "recipient_first_name": first_name(drop) if drop else None,
        "receipt": entry.receipt,
    }


def cash_wire(courier, at: datetime) -> dict:
    """`{in_hand, courier_owes, collected_today, entries}`: each figure per currency (the
    service's currency always, at 0.00 before any cash), entries of today newest first."""
    figures = {settings.CURRENCY: (ZERO, ZERO, ZERO)}
    entries = []
    for account, today in cash_of(courier=courier, environment=environment_of(courier), at=at):
        collected = sum((e.amount for e in today if e.kind == CashKind.COLLECTED), ZERO)
        figures[account.currency] = (account.in_hand, account.courier_owes, collected)
        entries += [_entry(e, account.currency) for e in today]
    entries.sort(key=lambda e: e["at"], reverse=True)

    def per_currency(i: int) -> list[dict]:
        return [{"currency": c, "amount": money(f[i])} for c, f in sorted(figures.items())]

    return {
        "date": timezone.localdate(at).isoformat(),
        "time_zone": settings.TIME_ZONE,
        "in_hand": per_currency(0),
        "courier_owes": per_currency(1),
        "collected_today": per_currency(2),
        "entries": entries,
    }


def in_hand_shown(courier) -> str:
    """The home page's figure: "42.50 USD" (each currency held, joined), "0.00 USD" if none."""
    accounts = CourierCashAccount.objects.filter(
        courier=courier, environment=environment_of(courier), in_hand__gt=0
    ).order_by("currency")
    shown = [f"{money(a.in_hand)} {a.currency}" for a in accounts]
    return " · ".join(shown) or f"0.00 {settings.CURRENCY}"
