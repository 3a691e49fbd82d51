"""Cash custody: who holds the cash couriers collect (docs/contract.md §23).

Per courier, environment and currency, a cash account holds what the courier has in hand:
the sum of its append-only entries, never below zero (a CHECK on the account and on every
entry's `in_hand_after`). COLLECTED is written with the COD ledger's COLLECTED, in the
DELIVERED move's transaction (billing.cod.collect_cod); HANDED_OVER and SHORTAGE by a
cashier at the hub (hand_over); what a cashier counts over what was expected is the hub's
SURPLUS (HubCashEntry), never the courier's. Cash collected on an order that had no courier
(an operator moved it) goes to the unattributed account of its environment.

Locks, always in this order: the COD accounts (billing.cod), then cash accounts by
(courier, environment, currency). A delivery holds its COD accounts and takes the cash
accounts last; a hand-over takes one cash account alone. So none waits for another in a
circle.

The invariant, per environment and currency: Σ businesses' COLLECTED (COD ledger) = Σ
couriers' COLLECTED = Σ in_hand + Σ HANDED_OVER + Σ SHORTAGE (custody_breaches, checked by
the billing.tasks.check_custody job and by the COD tests).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Min, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from billing.models import (
    ZERO,
    CashKind,
    CodEntry,
    CodKind,
    CourierCashAccount,
    CourierCashEntry,
    HubCashEntry,
    largest_value,
)
from core.formats import CENT, money
from core.functions import MoneySum
from core.writes import insert_rows

logger = logging.getLogger(__name__)

# The largest in_hand a cash account records (its column's bound).
MAX_IN_HAND = largest_value(CourierCashAccount, "in_hand")
# The kept columns of the account: the kind of entry each sums, and its sign.
KEPT = {
    "collected_total": (CashKind.COLLECTED, Decimal(1)),
    "handed_over_total": (CashKind.HANDED_OVER, Decimal(-1)),
    "courier_owes": (CashKind.SHORTAGE, Decimal(-1)),
}
KEPT_OF_KIND = {kind: (name, sign) for name, (kind, sign) in KEPT.items()}
CASH_FIELDS = (
    "account_id", "kind", "amount", "in_hand_after", "drop_id", "receipt", "note", "actor_id",
    "created_at",
)  # fmt: skip


class CashRefused(Exception):
    """A movement of a courier's cash that is not allowed; nothing was written."""


class HandOverStale(CashRefused):
    """The expected amount is not what the courier holds now: another cashier recorded a
    hand-over first, or the courier collected more since the form was shown."""


class CashInvalid(CashRefused):
    """A bad amount, a hand-over without its receipt, or a shortage without its note."""


@dataclass(frozen=True, slots=True)
class CashMove:
    kind: str
    amount: Decimal  # signed: + collected, − handed over or short
    drop_id: object = None
    receipt: str = ""
    note: str = ""
    actor_id: int | None = None


Key = tuple[str | None, str, str]  # (courier id or None: unattributed, environment, currency)


def _key(courier_id: object, environment: str, currency: str) -> Key:
    return (None if courier_id is None else str(courier_id), environment, currency)


def lock_cash_accounts(keys: Iterable[Key]) -> dict[Key, CourierCashAccount]:
    """Lock (and make on first use) the cash accounts of the keys, in one fixed order (the
    unattributed account first), so two callers locking overlapping sets never deadlock."""
    ordered = sorted(set(keys), key=lambda k: (k[0] is not None, k[0] or "", k[1], k[2]))
    CourierCashAccount.objects.bulk_create(
        [CourierCashAccount(courier_id=c, environment=e, currency=cur) for c, e, cur in ordered],
        ignore_conflicts=True,
    )
    locked = {}
    for courier_id, environment, currency in ordered:
        locked[(courier_id, environment, currency)] = (
            CourierCashAccount.objects.select_for_update().get(
                courier_id=courier_id, environment=environment, currency=currency
            )
        )
    return locked


