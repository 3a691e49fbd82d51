"""Cash on delivery: the cash couriers collect for a business, and where it goes
(docs/contract.md §18).

Per business and environment, a COD account holds what we owe the business (`owed`): the
sum of its append-only entries, never below zero (a CHECK on the account and on every
entry's `owed_after`). COLLECTED is written with the DELIVERED move (tracking.lifecycle),
REMITTED by a Finance operator's payout, CREDITED_TO_WALLET by the business moving owed cash
into its wallet (with the wallet's TOP_UP, in the same transaction).

Locks, always in this order: the wallet (the account lock, billing.services.lock_account),
then drops' rows (a move), then COD accounts by (business, environment). A delivery holds
its drops and takes the COD account last; a credit takes the wallet then the COD account; a
payout the COD account alone. So none waits for another in a circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import BillingModel, Business
from billing.custody import Collection, record_collections
from billing.models import (
    MAX_OWED,
    ZERO,
    CodAccount,
    CodEntry,
    CodKind,
    EntryKind,
)
from billing.services import Movement, append_entries, lock_account
from core.formats import CENT, money
from core.functions import MoneySum
from core.writes import insert_rows
from events.models import EventType
from events.services import record_events


class CodRefused(Exception):
    """A COD movement that is not allowed; nothing was written. Its subclass says why."""


class CodExceedsOwed(CodRefused):
    """More than the account holds (owed would go below zero)."""


class CodNotCreditable(CodRefused):
    """An account billed by invoice has no wallet to move cash into."""


class CodInvalid(CodRefused):
    """A bad amount or a payout without its reference (the API's shape checks come first)."""


class CodDrop(Protocol):
    """What a collection reads of a delivered drop (orders.Drop: billing sits below orders)."""

    pk: object
    business_id: object
    environment: str
    currency: str
    cod_amount: Decimal | None


def lock_cod_accounts(accounts: Iterable[tuple]) -> dict[tuple, CodAccount]:
    """Lock (and make on first use) the COD accounts of (business_id, environment) pairs, in
    one fixed order, so two callers locking overlapping sets never deadlock."""
    keys = sorted({(str(business_id), environment) for business_id, environment in accounts})
    CodAccount.objects.bulk_create(
        [CodAccount(business_id=b, environment=e) for b, e in keys], ignore_conflicts=True
    )
    locked = {}
    for business_id, environment in keys:
        locked[(business_id, environment)] = CodAccount.objects.select_for_update().get(
            business_id=business_id, environment=environment
        )
    return locked


@dataclass(frozen=True, slots=True)
class CodMove:
    kind: str
    amount: Decimal  # signed: + collected, − paid out or credited
    drop_id: object = None
    reference: str = ""
    actor_id: int | None = None
    note: str = ""
    courier_id: object = None  # COLLECTED: the courier who took the cash


COD_FIELDS = (
    "account_id", "kind", "amount", "owed_after", "drop_id", "reference", "actor_id", "note",
    "courier_id", "created_at",
)  # fmt: skip


# Each total of GET /account's `cod` and of the reconciliation, a column of the account kept
# by _append: the kind of entry it sums, and its sign (payouts and credits are negative
# entries, shown as positive totals).
TOTALS = {
    "collected_total": (CodKind.COLLECTED, Decimal(1)),
    "remitted_total": (CodKind.REMITTED, Decimal(-1)),
    "credited_total": (CodKind.CREDITED_TO_WALLET, Decimal(-1)),
}
TOTAL_OF_KIND = {kind: (name, sign) for name, (kind, sign) in TOTALS.items()}


def _append(account: CodAccount, moves: list[CodMove], at: datetime) -> Decimal:
    """Append entries with running owed and set the account's owed and TOTALS; the caller
    holds its lock (so the kept columns move with the entries, one writer at a time).

    Refuses, writing nothing, if owed would go below zero (the CHECKs say the same).
    """
    owed, rows, added = account.owed, [], dict.fromkeys(TOTALS, ZERO)
    for move in moves:
        owed += move.amount
        name, sign = TOTAL_OF_KIND[move.kind]
        added[name] += sign * move.amount
        if owed < 0:
            raise CodExceedsOwed(f"Only {money(account.owed)} is owed.")
        if owed > MAX_OWED:
            raise CodExceedsOwed("More cash than an account can record.")
        rows.append((
            account.pk, move.kind, move.amount, owed, move.drop_id, move.reference,
            move.actor_id, move.note, move.courier_id, at,
        ))  # fmt: skip
    insert_rows(CodEntry, COD_FIELDS, rows)
    kept = {name: getattr(account, name) + amount for name, amount in added.items()}
    CodAccount.objects.filter(pk=account.pk).update(owed=owed, updated_at=at, **kept)
    account.owed = owed
    for name, total in kept.items():
        setattr(account, name, total)
    return owed


def collect_cod(
    *, drops: list[CodDrop], at: datetime, couriers: Mapping[object, object] | None = None
) -> None:
    """COLLECTED for each delivered drop with cash to collect, in the DELIVERED move's
    transaction (tracking.lifecycle), naming the courier who took the cash (`couriers`: drop
    id → courier id; none: the order had no courier), and the same COLLECTED on that
    courier's cash account (billing.custody, docs/contract.md §23). The drops' rows are
    locked and each moves to DELIVERED once; a second COLLECTED of a drop is refused by the
    unique indexes besides."""
    couriers = couriers or {}
    by_account: dict[tuple, list[CodDrop]] = {}
    for drop in drops:
        if drop.cod_amount:
            by_account.setdefault((str(drop.business_id), drop.environment), []).append(drop)
    if not by_account:
        return
    accounts = lock_cod_accounts(by_account)
    for key, collected in by_account.items():
        moves = [
            CodMove(CodKind.COLLECTED, d.cod_amount, drop_id=d.pk, courier_id=couriers.get(d.pk))
            for d in collected
        ]
        _append(accounts[key], moves, at)
    record_collections(  # the cash accounts' locks after the COD accounts'
        [
            Collection(d.pk, couriers.get(d.pk), d.environment, d.currency, d.cod_amount)
            for collected in by_account.values()
            for d in collected
        ],
        at,
    )


def _amount(value) -> Decimal:
    """A positive amount of at most two decimals, or CodInvalid."""
    amount = Decimal(value)
    if not amount.is_finite() or amount <= 0 or amount != amount.quantize(CENT):
        raise CodInvalid("The amount is a positive money amount (0.01 or more).")
    return amount


@transaction.atomic
def remit_cod(
    *, business: Business, environment: str, amount: Decimal, reference: str, actor=None
) -> CodEntry:
    """An operator's payout of collected cash to the business: REMITTED, and cod.remitted."""
    amount, reference = _amount(amount), reference.strip()
    if not reference:
        raise CodInvalid("A payout needs its reference (the transfer's).")
    at = timezone.now()
    account = lock_cod_accounts([(business.pk, environment)])[(str(business.pk), environment)]
    move = CodMove(
        CodKind.REMITTED, -amount, reference=reference, actor_id=getattr(actor, "pk", None)
    )
    owed = _append(account, [move], at)
    payload = {"amount": money(amount), "reference": reference, "owed": money(owed)}
    _tell(business, environment, EventType.COD_REMITTED, payload, at)
    return account.entries.order_by("-id").first()


@transaction.atomic
def credit_wallet(*, business: Business, environment: str, amount: Decimal, actor=None) -> CodEntry:
    """Move owed cash into the wallet: CREDITED_TO_WALLET and the wallet's TOP_UP together
    (the TOP_UP pays what the wallet owes first, billing.services), and cod.credited."""
    amount = _amount(amount)
    if business.billing_model != BillingModel.WALLET:
        raise CodNotCreditable(
            "This account is billed by invoice: it has no wallet to credit. Collected cash "
            "is paid out by our finance team.",
        )
    at = timezone.now()
    wallet = lock_account(business=business, environment=environment)  # wallet first, always
    account = lock_cod_accounts([(business.pk, environment)])[(str(business.pk), environment)]
    actor_id = getattr(actor, "pk", None)
    owed = _append(account, [CodMove(CodKind.CREDITED_TO_WALLET, -amount, actor_id=actor_id)], at)
    top_up = Movement(EntryKind.TOP_UP, amount, actor_id=actor_id, note="From cash on delivery")
    balance = append_entries(wallet=wallet, movements=[top_up], at=at)
    payload = {
        "amount": money(amount),
        "owed": money(owed),
        "wallet": {"balance": money(balance), "owed": money(wallet.owed)},
    }
    _tell(business, environment, EventType.COD_CREDITED, payload, at)
    return account.entries.order_by("-id").first()


def simulate_payout(*, business: Business, actor=None) -> CodEntry:
    """Sandbox: pay out everything the sandbox COD account holds, as Finance would on live."""
    owed = cod_summary(business=business, environment="sandbox")["owed"]
    if owed <= 0:
        raise CodExceedsOwed("No sandbox cash is owed: deliver a COD drop first.")
    reference = f"SANDBOX-{timezone.now():%Y%m%d-%H%M%S}"
    return remit_cod(
        business=business, environment="sandbox", amount=owed, reference=reference, actor=actor
    )


def _tell(business: Business, environment: str, event_type: str, data: dict, at) -> None:
    payload = {**data, "currency": settings.CURRENCY, "at": at.isoformat().replace("+00:00", "Z")}
    record_events(
        business_id=business.pk,
        environment=environment,
        event_type=event_type,
        payloads=[payload],
        at=at,
    )


def cod_summary(*, business: Business, environment: str) -> dict[str, Decimal]:
    """owed and the totals of each kind of entry (positive), for GET /account and pages."""
    account = CodAccount.objects.filter(business=business, environment=environment).first()
    if account is None:
        return dict.fromkeys(["owed", *TOTALS], ZERO)
    return {name: getattr(account, name) for name in ["owed", *TOTALS]}


def service_day_start(at: datetime) -> datetime:
    """Midnight of `at`'s day in the service time zone."""
    local = at.astimezone(ZoneInfo(settings.TIME_ZONE))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def accounts_with_totals(*, environment: str, at: datetime) -> QuerySet[CodAccount]:
    """The COD accounts of an environment, each with `collected_today` (the service time
    zone's day of `at`) and the TOTALS, most owed first: the operators' reconciliation
    (console/cod.py, its page and its CSV)."""
    start = service_day_start(at)
    today = Q(
        entries__kind=CodKind.COLLECTED,
        entries__created_at__gte=start,
        entries__created_at__lt=start + timedelta(days=1),
    )
    return (
        CodAccount.objects.filter(environment=environment)
        .annotate(collected_today=MoneySum("entries__amount", filter=today, default=ZERO))
        .select_related("business")
        .order_by("-owed", "business__name", "pk")
    )
