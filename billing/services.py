"""Money: pricing, wallet debits and credits, invoice accruals. Exact Decimal throughout."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import BillingModel, Business
from billing.models import (
    MAX_BALANCE,
    MAX_OWED,
    ZERO,
    EntryKind,
    Invoice,
    InvoiceLine,
    InvoiceStatus,
    LedgerEntry,
    PricingPlan,
    Wallet,
)
from core.formats import CENT, money
from core.reads import instances_compiled_once
from core.writes import insert_rows
from events.models import EventType
from events.services import NewEvent, record_events, record_many
from fleet.models import VehicleType


class BillingError(Exception):
    """A money operation that would break an invariant (e.g. a negative balance)."""


def lock_account(*, business: Business, environment: str) -> Wallet:
    """Take the account lock (the wallet row) for the rest of the transaction. Every batch
    takes it: on PostgreSQL its SQL is compiled once (core.reads.instances_compiled_once)."""

    def locking():
        return Wallet.objects.select_for_update().filter(business=business, environment=environment)

    found = instances_compiled_once(
        Wallet, ("lock the wallet",), [business.pk, environment], locking
    )
    if not found:
        raise Wallet.DoesNotExist(f"No {environment} wallet for {business.pk}.")
    (wallet,) = found
    wallet.business = business  # already loaded: append_entries reads its threshold
    return wallet


def lock_accounts(accounts: Iterable[tuple]) -> None:
    """Take the locks of several accounts ((business_id, environment) pairs) in one fixed
    order, so two callers locking overlapping sets never deadlock."""
    for business_id, environment in sorted(set(accounts)):
        Wallet.objects.select_for_update().filter(
            business_id=business_id, environment=environment
        ).values_list("pk", flat=True).first()


class WalletNow(NamedTuple):
    balance: Decimal
    owed: Decimal


def read_wallet(*, business: Business, environment: str) -> WalletNow:
    """The wallet's balance and what it owes now, without a lock: a snapshot to decide against."""
    return WalletNow(
        *Wallet.objects.values_list("balance", "owed").get(
            business=business, environment=environment
        )
    )


def price_for(plan: PricingPlan, km: float) -> Decimal:
    """base_fee + per_km_fee × max(0, km − included_km), rounded half-up to cents."""
    # repr() gives the shortest decimal that round-trips the float, so no binary noise.
    billable = max(Decimal(0), Decimal(repr(km)) - plan.included_km)
    return (plan.base_fee + plan.per_km_fee * billable).quantize(CENT, rounding=ROUND_HALF_UP)


def invoice_period(moment: datetime) -> str:
    """The invoice month of a moment: calendar month in the service time zone."""
    return moment.astimezone(ZoneInfo(settings.TIME_ZONE)).strftime("%Y-%m")


@dataclass(frozen=True, slots=True)
class Movement:
    """One ledger entry to append: signed amount, what it is for, who made it.

    `may_owe` marks a charge after creation (a return fee): what the balance cannot cover
    is recorded as owed instead of refused (docs/contract.md §19).
    """

    kind: str
    amount: Decimal
    drop_id: object = None
    actor_id: int | None = None
    note: str = ""
    batch_id: object = None
    may_owe: bool = False


LEDGER_FIELDS = (
    "wallet_id", "kind", "amount", "balance_after", "drop_id", "actor_id", "note", "created_at",
    "batch_id", "owed_change", "owed_after",
)  # fmt: skip


def _entries_of(move: Movement, balance: Decimal, owed: Decimal) -> list[tuple[Movement, Decimal]]:
    """The entries a movement becomes, each with its owed change (docs/contract.md §19).

    A charge that may owe takes what the balance covers and owes the rest; a credit while
    something is owed is followed by an OWED_PAYMENT of as much of it as the credit covers.
    """
    if move.may_owe and move.amount < 0 and -move.amount > balance:
        return [(replace(move, amount=-balance), -move.amount - balance)]
    if move.amount > 0 and owed > 0:
        paid = min(move.amount, owed)
        payment = Movement(EntryKind.OWED_PAYMENT, -paid, note=f"Paid from this {move.kind}")
        return [(move, ZERO), (payment, -paid)]
    return [(move, ZERO)]


def append_entries(*, wallet: Wallet, movements: list[Movement], at: datetime) -> Decimal:
    """The one way money moves: append entries with running balances, then set the balance.

    The caller holds the account lock (lock_account). Refuses, writing nothing, if the
    balance would go below zero at any entry; the database CHECKs say the same. Each entry
    also carries its change of what is owed, so balance and owed are each a sum of entries.
    """
    balance, owed, rows = wallet.balance, wallet.owed, []
    for requested in movements:
        for move, owed_change in _entries_of(requested, balance, owed):
            balance, owed = balance + move.amount, owed + owed_change
            _check_bounds(balance, owed)
            rows.append((
                wallet.pk, move.kind, move.amount, balance, move.drop_id, move.actor_id,
                move.note, at, move.batch_id, owed_change, owed,
            ))  # fmt: skip
    insert_rows(LedgerEntry, LEDGER_FIELDS, rows)
    Wallet.objects.filter(pk=wallet.pk).update(balance=balance, owed=owed, updated_at=at)
    before, wallet.balance, wallet.owed = wallet.balance, balance, owed
    _tell_if_low(wallet, before, at)
    return balance


