"""Operator console for money: plans, read-only wallets and ledgers, invoices."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from billing.models import Invoice, InvoiceLine, InvoiceStatus, LedgerEntry, PricingPlan, Wallet
from billing.services import BillingError, close_invoices, invoice_period, mark_invoice_paid
from console.columns import EMPTY, LedgerInline, ServiceTimesAdmin, ServiceTimesInline, cut, when
from console.history import record, record_each
from core.admin import GatedActionsAdmin, ReadOnlyAdmin


@admin.register(PricingPlan)
class PricingPlanAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    list_display = [
        "name", "base_fee", "per_km_fee", "included_km", "return_fee_percent", "cod_fee_percent",
    ]  # fmt: skip


class LedgerEntryInline(LedgerInline):
    model = LedgerEntry
    fields = [
        "created_at", "kind", "amount", "balance_after", "owed_change", "owed_after", "drop",
        "batch", "actor", "note",
    ]  # fmt: skip


@admin.register(Wallet)
class WalletAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    list_display = ["business_column", "environment", "balance_column", "owed_column", "updated"]
    list_filter = ["environment"]
    list_select_related = ["business"]
    search_fields = ["business__name"]
    inlines = [LedgerEntryInline]

    @admin.display(description="Business", ordering="business__name")
    def business_column(self, wallet: Wallet) -> SafeString | str:
        return cut(wallet.business.name, 40)

    @admin.display(description="Balance", ordering="balance")
    def balance_column(self, wallet: Wallet) -> str:
        return f"{wallet.balance} {settings.CURRENCY}"

    @admin.display(description="Owed", ordering="owed")
    def owed_column(self, wallet: Wallet) -> str:
        """What return fees left unpaid: the next top-up pays it first (docs/contract.md §19)."""
        return f"{wallet.owed} {settings.CURRENCY}"

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, wallet: Wallet) -> SafeString | str:
        return when(wallet.updated_at)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    # Short columns so the list fits 1280 px beside its filters: the drop (or the batch a
    # debit charges) and the note share one, the wallet is "business, environment".
    list_display = ["created", "wallet_column", "kind", "amount", "balance_after", "detail", "by"]
    list_filter = ["kind", "wallet__environment"]
    list_select_related = ["wallet__business", "drop", "batch", "actor"]
    search_fields = ["wallet__business__name", "note"]

    @admin.display(description="When", ordering="created_at")
    def created(self, entry: LedgerEntry) -> SafeString | str:
        return when(entry.created_at)

    @admin.display(description="Wallet", ordering="wallet__business__name")
    def wallet_column(self, entry: LedgerEntry) -> SafeString | str:
        return format_html("{}, {}", cut(entry.wallet.business.name, 28), entry.wallet.environment)

    @admin.display(description="Drop, batch or note")
    def detail(self, entry: LedgerEntry) -> SafeString | str:
        what = (
            entry.drop.client_order_id
            if entry.drop
            else f"batch {entry.batch.client_batch_id}"
            if entry.batch
            else ""
        )
        said = " · ".join(part for part in (what, entry.note) if part)
        return cut(said, 36)

    @admin.display(description="By", ordering="actor__username")
    def by(self, entry: LedgerEntry) -> str:
        return entry.actor.get_username() if entry.actor else EMPTY


class InvoiceLineInline(ServiceTimesInline, admin.TabularInline):
    model = InvoiceLine
    extra = 0
    fields = ["created_at", "drop", "amount", "breakdown", "description"]
    readonly_fields = fields
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("drop")

    @admin.display(description="Delivery + COD fee")
    def breakdown(self, line: InvoiceLine) -> str:
        """A drop's charge (or its reversal) in its parts, docs/contract.md §18; a return fee
        or an edit's difference has none."""
        if line.drop is None or line.description not in BROKEN_DOWN or not line.drop.cod_fee:
            return EMPTY
        fee = line.drop.cod_fee if line.amount > 0 else -line.drop.cod_fee
        return f"{line.amount - fee} + {fee}"

    def has_add_permission(self, request, obj=None):
        return False


# The invoice lines that are a drop's whole price: its charge, and its reversal on cancel.
BROKEN_DOWN = frozenset({"Delivery", "Cancelled delivery"})


@admin.register(Invoice)
class InvoiceAdmin(ServiceTimesAdmin, GatedActionsAdmin, ReadOnlyAdmin):
    list_display = [
        "business",
        "environment",
        "period",
        "status",
        "accrued",
        "issued_on",
        "due_on",
        "paid_at",
    ]
    list_filter = ["status", "environment", "period"]
    search_fields = ["business__name"]
    inlines = [InvoiceLineInline]
    actions = ["issue_ended_months", "mark_paid"]

    def has_issue_permission(self, request):
        return request.user.has_perm("billing.issue_invoice")

    def has_mark_paid_permission(self, request):
        return request.user.has_perm("billing.mark_invoice_paid")

    @admin.action(description="Issue the selected invoices of ended months", permissions=["issue"])
    def issue_ended_months(self, request, queryset):
        now = timezone.now()
        chosen = [i.pk for i in queryset]
        closed = close_invoices(
            before_period=invoice_period(now), today=timezone.localdate(now), only=chosen
        )
        record_each(request, [(invoice, _closing_logged(invoice)) for invoice in closed])
        messages.info(
            request,
            f"Closed {len(closed)} of the {len(chosen)} selected invoice(s); "
            "an invoice of the current month or not OPEN stays as it is.",
        )

    @admin.action(description="Mark the selected issued invoices paid", permissions=["mark_paid"])
    def mark_paid(self, request, queryset):
        paid = []
        for invoice in queryset:
            try:
                mark_invoice_paid(invoice=invoice, at=timezone.now())
            except BillingError as exc:
                messages.error(request, f"{invoice}: {exc}")
            else:
                paid.append(invoice)
        record(request, paid, "Marked paid.")


def _closing_logged(invoice: Invoice) -> str:
    # Two sentences at most, so the whole selection is logged in two INSERTs at most.
    if invoice.status == InvoiceStatus.ISSUED:
        return "Issued (its due date is on the invoice)."
    return "Closed: a sandbox invoice is never billed."