def _append(account: CourierCashAccount, moves: list[CashMove], at: datetime) -> Decimal:
    """Append entries with running in_hand and set the account's in_hand and KEPT columns;
    the caller holds its lock. Refuses, writing nothing, if in_hand would go below zero."""
    in_hand, rows, added = account.in_hand, [], dict.fromkeys(KEPT, ZERO)
    for move in moves:
        in_hand += move.amount
        name, sign = KEPT_OF_KIND[move.kind]
        added[name] += sign * move.amount
        if in_hand < 0:
            raise CashInvalid(f"Only {money(account.in_hand)} is in hand.")
        if in_hand > MAX_IN_HAND:
            raise CashInvalid("More cash than an account can record.")
        rows.append((
            account.pk, move.kind, move.amount, in_hand, move.drop_id, move.receipt, move.note,
            move.actor_id, at,
        ))  # fmt: skip
    insert_rows(CourierCashEntry, CASH_FIELDS, rows)
    kept = {name: getattr(account, name) + amount for name, amount in added.items()}
    CourierCashAccount.objects.filter(pk=account.pk).update(in_hand=in_hand, updated_at=at, **kept)
    account.in_hand = in_hand
    for name, total in kept.items():
        setattr(account, name, total)
    return in_hand


@dataclass(frozen=True, slots=True)
class Collection:
    """One delivered drop's cash, as the COD ledger recorded it."""

    drop_id: object
    courier_id: object  # None: the order had no courier
    environment: str
    currency: str
    amount: Decimal


def record_collections(collections: list[Collection], at: datetime) -> None:
    """COLLECTED on each collecting courier's account (billing.cod.collect_cod, after the
    COD accounts' locks, in the DELIVERED move's transaction)."""
    by_key: dict[Key, list[CashMove]] = {}
    for c in collections:
        move = CashMove(CashKind.COLLECTED, c.amount, drop_id=c.drop_id)
        by_key.setdefault(_key(c.courier_id, c.environment, c.currency), []).append(move)
    if not by_key:
        return
    accounts = lock_cash_accounts(by_key)
    for key, moves in by_key.items():
        _append(accounts[key], moves, at)


def _money_in(value: object, what: str, *, zero_ok: bool = False) -> Decimal:
    """A money amount of at most two decimals (positive, or zero if zero_ok), or CashInvalid."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise CashInvalid(f"{what} is a money amount such as 12.50.") from None
    if not amount.is_finite():
        raise CashInvalid(f"{what} is a money amount such as 12.50.")
    low_ok = amount >= 0 if zero_ok else amount > 0
    if not low_ok or amount != amount.quantize(CENT):
        raise CashInvalid(
            f"{what} is a money amount such as 12.50, {'0' if zero_ok else '0.01'} or more."
        )
    if amount > MAX_IN_HAND:
        raise CashInvalid(f"{what} is more than an account can record.")
    return amount


@dataclass(frozen=True, slots=True)
class HandOver:
    handed_over: Decimal
    shortage: Decimal
    surplus: Decimal
    in_hand: Decimal
    courier_owes: Decimal


def _hand_over_moves(
    expected: Decimal, counted: Decimal, receipt: str, note: str, actor_id
) -> tuple[list[CashMove], Decimal]:
    """The courier's entries of a hand-over, and the hub's surplus."""
    received = min(counted, expected)
    moves = []
    if received:
        moves.append(CashMove(CashKind.HANDED_OVER, -received, receipt=receipt, note=note,
                              actor_id=actor_id))  # fmt: skip
    if counted < expected:
        if not note:
            raise CashInvalid("Counted less than expected: say why in a note.")
        moves.append(CashMove(CashKind.SHORTAGE, counted - expected, receipt=receipt, note=note,
                              actor_id=actor_id))  # fmt: skip
    return moves, max(counted - expected, ZERO)


@transaction.atomic
def hand_over(
    *,
    courier,
    currency: str,
    expected: object,
    counted: object,
    receipt: str,
    note: str = "",
    cashier=None,
    environment: str = "live",
) -> HandOver:
    """A courier hands their cash in at the hub: under the account's lock, `expected` must be
    what the courier holds (else HandOverStale: another cashier recorded first). Counted
    less: HANDED_OVER counted and SHORTAGE the rest (with a note; the courier owes it).
    Counted more: HANDED_OVER expected and the rest is the hub's SURPLUS."""
    expected = _money_in(expected, "Expected")
    counted = _money_in(counted, "Counted", zero_ok=True)
    receipt, note = receipt.strip(), note.strip()
    if not receipt:
        raise CashInvalid("A hand-over needs its receipt number.")
    if len(receipt) > 100 or len(note) > 200:
        raise CashInvalid("A receipt number is at most 100 characters, a note at most 200.")
    key = _key(getattr(courier, "pk", courier), environment, currency)
    account = lock_cash_accounts([key])[key]
    if account.in_hand != expected:
        raise HandOverStale(
            f"{money(account.in_hand)} is in hand now, not {money(expected)}: another cashier "
            "recorded a hand-over first, or the courier collected more. Count again."
        )
    at, actor_id = timezone.now(), getattr(cashier, "pk", None)
    moves, surplus = _hand_over_moves(expected, counted, receipt, note, actor_id)
    _append(account, moves, at)
    if surplus:
        HubCashEntry.objects.create(
            environment=environment, currency=currency, amount=surplus, courier_id=key[0],
            receipt=receipt, note=note, actor_id=actor_id, created_at=at,
        )  # fmt: skip
    return HandOver(min(counted, expected), max(expected - counted, ZERO), surplus,
                    account.in_hand, account.courier_owes)  # fmt: skip


