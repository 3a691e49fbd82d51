"""The console's cash desk (docs/contract.md §23, docs/operator.md "Cash desk"): the couriers
holding cash, the longest held first; each courier's cash ledger; the hand-over a Cashier
records at the hub (expected, counted, receipt; a shortage needs a note); and the end of
day report per courier (CSV). Under the console's Couriers section (console/site.py)."""

from __future__ import annotations

import csv
from datetime import date, datetime, time, timedelta
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

from billing.custody import CashRefused, HandOverStale, cash_desk, day_report, hand_over
from billing.models import CourierCashAccount, CourierCashEntry, HubCashEntry
from console.cod import EnvironmentShown, environment_of
from console.columns import LedgerInline, ServiceTimesAdmin, when
from console.history import record
from core.admin import ReadOnlyAdmin
from core.formats import money
from dashboard.exports import BYTE_ORDER_MARK, safe_cell

RECORD = "billing.record_hand_over"
UNATTRIBUTED = "Unattributed (no courier on the order)"


class CashEntryInline(LedgerInline):
    model = CourierCashEntry
    fields = ["created_at", "kind", "amount", "in_hand_after", "drop", "receipt", "note", "actor"]


@admin.register(CourierCashAccount)
class CashDeskAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    """Its list is the cash desk (cash in hand, the oldest collection first); its page one
    courier's cash ledger, with the hand-over form."""

    list_display = [
        "courier_column",
        "in_hand_column",
        "held_since_column",
        "owes_column",
        "environment",
    ]
    list_filter = [EnvironmentShown]
    search_fields = ["courier__name", "courier__phone"]
    inlines = [CashEntryInline]
    change_list_template = "admin/billing/couriercashaccount/desk.html"
    change_form_template = "admin/billing/couriercashaccount/ledger.html"

    def get_queryset(self, request):
        return cash_desk(environment=environment_of(request))

    def get_object(self, request, object_id, from_field=None):
        # One account's page, whatever it holds now.
        queryset = CourierCashAccount.objects.select_related("courier")
        return queryset.filter(pk=object_id).first() if str(object_id).isdigit() else None

    def get_ordering(self, request):
        return ["held_since", "pk"]

    @admin.display(description="Courier", ordering="courier__name")
    def courier_column(self, account: CourierCashAccount) -> str:
        if account.courier is None:
            return UNATTRIBUTED
        return f"{account.courier.name} ({account.courier.phone})"

    @admin.display(description="In hand", ordering="in_hand")
    def in_hand_column(self, account: CourierCashAccount) -> str:
        return f"{money(account.in_hand)} {account.currency}"

    @admin.display(description="Oldest collection in hand", ordering="held_since")
    def held_since_column(self, account: CourierCashAccount):
        return when(getattr(account, "held_since", None))

    @admin.display(description="Owes (shortages)", ordering="courier_owes")
    def owes_column(self, account: CourierCashAccount) -> str:
        return money(account.courier_owes)

    def get_urls(self):
        own = [
            path(
                "report.csv",
                self.admin_site.admin_view(self.report_view),
                name="billing_couriercashaccount_report",
            ),
            path(
                "<int:pk>/hand-over/",
                self.admin_site.admin_view(self.hand_over_view),
                name="billing_couriercashaccount_hand_over",
            ),
        ]
        return own + super().get_urls()

    def has_record_permission(self, request) -> bool:
        return request.user.has_perm(RECORD)

    def changelist_view(self, request, extra_context=None):
        environment = environment_of(request)
        today = timezone.localdate()
        extra_context = {
            **(extra_context or {}),
            "report_url": f"{reverse('admin:billing_couriercashaccount_report')}"
            f"?environment={environment}&date={today:%Y-%m-%d}",
            "shown_environment": environment,
            "limit": money(settings.COURIER_CASH_LIMIT),
            "title": "Cash desk: couriers holding cash",
        }
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        can = self.has_record_permission(request)
        extra_context = {**(extra_context or {}), "can_record": can}
        return super().change_view(request, object_id, form_url, extra_context)

    def report_view(self, request: HttpRequest) -> HttpResponse:
        """The end of day report: per courier and currency, the day's figures (CSV)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        environment = environment_of(request)
        day = _day(request.GET.get("date"))
        start = datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
        rows = day_report(
            environment=environment, day_start=start, day_end=start + timedelta(days=1)
        )
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        name = f"cash-desk-{environment}-{day:%Y-%m-%d}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response.write(BYTE_ORDER_MARK)
        writer = csv.writer(response)
        writer.writerow(REPORT_COLUMNS)
        for account in rows:
            writer.writerow([safe_cell(value) for value in _report_row(account, day)])
        return response

    def hand_over_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The form (GET, or a POST with errors), then the hand-over (a valid POST)."""
        if not self.has_record_permission(request):
            raise PermissionDenied
        account = get_object_or_404(CourierCashAccount.objects.select_related("courier"), pk=pk)
        form = HandOverForm(request.POST or None, initial={"expected": account.in_hand})
        if request.method != "POST" or not form.is_valid():
            return self._page(request, account, form)
        data = form.cleaned_data
        try:
            done = hand_over(
                courier=account.courier,
                currency=account.currency,
                expected=data["expected"],
                counted=data["counted"],
                receipt=data["receipt"],
                note=data["note"],
                cashier=request.user,
                environment=account.environment,
            )
        except CashRefused as refused:
            account.refresh_from_db()
            if isinstance(refused, HandOverStale):  # the form again, with what is in hand now
                form = HandOverForm({**request.POST.dict(), "expected": account.in_hand})
                form.is_valid()
            form.add_error(None, f"Nothing was recorded: {refused}")
            return self._page(request, account, form)
        said = _said(done, account.currency, data["receipt"])
        messages.success(request, f"{self.courier_column(account)}: {said}")
        record(request, [account], said)
        return redirect(reverse("admin:billing_couriercashaccount_change", args=[account.pk]))

    def _page(self, request, account: CourierCashAccount, form) -> TemplateResponse:
        return TemplateResponse(
            request,
            "admin/billing/couriercashaccount/hand_over.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": account,
                "who": self.courier_column(account),
                "title": f"Cash hand-over: {self.courier_column(account)}",
                "expected": money(_expected_of(form) or account.in_hand),
                "currency": account.currency,
                "form": form,
            },
        )