def _check_bounds(balance: Decimal, owed: Decimal) -> None:
    if balance < 0:
        raise BillingError(f"The balance would become negative ({balance}).")
    if balance > MAX_BALANCE:
        raise BillingError(
            f"The balance would become {balance}, more than a wallet can hold "
            f"({MAX_BALANCE}): nothing was recorded."
        )
    if owed > MAX_OWED:
        raise BillingError(f"What is owed would become {owed}, more than a wallet can record.")


def _tell_if_low(wallet: Wallet, before: Decimal, at: datetime) -> None:
    """wallet.balance_low once per crossing: from at or above the threshold to below it."""
    threshold = wallet.business.low_balance_threshold
    if threshold is None or not before >= threshold > wallet.balance:
        return
    record_events(
        business_id=wallet.business_id,
        environment=wallet.environment,
        event_type=EventType.WALLET_BALANCE_LOW,
        payloads=[
            {
                "balance": money(wallet.balance),
                "threshold": money(threshold),
                "currency": settings.CURRENCY,
            }
        ],
        at=at,
    )


@dataclass
class Till:
    """Charges one batch's accepted drops on one account, then settles them in bulk.

    Opened inside the batch transaction. Opening locks the environment's wallet row
    (SELECT ... FOR UPDATE): a concurrent batch of the same account waits here until we
    commit, so it sees our debits and our drops. A row lock rather than a conditional
    UPDATE because the decision for each drop depends on what the earlier drops spent,
    and the duplicate-id check must also see the other batch's committed drops.

    A wallet is charged one ORDER_DEBIT for the whole batch, naming the batch; each drop
    carries its own price, so the batch's drops' prices add up to the entry (docs/decisions.md).
    An invoice gets one line per drop, as its statement lists them.
    """

    business: Business
    environment: str
    wallet: Wallet
    plan: PricingPlan
    charges: list[tuple[object, Decimal]] = field(default_factory=list)

    @property
    def is_wallet(self) -> bool:
        return self.business.billing_model == BillingModel.WALLET

    def record(self, drop_id, price: Decimal) -> None:
        self.charges.append((drop_id, price))

    def settle(self, *, batch_id, at: datetime) -> None:
        """Write the recorded charges: one ledger debit and the balance, or invoice lines."""
        if not self.charges:
            return
        if self.is_wallet:
            total = sum((price for _, price in self.charges), Decimal("0.00"))
            count = len(self.charges)
            debit = Movement(
                EntryKind.ORDER_DEBIT,
                -total,
                batch_id=batch_id,
                note=f"{count} drop{'s' if count != 1 else ''}",
            )
            append_entries(wallet=self.wallet, movements=[debit], at=at)
        else:
            self._accrue_invoice(at)

    def _accrue_invoice(self, at: datetime) -> None:
        invoice = open_invoice(business=self.business, environment=self.environment, at=at)
        total = sum((price for _, price in self.charges), Decimal("0.00"))
        insert_rows(
            InvoiceLine,
            ("invoice_id", "drop_id", "amount", "description", "created_at"),
            [(invoice.pk, drop_id, price, "Delivery", at) for drop_id, price in self.charges],
        )
        Invoice.objects.filter(pk=invoice.pk).update(accrued=F("accrued") + total)


def open_till(*, business: Business, environment: str) -> Till:
    wallet = lock_account(business=business, environment=environment)
    plan = business.pricing_plan
    if plan is None:
        raise BillingError("The business has no pricing plan.")
    return Till(business, environment, wallet, plan)


def open_invoice(*, business: Business, environment: str, at: datetime) -> Invoice:
    """The OPEN invoice of the month of `at`; the caller holds the account lock."""
    invoice, _ = Invoice.objects.get_or_create(
        business=business, environment=environment, period=invoice_period(at)
    )
    return invoice


def ensure_wallets(*, business: Business) -> None:
    Wallet.objects.bulk_create(
        [Wallet(business=business, environment=env) for env in ("live", "sandbox")],
        ignore_conflicts=True,
    )


