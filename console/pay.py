"""Couriers' pay in the operator console (docs/operator.md "Pay plans and couriers' pay"): a
pay plan per vehicle type, and the pay of every courier over a period as CSV, for those with
the export permission (Finance)."""

from __future__ import annotations

import csv
from datetime import date, timedelta

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from core.formats import money
from couriers.models import Driver, PayPlan
from couriers.pay import Earnings, pay_by_courier
from dashboard.exports import BYTE_ORDER_MARK, safe_cell

EXPORT = "couriers.export_pay"
# A pay period is at most a year: the export reads every paid move in it.
MAX_PERIOD_DAYS = 366

CSV_COLUMNS = [
    "courier_id",
    "courier",
    "phone",
    "vehicles",
    "from",
    "to",
    "currency",
    "delivered",
    "returned",
    "km",
    "delivered_pay",
    "km_pay",
    "returned_pay",
    "total",
]


@admin.register(PayPlan)
class PayPlanAdmin(admin.ModelAdmin):
    """What couriers earn per vehicle type (docs/contract.md §24); the export of their pay."""

    list_display = ["vehicle", "per_drop", "per_km", "per_return", "updated_at"]
    change_list_template = "admin/couriers/payplan/change_list.html"

    def get_readonly_fields(self, request, obj=None):
        # A plan belongs to its vehicle type for good: change its amounts, not its type.
        return ["vehicle"] if obj is not None else []

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a type without a plan pays nothing: set the amounts to 0.00 instead

    def get_urls(self):
        export = self.admin_site.admin_view(self.export_view)
        return [path("export/", export, name="couriers_payplan_export"), *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        can_export = request.user.has_perm(EXPORT)
        extra_context = {
            **(extra_context or {}),
            "export_url": reverse("admin:couriers_payplan_export") if can_export else None,
        }
        return super().changelist_view(request, extra_context)

    def export_view(self, request: HttpRequest) -> HttpResponse:
        """The period's form; once the period is valid, the CSV of each courier's pay."""
        if not request.user.has_perm(EXPORT):
            raise PermissionDenied
        form = PayPeriodForm(request.GET if "first" in request.GET else None)
        if not form.is_valid():
            context = {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": "Export couriers' pay",
                "form": form,
                "currency": settings.CURRENCY,
            }
            return TemplateResponse(request, "admin/couriers/payplan/export.html", context)
        first, last = form.cleaned_data["first"], form.cleaned_data["last"]
        return pay_csv(first=first, last=last)


class PayPeriodForm(forms.Form):
    first = forms.DateField(
        label="From", widget=forms.DateInput(attrs={"type": "date"}), help_text="The first day."
    )
    last = forms.DateField(
        label="To",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The last day, included (Asia/Phnom_Penh days).",
    )

    def __init__(self, data=None) -> None:
        today = timezone.localdate()
        super().__init__(data, initial={"first": today.replace(day=1), "last": today})

    def clean(self) -> dict:
        cleaned = super().clean()
        first, last = cleaned.get("first"), cleaned.get("last")
        if first and last and first > last:
            raise forms.ValidationError("The first day comes after the last.")
        if first and last and last - first >= timedelta(days=MAX_PERIOD_DAYS):
            raise forms.ValidationError(f"A period is at most {MAX_PERIOD_DAYS} days.")
        return cleaned


def pay_csv(*, first: date, last: date) -> HttpResponse:
    """Every courier's pay over the period, one row each (couriers with no paid work in it:
    none), in courier id order."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"courier-pay-{first:%Y-%m-%d}-to-{last:%Y-%m-%d}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response.write(BYTE_ORDER_MARK)
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    earnings = pay_by_courier(first=first, last=last)
    couriers = Driver.objects.in_bulk([pay.courier_id for pay in earnings])
    for pay in earnings:
        row = _csv_row(pay, couriers[pay.courier_id], first, last)
        writer.writerow([safe_cell(value) for value in row])
    return response


def _csv_row(pay: Earnings, courier: Driver, first: date, last: date) -> list:
    return [
        courier.pk,
        courier.name,
        courier.phone,
        " ".join(sorted(pay.vehicles)),
        first.isoformat(),
        last.isoformat(),
        settings.CURRENCY,
        pay.delivered,
        pay.returned,
        money(pay.km),
        money(pay.delivered_pay),
        money(pay.km_pay),
        money(pay.returned_pay),
        money(pay.total),
    ]