def _expected_of(form) -> Decimal | None:
    """The expected amount the form carries, once it is a valid one (the hidden field)."""
    return getattr(form, "cleaned_data", {}).get("expected") if form.is_bound else None


def _said(done, currency: str, receipt: str) -> str:
    said = f"Cash handed over: {money(done.handed_over)} {currency}, receipt {receipt}."
    if done.shortage:
        said += f" Short {money(done.shortage)}: the courier owes it."
    if done.surplus:
        said += f" Over by {money(done.surplus)}: kept by the hub as surplus."
    return said


def _day(value: str | None) -> date:
    """The report's day: `date` (YYYY-MM-DD), else today in the service time zone."""
    try:
        return date.fromisoformat(value) if value else timezone.localdate()
    except ValueError:
        return timezone.localdate()


class HandOverForm(forms.Form):
    expected = forms.DecimalField(
        widget=forms.HiddenInput, max_digits=16, decimal_places=2, min_value=Decimal("0.01")
    )
    counted = forms.DecimalField(
        min_value=Decimal("0.00"),
        max_digits=12,
        decimal_places=2,
        help_text="The cash you counted, e.g. 42.50.",
    )
    receipt = forms.CharField(
        max_length=100, strip=True, help_text="The number of the receipt you give the courier."
    )
    note = forms.CharField(
        max_length=200,
        required=False,
        strip=True,
        help_text="Needed when you counted less than expected: what the courier said.",
    )

    def clean(self):
        data = super().clean()
        counted, expected = data.get("counted"), data.get("expected")
        short = counted is not None and expected is not None and counted < expected
        if short and not data.get("note"):
            self.add_error("note", "Counted less than expected: say why in a note.")
        return data


REPORT_COLUMNS = [
    "date",
    "courier_id",
    "courier",
    "phone",
    "environment",
    "currency",
    "collected",
    "handed_over",
    "short",
    "surplus",
    "in_hand_at_end_of_day",
    "courier_owes_now",
]


def _report_row(account, day: date) -> list:
    courier = account.courier
    return [
        day.isoformat(),
        courier.pk if courier else "",
        courier.name if courier else UNATTRIBUTED,
        courier.phone if courier else "",
        account.environment,
        account.currency,
        money(account.collected),
        money(account.handed_over),
        money(account.short),
        money(account.surplus),
        money(account.in_hand_at_end),
        money(account.courier_owes),
    ]


class HubCashEntryAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    """The hub's surplus: cash counted over what couriers were expected to bring."""

    list_display = ["created_at", "amount", "currency", "courier", "receipt", "note", "actor"]
    list_filter = ["environment"]


admin.site.register(HubCashEntry, HubCashEntryAdmin)
