"""Operator console for money: plans, read-only wallets and ledgers, invoices."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone

from billing.models import Invoice, InvoiceLine, LedgerEntry, PricingPlan, Wallet
from billing.services import BillingError, close_invoices, invoice_period, mark_invoice_paid
from core.admin import GatedActionsAdmin, ReadOnlyAdmin


@admin.register(PricingPlan)
class PricingPlanAdmin(admin.ModelAdmin):
    list_display = ["name", "base_fee", "per_km_fee", "included_km"]


class LedgerEntryInline(admin.TabularInline):
    model = LedgerEntry
    extra = 0
    fields = ["created_at", "kind", "amount", "balance_after", "drop", "actor", "note"]
    readonly_fields = fields
    can_delete = False
    ordering = ["-id"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Wallet)
class WalletAdmin(ReadOnlyAdmin):
    list_display = ["business", "environment", "balance", "updated_at"]
    list_filter = ["environment"]
    search_fields = ["business__name"]
    inlines = [LedgerEntryInline]


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "wallet",
        "kind",
        "amount",
        "balance_after",
        "drop",
        "actor",
        "note",
    ]
    list_filter = ["kind", "wallet__environment"]
    search_fields = ["wallet__business__name", "note"]


class InvoiceLineInline(admin.TabularInline):
    model = InvoiceLine
    extra = 0
    fields = ["created_at", "drop", "amount", "description"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Invoice)
class InvoiceAdmin(GatedActionsAdmin, ReadOnlyAdmin):
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
        messages.info(
            request,
            f"Closed {len(closed)} of the {len(chosen)} selected invoice(s); "
            "an invoice of the current month or not OPEN stays as it is.",
        )

    @admin.action(description="Mark the selected issued invoices paid", permissions=["mark_paid"])
    def mark_paid(self, request, queryset):
        for invoice in queryset:
            try:
                mark_invoice_paid(invoice=invoice, at=timezone.now())
            except BillingError as exc:
                messages.error(request, f"{invoice}: {exc}")
