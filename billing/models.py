"""Pricing plans, prepaid wallets with an append-only ledger, and monthly invoices."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from accounts.models import Environment

MONEY = {"max_digits": 12, "decimal_places": 2}
TOTAL = {"max_digits": 16, "decimal_places": 2}  # a running total of MONEY amounts
ZERO = Decimal("0.00")


def largest_value(model: type[models.Model], field_name: str) -> Decimal:
    """The largest value a DecimalField's column holds (9999999999.99 for MONEY): forms and
    checks derive their bounds from the column, so a value past it is refused, not a 500."""
    field = model._meta.get_field(field_name)
    places = Decimal(10) ** -field.decimal_places
    return Decimal(10) ** (field.max_digits - field.decimal_places) - places


class PricingPlan(models.Model):
    """price = base_fee + per_km_fee × max(0, km − included_km), half-up to cents."""

    name = models.CharField(max_length=100)
    base_fee = models.DecimalField(**MONEY)
    per_km_fee = models.DecimalField(**MONEY)
    included_km = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0"))
    # What a returned drop costs, as a share of its delivery price (docs/contract.md §19).
    return_fee_percent = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("50.00"),
        db_default=Decimal("50.00"),
        help_text="Charged when a failed drop is back at its pickup (RETURNED), in % of its price.",
    )
    # The fee of a cash-on-delivery drop, as a share of the cash to collect (docs/contract.md §18).
    cod_fee_percent = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("1.00"),
        db_default=Decimal("1.00"),
        help_text="Added to a COD drop's price, in % of the cash to collect.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(base_fee__gte=0) & Q(per_km_fee__gte=0) & Q(included_km__gte=0),
                name="pricing_plan_non_negative",
            ),
            models.CheckConstraint(
                condition=Q(return_fee_percent__gte=0) & Q(return_fee_percent__lte=100),
                name="pricing_plan_return_fee_percent_0_100",
            ),
            models.CheckConstraint(
                condition=Q(cod_fee_percent__gte=0) & Q(cod_fee_percent__lte=100),
                name="pricing_plan_cod_fee_percent_0_100",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.base_fee} + {self.per_km_fee}/km over {self.included_km} km"


class Wallet(models.Model):
    """One per business and environment. Its row lock also serialises that account's batches.

    `owed` is what a charge after creation (a return fee) could not take from the balance:
    the next credit pays it first, and while it is above zero new drops are refused
    (docs/contract.md §19). balance = sum(entries.amount), owed = sum(entries.owed_change).
    """

    business = models.ForeignKey(
        "accounts.Business", on_delete=models.CASCADE, related_name="wallets"
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    balance = models.DecimalField(**MONEY, default=Decimal("0.00"))
    owed = models.DecimalField(**MONEY, default=Decimal("0.00"), db_default=Decimal("0.00"))
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment"], name="wallet_per_environment"
            ),
            models.CheckConstraint(condition=Q(balance__gte=0), name="wallet_balance_non_negative"),
            models.CheckConstraint(condition=Q(owed__gte=0), name="wallet_owed_non_negative"),
        ]
        permissions = [("adjust_wallet", "Can top up and adjust a wallet")]

    def __str__(self) -> str:
        return f"{self.business} {self.environment} wallet"


class EntryKind(models.TextChoices):
    TOP_UP = "TOP_UP", _("Top-up")
    ORDER_DEBIT = "ORDER_DEBIT", _("Order debit")
    REFUND = "REFUND", _("Refund")
    ADJUSTMENT = "ADJUSTMENT", _("Adjustment")
    RETURN_FEE = "RETURN_FEE", _("Return fee")
    OWED_PAYMENT = "OWED_PAYMENT", _("Owed paid")


class LedgerEntry(models.Model):
    """A signed movement of a wallet: a new row, never an edit.

    balance = sum(amount) and owed = sum(owed_change). A charge after creation takes what
    the balance covers as `amount` and records the rest as `owed_change` (its cost is
    owed_change - amount); an OWED_PAYMENT moves money from the balance to what is owed
    (amount = owed_change, both negative).
    """

    wallet = models.ForeignKey(Wallet, on_delete=models.PROTECT, related_name="entries")
    kind = models.CharField(max_length=12, choices=EntryKind.choices)
    amount = models.DecimalField(**MONEY)
    balance_after = models.DecimalField(**MONEY)
    owed_change = models.DecimalField(**MONEY, default=Decimal("0.00"), db_default=Decimal("0.00"))
    owed_after = models.DecimalField(**MONEY, default=Decimal("0.00"), db_default=Decimal("0.00"))
    # A batch's drops are charged by one ORDER_DEBIT for the batch, their prices on the
    # drops (docs/decisions.md); a refund names its drop. Entries written before migration
    # 0003 debit one drop each.
    drop = models.ForeignKey("orders.Drop", null=True, blank=True, on_delete=models.PROTECT)
    batch = models.ForeignKey(
        "orders.Batch",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger_entries",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(balance_after__gte=0), name="ledger_balance_after_non_negative"
            ),
            models.CheckConstraint(
                condition=Q(owed_after__gte=0), name="ledger_owed_after_non_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} → {self.balance_after}"


# A balance is stored twice (the wallet's, an entry's balance_after): it must fit both.
MAX_BALANCE = min(largest_value(Wallet, "balance"), largest_value(LedgerEntry, "balance_after"))
MAX_OWED = min(largest_value(Wallet, "owed"), largest_value(LedgerEntry, "owed_after"))


class InvoiceStatus(models.TextChoices):
    OPEN = "OPEN", _("Open")
    ISSUED = "ISSUED", _("Issued")
    PAID = "PAID", _("Paid")
    CLOSED = "CLOSED", _("Closed (sandbox, not billed)")


class Invoice(models.Model):
    business = models.ForeignKey(
        "accounts.Business", on_delete=models.CASCADE, related_name="invoices"
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    period = models.CharField(max_length=7, help_text="YYYY-MM in the service time zone")
    status = models.CharField(
        max_length=8, choices=InvoiceStatus.choices, default=InvoiceStatus.OPEN
    )
    accrued = models.DecimalField(**MONEY, default=Decimal("0.00"))
    issued_on = models.DateField(null=True, blank=True)
    due_on = models.DateField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-period"]
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment", "period"], name="invoice_per_month"
            )
        ]
        permissions = [
            ("issue_invoice", "Can issue invoices of ended months"),
            ("mark_invoice_paid", "Can mark invoices paid"),
        ]

    def __str__(self) -> str:
        return f"{self.business} {self.environment} {self.period}"


class InvoiceLine(models.Model):
    """One accrual (positive) or its reversal (negative). accrued = sum(amount)."""

    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="lines")
    drop = models.ForeignKey("orders.Drop", null=True, blank=True, on_delete=models.PROTECT)
    amount = models.DecimalField(**MONEY)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.description} {self.amount}"


class CodKind(models.TextChoices):
    COLLECTED = "COLLECTED", _("Collected")
    REMITTED = "REMITTED", _("Remitted")
    CREDITED_TO_WALLET = "CREDITED_TO_WALLET", _("Credited to wallet")


class CodAccount(models.Model):
    """The cash couriers collected for one business in one environment (docs/contract.md §18).

    Separate from the wallet: `owed` is what we hold for the business, the sum of its COD
    entries, never below zero. Its row is the COD lock: a collection, a payout and a credit
    to the wallet of one account take it in turn. Made on first use.
    """

    business = models.ForeignKey(
        "accounts.Business", on_delete=models.CASCADE, related_name="cod_accounts"
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    owed = models.DecimalField(**MONEY, default=Decimal("0.00"), db_default=Decimal("0.00"))
    # The entries' sums by kind (positive), kept with owed by the one writer of entries
    # (billing.cod._append), so that GET /account reads three columns, not every entry ever
    # written (docs/decisions.md, "COD totals are kept on the account, not summed per
    # call"). Wider than MONEY: they only grow.
    collected_total = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    remitted_total = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    credited_total = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "COD account"
        constraints = [
            models.UniqueConstraint(
                fields=["business", "environment"], name="cod_account_per_environment"
            ),
            models.CheckConstraint(condition=Q(owed__gte=0), name="cod_owed_non_negative"),
            models.CheckConstraint(
                condition=Q(collected_total__gte=0, remitted_total__gte=0, credited_total__gte=0),
                name="cod_totals_non_negative",
            ),
        ]
        permissions = [("remit_cod", "Can record a payout of collected cash (COD)")]

    def __str__(self) -> str:
        return f"{self.business} {self.environment} COD"


class CodEntry(models.Model):
    """A signed movement of a COD account: a new row, never an edit. owed = sum(amount).

    COLLECTED (+, one per delivered COD drop: a partial unique index), REMITTED (−, an
    operator's payout with its reference), CREDITED_TO_WALLET (−, with the wallet's TOP_UP).
    """

    account = models.ForeignKey(CodAccount, on_delete=models.PROTECT, related_name="entries")
    kind = models.CharField(max_length=20, choices=CodKind.choices)
    amount = models.DecimalField(**MONEY)
    owed_after = models.DecimalField(**MONEY)
    drop = models.ForeignKey("orders.Drop", null=True, blank=True, on_delete=models.PROTECT)
    # COLLECTED: the courier who took the cash (docs/contract.md §23); none when the drop's
    # order had no courier (an operator's move), or for entries of other kinds.
    courier = models.ForeignKey(
        "couriers.Driver", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reference = models.CharField(max_length=100, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]
        verbose_name = "COD entry"
        verbose_name_plural = "COD entries"
        indexes = [models.Index(fields=["account", "created_at"], name="cod_entry_when")]
        constraints = [
            models.CheckConstraint(
                condition=Q(owed_after__gte=0), name="cod_owed_after_non_negative"
            ),
            models.CheckConstraint(
                condition=(Q(kind=CodKind.COLLECTED) & Q(amount__gt=0) & Q(drop__isnull=False))
                | (~Q(kind=CodKind.COLLECTED) & Q(amount__lt=0)),
                name="cod_entry_sign_by_kind",
            ),
            models.UniqueConstraint(
                fields=["drop"],
                condition=Q(kind=CodKind.COLLECTED),
                name="cod_collected_once_per_drop",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} → {self.owed_after}"


class CashKind(models.TextChoices):
    COLLECTED = "COLLECTED", _("Collected")
    HANDED_OVER = "HANDED_OVER", _("Handed over")
    SHORTAGE = "SHORTAGE", _("Shortage")


class CourierCashAccount(models.Model):
    """The cash one courier holds in one environment and currency (docs/contract.md §23).

    `in_hand` is the sum of its append-only entries, never below zero; `courier_owes` the
    sum of its shortages (positive): the courier's debt. No courier: the unattributed
    account, cash collected on orders that had no courier (an operator's move), which the
    cash desk shows. Its row is the custody lock (billing.custody). Made on first use.
    """

    courier = models.ForeignKey(
        "couriers.Driver",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="cash_accounts",
    )
    environment = models.CharField(max_length=10, choices=Environment.choices)
    currency = models.CharField(max_length=3)
    in_hand = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    # The entries' sums by kind (positive), kept with in_hand by billing.custody._append.
    collected_total = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    handed_over_total = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    courier_owes = models.DecimalField(**TOTAL, default=ZERO, db_default=ZERO)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "courier cash account"
        verbose_name_plural = "cash desk"
        constraints = [
            models.UniqueConstraint(
                fields=["courier", "environment", "currency"],
                condition=Q(courier__isnull=False),
                name="courier_cash_account_once",
            ),
            models.UniqueConstraint(
                fields=["environment", "currency"],
                condition=Q(courier__isnull=True),
                name="unattributed_cash_account_once",
            ),
            models.CheckConstraint(condition=Q(in_hand__gte=0), name="cash_in_hand_non_negative"),
            models.CheckConstraint(
                condition=Q(collected_total__gte=0, handed_over_total__gte=0, courier_owes__gte=0),
                name="cash_totals_non_negative",
            ),
        ]
        permissions = [("record_hand_over", "Can record a courier's cash hand-over (Cashier)")]

    def __str__(self) -> str:
        return f"{self.courier or 'Unattributed'} {self.environment} {self.currency} cash"


class CourierCashEntry(models.Model):
    """A signed movement of a courier's cash: a new row, never an edit. in_hand = sum(amount).

    COLLECTED (+, one per delivered COD drop, with the COD ledger's COLLECTED), HANDED_OVER
    (−, at the hub, with the cashier's receipt), SHORTAGE (−, counted less than expected:
    the difference, with a note; the courier owes it).
    """

    account = models.ForeignKey(
        CourierCashAccount, on_delete=models.PROTECT, related_name="entries"
    )
    kind = models.CharField(max_length=20, choices=CashKind.choices)
    amount = models.DecimalField(**MONEY)
    in_hand_after = models.DecimalField(**TOTAL)
    drop = models.ForeignKey(
        "orders.Drop", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    receipt = models.CharField(max_length=100, blank=True)
    note = models.CharField(max_length=200, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]
        verbose_name = "courier cash entry"
        verbose_name_plural = "courier cash entries"
        indexes = [models.Index(fields=["account", "created_at"], name="cash_entry_when")]
        constraints = [
            models.CheckConstraint(
                condition=Q(in_hand_after__gte=0), name="cash_in_hand_after_non_negative"
            ),
            models.CheckConstraint(
                condition=(Q(kind=CashKind.COLLECTED) & Q(amount__gt=0) & Q(drop__isnull=False))
                | (Q(kind=CashKind.HANDED_OVER) & Q(amount__lt=0) & ~Q(receipt=""))
                | (Q(kind=CashKind.SHORTAGE) & Q(amount__lt=0) & ~Q(note="")),
                name="cash_entry_sign_by_kind",
            ),
            models.UniqueConstraint(
                fields=["drop"],
                condition=Q(kind=CashKind.COLLECTED),
                name="cash_collected_once_per_drop",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} → {self.in_hand_after}"


class HubCashEntry(models.Model):
    """Cash the hub holds that is no courier's: SURPLUS, counted more than a courier was
    expected to bring (docs/contract.md §23). A new row, never an edit."""

    environment = models.CharField(max_length=10, choices=Environment.choices)
    currency = models.CharField(max_length=3)
    kind = models.CharField(max_length=20, choices=[("SURPLUS", "Surplus")], default="SURPLUS")
    amount = models.DecimalField(**MONEY)
    courier = models.ForeignKey(
        "couriers.Driver", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    receipt = models.CharField(max_length=100)
    note = models.CharField(max_length=200, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]
        verbose_name = "hub cash entry"
        verbose_name_plural = "hub cash entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="SURPLUS", amount__gt=0), name="hub_cash_surplus_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount}"