@transaction.atomic
def post_wallet_entry(
    *,
    business: Business,
    environment: str,
    amount: Decimal,
    kind: str = EntryKind.TOP_UP,
    actor=None,
    note: str = "",
    drop=None,
) -> LedgerEntry:
    """Credit (positive) or debit (negative) a wallet by appending a ledger entry."""
    amount = Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)
    if kind == EntryKind.TOP_UP and amount <= 0:
        raise BillingError("A top-up must be positive.")
    wallet = lock_account(business=business, environment=environment)
    move = Movement(kind, amount, getattr(drop, "pk", None), getattr(actor, "pk", None), note)
    append_entries(wallet=wallet, movements=[move], at=timezone.now())
    # Its own entry: a credit while something is owed is followed by an OWED_PAYMENT.
    return wallet.entries.filter(kind=kind).order_by("-id").first()


def set_pricing(
    *,
    business: Business,
    base_fee: Decimal,
    per_km_fee: Decimal,
    included_km: Decimal = Decimal("0"),
) -> PricingPlan:
    plan = business.pricing_plan or PricingPlan(name=f"{business.name} plan")
    plan.base_fee, plan.per_km_fee, plan.included_km = base_fee, per_km_fee, included_km
    plan.save()
    if business.pricing_plan_id != plan.pk:
        business.pricing_plan = plan
        business.save(update_fields=["pricing_plan"])
    return plan


def account_pricing(
    business: Business, multipliers: Iterable[tuple[str, Decimal]]
) -> dict[str, object]:
    """GET /account's head: the billing model, the currency and the pricing, with the
    active vehicles' (code, multiplier) as `multipliers` gives them."""
    plan = business.pricing_plan
    return {
        "billing_model": business.billing_model,
        "currency": settings.CURRENCY,
        "pricing": {
            "base_fee": money(plan.base_fee) if plan else None,
            "per_km_fee": money(plan.per_km_fee) if plan else None,
            "included_km": str(plan.included_km) if plan else None,
            "return_fee_percent": str(plan.return_fee_percent) if plan else None,
            "cod_fee_percent": str(plan.cod_fee_percent) if plan else None,
            # What a pickup group's vehicle multiplies the delivery price by (docs/contract.md §18).
            "vehicle_multipliers": {code: str(multiplier) for code, multiplier in multipliers},
        },
    }


def account_summary(*, business: Business, environment: str, at: datetime) -> dict:
    """The billing part of GET /account."""
    multipliers = VehicleType.objects.filter(active=True).values_list("code", "price_multiplier")
    summary = account_pricing(business, multipliers)
    if business.billing_model == BillingModel.WALLET:
        wallet = Wallet.objects.get(business=business, environment=environment)
        summary["wallet"] = {"balance": money(wallet.balance), "owed": money(wallet.owed)}
    else:
        period = invoice_period(at)
        invoice = Invoice.objects.filter(
            business=business, environment=environment, period=period
        ).first()
        summary["invoice"] = {
            "period": period,
            "accrued": money(invoice.accrued if invoice else Decimal("0")),
            "status": invoice.status if invoice else InvoiceStatus.OPEN,
        }
    return summary


def sandbox_top_up(*, business: Business, amount: Decimal, actor=None) -> LedgerEntry:
    """Self-serve credit of the sandbox wallet (play money; live top-ups are operators')."""
    amount = Decimal(amount)
    # NaN would raise InvalidOperation on comparison instead of a refusal.
    if not amount.is_finite() or not Decimal("0.01") <= amount <= Decimal("10000"):
        raise BillingError("A sandbox top-up is between 0.01 and 10000.00.")
    return post_wallet_entry(
        business=business,
        environment="sandbox",
        amount=amount,
        kind=EntryKind.TOP_UP,
        actor=actor,
        note="Sandbox self top-up",
    )


def close_invoices(*, before_period: str, today, only=None) -> list[Invoice]:
    """Close every OPEN invoice of a month before `before_period` (YYYY-MM).

    Live invoices are ISSUED with due date = issue date + the business's net days;
    sandbox invoices accrue the same way but are never billed: they become CLOSED.
    `only` (invoice ids) limits it to an operator's selection.
    """
    from datetime import timedelta

    invoices = Invoice.objects.filter(status=InvoiceStatus.OPEN, period__lt=before_period)
    if only is not None:
        invoices = invoices.filter(pk__in=list(only))
    closed = []
    with transaction.atomic():
        for invoice in invoices.select_for_update().select_related("business"):
            if invoice.environment == "live":
                invoice.status = InvoiceStatus.ISSUED
                invoice.issued_on = today
                invoice.due_on = today + timedelta(days=invoice.business.net_days)
            else:
                invoice.status = InvoiceStatus.CLOSED
            invoice.save(update_fields=["status", "issued_on", "due_on"])
            closed.append(invoice)
        issued = [i for i in closed if i.status == InvoiceStatus.ISSUED]
        record_many([_invoice_issued(invoice) for invoice in issued], at=timezone.now())
    return closed