def service_day(at: datetime) -> tuple[datetime, datetime]:
    """The start and end of `at`'s day in the service time zone."""
    local = at.astimezone(ZoneInfo(settings.TIME_ZONE))
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Breach:
    environment: str
    currency: str
    businesses_collected: Decimal
    couriers_collected: Decimal
    accounted: Decimal  # Σ in_hand + Σ HANDED_OVER + Σ SHORTAGE

    def __str__(self) -> str:
        return (
            f"{self.environment} {self.currency}: businesses' COLLECTED "
            f"{money(self.businesses_collected)}, couriers' COLLECTED "
            f"{money(self.couriers_collected)}, in hand + handed over + short "
            f"{money(self.accounted)}"
        )


def custody_breaches() -> list[Breach]:
    """Where the invariant does not hold, per environment and currency, summed from the
    entries themselves (not the kept columns) and the accounts' in_hand."""
    cod = CodEntry.objects.filter(kind=CodKind.COLLECTED).values(
        "account__environment", "drop__currency"
    )
    businesses = {
        (row["account__environment"], row["drop__currency"]): row["total"]
        for row in cod.order_by().annotate(total=MoneySum("amount"))
    }
    couriers: dict[tuple, list[Decimal]] = {}
    entries = CourierCashEntry.objects.values("account__environment", "account__currency")
    for row in entries.order_by().annotate(
        collected=MoneySum("amount", filter=Q(kind=CashKind.COLLECTED), default=ZERO),
        out=MoneySum("amount", filter=~Q(kind=CashKind.COLLECTED), default=ZERO),
    ):
        couriers[(row["account__environment"], row["account__currency"])] = [
            row["collected"],
            -row["out"],
            ZERO,
        ]
    held = CourierCashAccount.objects.values("environment", "currency")
    for row in held.order_by().annotate(total=MoneySum("in_hand")):
        couriers.setdefault((row["environment"], row["currency"]), [ZERO, ZERO, ZERO])[2] = row[
            "total"
        ]
    breaches = []
    for key in sorted(set(businesses) | set(couriers)):
        collected, out, in_hand = couriers.get(key, [ZERO, ZERO, ZERO])
        business = businesses.get(key, ZERO)
        if not business == collected == in_hand + out:
            breaches.append(Breach(*key, business, collected, in_hand + out))
    return breaches


def log_custody_breaches() -> int:
    """Log each breach of the invariant at ERROR (the periodic job); how many."""
    breaches = custody_breaches()
    for breach in breaches:
        logger.error("Cash custody does not add up: %s", breach)
    return len(breaches)


def cash_of(*, courier, environment: str, at: datetime) -> list[tuple[CourierCashAccount, list]]:
    """GET /courier/cash's figures: the courier's cash accounts of the environment, each with
    its entries of `at`'s day in the service time zone, newest first (drops joined)."""
    start, end = service_day(at)
    accounts = CourierCashAccount.objects.filter(courier=courier, environment=environment)
    today = CourierCashEntry.objects.filter(
        account__in=accounts, created_at__gte=start, created_at__lt=end
    ).select_related("drop__business")
    by_account: dict[int, list[CourierCashEntry]] = {}
    for entry in today.order_by("-id"):
        by_account.setdefault(entry.account_id, []).append(entry)
    return [(a, by_account.get(a.pk, [])) for a in accounts.order_by("currency")]


