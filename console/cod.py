"""Operator console for cash on delivery (docs/contract.md §18): the reconciliation (owed per
business, collected today, paid out, credited to wallets; a CSV of it), each account's
ledger, and payouts to a business, recorded by Finance with a reference after a confirmation.
"""

from __future__ import annotations

import csv
from decimal import Decimal

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from billing.cod import CodRefused, accounts_with_totals, remit_cod
from billing.models import CodAccount, CodEntry
from console.columns import EMPTY, LedgerInline, ServiceTimesAdmin, cut, when
from console.history import record
from core.admin import ReadOnlyAdmin
from core.formats import money
from dashboard.exports import BYTE_ORDER_MARK, safe_cell

REMIT = "billing.remit_cod"
ENVIRONMENTS = ("live", "sandbox")


class EnvironmentShown(admin.SimpleListFilter):
    """Live unless asked: the reconciliation is of real cash; sandbox cash is play money."""

    title = "environment"
    parameter_name = "environment"

    def lookups(self, request, model_admin):
        return [("live", "Live"), ("sandbox", "Sandbox")]

    def choices(self, changelist):
        for value, label in self.lookup_choices:
            yield {
                "selected": self.chosen() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def chosen(self) -> str:
        return self.value() if self.value() in ENVIRONMENTS else "live"

    def queryset(self, request, queryset):
        return queryset  # get_queryset already keeps the chosen environment


def environment_of(request: HttpRequest) -> str:
    chosen = request.GET.get("environment")
    return chosen if chosen in ENVIRONMENTS else "live"


class CodEntryInline(LedgerInline):
    model = CodEntry
    fields = ["created_at", "kind", "amount", "owed_after", "drop", "reference", "actor", "note"]


@admin.register(CodAccount)
class CodAccountAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    """Its list is the COD reconciliation; its page one account's ledger and its payout."""

    list_display = [
        "business_column",
        "environment",
        "owed_column",
        "today_column",
        "collected_column",
        "remitted_column",
        "credited_column",
    ]
    list_filter = [EnvironmentShown]
    search_fields = ["business__name"]
    inlines = [CodEntryInline]
    change_list_template = "admin/billing/codaccount/reconciliation.html"
    change_form_template = "admin/billing/codaccount/ledger.html"

    def get_queryset(self, request):
        return accounts_with_totals(environment=environment_of(request), at=timezone.now())

    def get_object(self, request, object_id, from_field=None):
        # The page of one account, whatever environment the list shows.
        queryset = CodAccount.objects.select_related("business")
        return queryset.filter(pk=object_id).first() if str(object_id).isdigit() else None

    @admin.display(description="Business", ordering="business__name")
    def business_column(self, account: CodAccount) -> SafeString | str:
        return cut(account.business.name, 40)

    @admin.display(description="Owed", ordering="owed")
    def owed_column(self, account: CodAccount) -> str:
        return f"{money(account.owed)} {settings.CURRENCY}"

    @admin.display(description="Collected today", ordering="collected_today")
    def today_column(self, account) -> str:
        return money(account.collected_today)

    @admin.display(description="Collected", ordering="collected_total")
    def collected_column(self, account) -> str:
        return money(account.collected_total)

    @admin.display(description="Paid out", ordering="remitted_total")
    def remitted_column(self, account) -> str:
        return money(account.remitted_total)

    @admin.display(description="To wallet", ordering="credited_total")
    def credited_column(self, account) -> str:
        return money(account.credited_total)

    def get_urls(self):
        own = [
            path(
                "reconciliation.csv",
                self.admin_site.admin_view(self.csv_view),
                name="billing_codaccount_csv",
            ),
            path(
                "<int:pk>/payout/",
                self.admin_site.admin_view(self.payout_view),
                name="billing_codaccount_payout",
            ),
        ]
        return own + super().get_urls()

    def has_remit_permission(self, request) -> bool:
        return request.user.has_perm(REMIT)

    def changelist_view(self, request, extra_context=None):
        environment = environment_of(request)
        extra_context = {
            **(extra_context or {}),
            "csv_url": f"{reverse('admin:billing_codaccount_csv')}?environment={environment}",
            "totals": _totals(self.get_queryset(request)),
            "currency": settings.CURRENCY,
            "shown_environment": environment,
        }
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "can_remit": self.has_remit_permission(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    def csv_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        environment, now = environment_of(request), timezone.now()
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        name = f"cod-reconciliation-{environment}-{timezone.localdate(now):%Y-%m-%d}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response.write(BYTE_ORDER_MARK)
        writer = csv.writer(response)
        writer.writerow(CSV_COLUMNS)
        for account in accounts_with_totals(environment=environment, at=now):
            writer.writerow([safe_cell(value) for value in _csv_row(account)])
        return response

    def payout_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The form (GET, or a POST with errors), its confirmation (a valid POST), then the
        payout (the confirmation's POST, which carries `confirmed`)."""
        if not self.has_remit_permission(request):
            raise PermissionDenied
        account = get_object_or_404(CodAccount.objects.select_related("business"), pk=pk)
        form = PayoutForm(request.POST or None)
        if request.method != "POST" or not form.is_valid():
            return self._page(request, account, "payout.html", form=form)
        amount, reference = form.cleaned_data["amount"], form.cleaned_data["reference"]
        if "confirmed" not in request.POST:
            after = money(account.owed - amount) if amount <= account.owed else None
            if after is None:
                form.add_error("amount", f"Only {money(account.owed)} is owed.")
                return self._page(request, account, "payout.html", form=form)
            return self._page(request, account, "payout_confirm.html", form=form, after=after)
        try:
            remit_cod(
                business=account.business,
                environment=account.environment,
                amount=amount,
                reference=reference,
                actor=request.user,
            )
        except CodRefused as refused:  # owed changed since the confirmation was shown
            form.add_error("amount", f"Nothing was recorded: {refused}")
            return self._page(request, account, "payout.html", form=form)
        said = f"Paid out {money(amount)} {settings.CURRENCY} of collected cash, ref. {reference}."
        messages.success(request, f"{account.business}: {said}")
        record(request, [account], said)
        return redirect(reverse("admin:billing_codaccount_change", args=[account.pk]))

    def _page(self, request, account: CodAccount, template: str, **context) -> TemplateResponse:
        return TemplateResponse(
            request,
            f"admin/billing/codaccount/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": account,
                "title": f"Pay out collected cash to {account.business}",
                "owed": money(account.owed),
                "currency": settings.CURRENCY,
                **context,
            },
        )


class PayoutForm(forms.Form):
    amount = forms.DecimalField(
        min_value=Decimal("0.01"),
        max_digits=12,
        decimal_places=2,
        help_text="What was transferred to the business: at most what is owed.",
    )
    reference = forms.CharField(
        max_length=100,
        strip=True,
        help_text="The bank transfer's reference, as the business will see it on its statement.",
    )


CSV_COLUMNS = [
    "business_id",
    "business",
    "environment",
    "currency",
    "owed",
    "collected_today",
    "collected_total",
    "remitted_total",
    "credited_total",
]


def _csv_row(account) -> list:
    return [
        account.business_id,
        account.business.name,
        account.environment,
        settings.CURRENCY,
        money(account.owed),
        money(account.collected_today),
        money(account.collected_total),
        money(account.remitted_total),
        money(account.credited_total),
    ]


def _totals(accounts) -> dict[str, str]:
    """The sums of the reconciliation's money columns, for its last line."""
    names = ["owed", "collected_today", "collected_total", "remitted_total", "credited_total"]
    sums = dict.fromkeys(names, Decimal("0.00"))
    for account in accounts:
        for name in names:
            sums[name] += getattr(account, name)
    return {name: money(value) for name, value in sums.items()}


@admin.register(CodEntry)
class CodEntryAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    list_display = ["created", "account_column", "kind", "amount", "owed_after", "detail", "by"]
    list_filter = ["kind", "account__environment"]
    list_select_related = ["account__business", "drop", "actor"]
    search_fields = ["account__business__name", "reference", "note"]

    @admin.display(description="When", ordering="created_at")
    def created(self, entry: CodEntry) -> SafeString | str:
        return when(entry.created_at)

    @admin.display(description="Account", ordering="account__business__name")
    def account_column(self, entry: CodEntry) -> SafeString:
        return format_html(
            "{}, {}", cut(entry.account.business.name, 28), entry.account.environment
        )

    @admin.display(description="Drop or reference")
    def detail(self, entry: CodEntry) -> SafeString | str:
        return cut(entry.drop.client_order_id if entry.drop else entry.reference, 36)

    @admin.display(description="By", ordering="actor__username")
    def by(self, entry: CodEntry) -> str:
        return entry.actor.get_username() if entry.actor else EMPTY