def _invoice_issued(invoice: Invoice) -> NewEvent:
    data = {
        "invoice_id": str(invoice.pk),
        "period": invoice.period,
        "amount": money(invoice.accrued),
        "currency": settings.CURRENCY,
        "issued_on": invoice.issued_on.isoformat(),
        "due_on": invoice.due_on.isoformat(),
    }
    return NewEvent(invoice.business_id, invoice.environment, EventType.INVOICE_ISSUED, data)


def mark_invoice_paid(*, invoice: Invoice, at: datetime) -> None:
    if invoice.status != InvoiceStatus.ISSUED:
        raise BillingError("Only an issued invoice can be marked paid.")
    Invoice.objects.filter(pk=invoice.pk, status=InvoiceStatus.ISSUED).update(
        status=InvoiceStatus.PAID, paid_at=at
    )
    invoice.status, invoice.paid_at = InvoiceStatus.PAID, at


def refund_drops(*, business: Business, environment: str, drops: list, at: datetime) -> None:
    """Give back what cancelled drops were charged: REFUND entries, or negative invoice lines.

    Runs inside the cancelling transaction, which already holds the account lock.
    """
    charged = [d for d in drops if d.price]
    if not charged:
        return
    if business.billing_model == BillingModel.WALLET:
        wallet = lock_account(business=business, environment=environment)
        movements = [Movement(EntryKind.REFUND, d.price, d.pk, note="Cancelled") for d in charged]
        append_entries(wallet=wallet, movements=movements, at=at)
        return
    # Reverse each accrual on its own invoice while it is open, else on this month's.
    accrued_on = dict(
        InvoiceLine.objects.filter(drop__in=charged, amount__gt=0).values_list(
            "drop_id", "invoice_id"
        )
    )
    open_ids = set(
        Invoice.objects.filter(
            pk__in=set(accrued_on.values()), status=InvoiceStatus.OPEN
        ).values_list("pk", flat=True)
    )
    current = None
    lines, totals = [], {}
    for drop in charged:
        invoice_id = accrued_on.get(drop.pk)
        if invoice_id not in open_ids:
            current = current or open_invoice(business=business, environment=environment, at=at)
            invoice_id = current.pk
        lines.append(
            InvoiceLine(
                invoice_id=invoice_id,
                drop_id=drop.pk,
                amount=-drop.price,
                description="Cancelled delivery",
            )
        )
        totals[invoice_id] = totals.get(invoice_id, Decimal("0")) + drop.price
    InvoiceLine.objects.bulk_create(lines)
    for invoice_id, total in totals.items():
        Invoice.objects.filter(pk=invoice_id).update(accrued=F("accrued") - total)


def return_fee(plan: PricingPlan | None, price: Decimal | None) -> Decimal:
    """return_fee_percent of the plan, of a drop's delivery price, half-up to cents."""
    if plan is None or not price:
        return ZERO
    return (price * plan.return_fee_percent / 100).quantize(CENT, rounding=ROUND_HALF_UP)


def charge_return_fees(*, drops: list, at: datetime) -> None:
    """RETURN_FEE for drops that came back to their pickup (docs/contract.md §19).

    Runs in the transaction of the move to RETURNED. Each account is locked (its movers took
    the lock before the drops' rows, tracking.services; taking it again is free); a wallet
    is charged what its balance covers and owes the rest, an invoiced account gets a line.
    """
    by_account: dict[tuple, list] = {}
    for drop in drops:
        by_account.setdefault((drop.business_id, drop.environment), []).append(drop)
    businesses = Business.objects.select_related("pricing_plan").in_bulk(
        [business_id for business_id, _ in by_account]
    )
    for (business_id, environment), returned in sorted(by_account.items()):
        business = businesses[business_id]
        # Of the delivery price: a COD fee inside `price` is not part of it (§18).
        fees = [(d.pk, return_fee(business.pricing_plan, d.price - d.cod_fee)) for d in returned]
        fees = [(pk, fee) for pk, fee in fees if fee]
        if not fees:
            continue
        wallet = lock_account(business=business, environment=environment)
        if business.billing_model == BillingModel.WALLET:
            movements = [
                Movement(EntryKind.RETURN_FEE, -fee, pk, note="Returned", may_owe=True)
                for pk, fee in fees
            ]
            append_entries(wallet=wallet, movements=movements, at=at)
        else:
            invoice = open_invoice(business=business, environment=environment, at=at)
            insert_rows(
                InvoiceLine,
                ("invoice_id", "drop_id", "amount", "description", "created_at"),
                [(invoice.pk, pk, fee, "Return fee", at) for pk, fee in fees],
            )
            total = sum((fee for _, fee in fees), ZERO)
            Invoice.objects.filter(pk=invoice.pk).update(accrued=F("accrued") + total)