def oldest_in_hand() -> Subquery:
    """The time of an account's oldest COLLECTED entry since its last hand-over or shortage:
    how long the courier has held cash (the cash desk's order)."""
    last_out = (
        CourierCashEntry.objects.filter(account=OuterRef("account"))
        .exclude(kind=CashKind.COLLECTED)
        .order_by("-id")
        .values("id")[:1]
    )
    first = (
        CourierCashEntry.objects.filter(account=OuterRef("pk"), kind=CashKind.COLLECTED)
        .filter(id__gt=Coalesce(Subquery(last_out), Value(0)))
        .order_by()
        .values("account")
        .annotate(first=Min("created_at"))
        .values("first")
    )
    return Subquery(first)


def cash_desk(*, environment: str = "live") -> QuerySet[CourierCashAccount]:
    """The cash accounts with cash in hand, the longest held first (the console's desk)."""
    return (
        CourierCashAccount.objects.filter(environment=environment, in_hand__gt=0)
        .select_related("courier")
        .annotate(held_since=oldest_in_hand())
        .order_by("held_since", "pk")
    )


def day_report(*, environment: str, day_start: datetime, day_end: datetime) -> QuerySet:
    """Per cash account (courier and currency) with any entry on the day, or cash in hand:
    the day's collected, handed over, short and the hub's surplus from that courier (all
    positive), in_hand at the day's end, and courier_owes now. The console's end-of-day
    report (CSV)."""
    day = Q(entries__created_at__gte=day_start, entries__created_at__lt=day_end)

    def of_kind(kind: str, sign: Decimal):
        total = MoneySum("entries__amount", filter=day & Q(entries__kind=kind), default=ZERO)
        return total * sign

    at_end = (
        CourierCashEntry.objects.filter(account=OuterRef("pk"), created_at__lt=day_end)
        .order_by("-id")
        .values("in_hand_after")[:1]
    )
    surplus = (
        HubCashEntry.objects.filter(
            courier=OuterRef("courier"),
            environment=OuterRef("environment"),
            currency=OuterRef("currency"),
            created_at__gte=day_start,
            created_at__lt=day_end,
        )
        .order_by()
        .values("courier")
        .annotate(total=MoneySum("amount"))
        .values("total")
    )
    return (
        CourierCashAccount.objects.filter(environment=environment)
        .annotate(
            collected=of_kind(CashKind.COLLECTED, Decimal(1)),
            handed_over=of_kind(CashKind.HANDED_OVER, Decimal(-1)),
            short=of_kind(CashKind.SHORTAGE, Decimal(-1)),
            surplus=Coalesce(Subquery(surplus), Value(ZERO)),
            in_hand_at_end=Coalesce(Subquery(at_end), Value(ZERO)),
        )
        .filter(
            Q(in_hand_at_end__gt=0) | Q(collected__gt=0) | Q(handed_over__gt=0) | Q(short__gt=0)
        )
        .select_related("courier")
        .order_by("courier__name", "currency", "pk")
    )


def over_cash_limit(courier: OuterRef | object) -> Exists:
    """Whether the courier (an OuterRef to a courier's pk, or an id) holds more live cash than
    COURIER_CASH_LIMIT in any currency: offered no COD order until they hand over
    (docs/contract.md §23; the dispatcher, hand assignment and the board ask)."""
    return Exists(
        CourierCashAccount.objects.filter(
            courier_id=courier, environment="live", in_hand__gt=settings.COURIER_CASH_LIMIT
        )
    )


def couriers_over_cash_limit(courier_ids: Iterable[int]) -> set[int]:
    """Of these couriers, those over COURIER_CASH_LIMIT: one query."""
    return set(
        CourierCashAccount.objects.filter(
            courier_id__in=list(courier_ids),
            environment="live",
            in_hand__gt=settings.COURIER_CASH_LIMIT,
        ).values_list("courier_id", flat=True)
    )


def cash_limit_refusal(courier) -> str:
    """The sentence the board and hand assignment say of a courier over the limit."""
    return (
        f"{courier} holds more cash than the limit ({money(settings.COURIER_CASH_LIMIT)}): "
        "no cash-on-delivery order until they hand it over at the cash desk. Nothing changed."
    )
