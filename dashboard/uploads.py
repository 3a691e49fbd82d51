"""Orders from a spreadsheet: a CSV upload becomes one batch through the same
pipeline as POST /orders/bulk, answered row by row; and the CSV template to start from.

The file's bytes decide its Idempotency-Key and client_batch_id (dashboard/csv_orders.py),
so the same file sent again, by any member, replays the first answer and creates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_safe

from accounts.models import Business, Environment
from billing.services import BillingError
from core.csv_files import MAX_FILE_BYTES, MAX_FILE_LABEL, CsvUnreadable
from dashboard.batches import send_batch
from dashboard.csv_orders import (
    RowResult,
    RowsInvalid,
    checked_batch,
    read_orders,
    results_by_row,
)
from dashboard.views.common import business_view
from orders.errors import BatchRefused
from orders.services import BatchResult

SAMPLE_ORDERS = Path(settings.BASE_DIR) / "docs" / "sample-orders.csv"


class UploadForm(forms.Form):
    file = forms.FileField(
        label=_("CSV file"),
        allow_empty_file=True,  # csv_orders says so in its own words
        widget=forms.FileInput(attrs={"accept": ".csv,text/csv"}),
    )
    environment = forms.ChoiceField(
        label=_("Environment"), choices=Environment.choices, widget=forms.RadioSelect
    )

    def __init__(self, *args: Any, environments: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["file"].help_text = _(
            "UTF-8, comma or semicolon separated, at most %(size)s and %(orders)s orders."
        ) % {"size": MAX_FILE_LABEL, "orders": settings.MAX_DROPS_PER_BATCH}
        self.fields["environment"].choices = [
            (value, Environment(value).label) for value in environments
        ]
        if environments:
            self.fields["environment"].initial = environments[0]

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError(
                _(
                    "The file is %(size).1f MB; at most %(limit)s can be uploaded at once: "
                    "split it into smaller files."
                )
                % {"size": upload.size / 1024 / 1024, "limit": MAX_FILE_LABEL},
                code="too_large",
            )
        return b"".join(upload.chunks())


@dataclass(frozen=True, slots=True)
class Upload:
    """What the page shows after a file was sent (or replayed)."""

    batch: BatchResult  # as the API would answer it
    rows: list[RowResult]
    unknown_columns: list[str]
    has_pins: bool  # a column for them; read once, not once per row of the table


def upload_environments(business: Business) -> list[str]:
    """Where this business may send orders: the API's rules (accounts/permissions.py)."""
    if not business.can_use_sandbox:
        return []
    return [Environment.SANDBOX, Environment.LIVE] if business.is_live else [Environment.SANDBOX]


def _page(
    request: HttpRequest,
    *,
    form: UploadForm,
    upload: Upload | None = None,
    invalid: RowsInvalid | None = None,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "dashboard/upload.html",
        {
            "business": request.business,
            "can_upload": bool(upload_environments(request.business)),
            "form": form,
            "upload": upload,
            "invalid": invalid,
        },
        status=status,
    )


@require_http_methods(["GET", "HEAD", "POST"])
@business_view
def orders_upload(request: HttpRequest) -> HttpResponse:
    business = request.business
    environments = upload_environments(business)
    if request.method != "POST":
        return _page(request, form=UploadForm(environments=environments))
    if not environments:
        # Before approval, or suspended: the page says why, as the sandbox console does.
        return _page(request, form=UploadForm(environments=environments), status=403)
    if request.POST.get("environment") == Environment.LIVE and not business.is_live:
        messages.error(
            request,
            _(
                "Live orders can be uploaded once an operator switches live access on; "
                "upload to the sandbox meanwhile."
            ),
        )
        return _page(request, form=UploadForm(environments=environments), status=403)
    form = UploadForm(request.POST, request.FILES, environments=environments)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    environment = form.cleaned_data["environment"]
    try:
        orders_file = read_orders(
            form.cleaned_data["file"], business_id=business.pk, environment=environment
        )
        batch = checked_batch(orders_file, environment=environment)
    except CsvUnreadable as unreadable:
        for message in unreadable.messages:
            form.add_error("file", message)
        return _page(request, form=form, status=400)
    except RowsInvalid as invalid:
        return _page(request, form=form, invalid=invalid, status=400)
    try:
        result = send_batch(
            request,
            environment=environment,
            idempotency_key=orders_file.idempotency_key,
            batch=batch,
        )
    except (BatchRefused, BillingError) as refused:
        messages.error(request, _("The file was not sent: %(why)s") % {"why": refused})
        return _page(request, form=form, status=409)
    entries = result.entries()
    upload = Upload(
        batch=result,
        rows=results_by_row(orders_file, entries),
        unknown_columns=orders_file.unknown_columns,
        has_pins=any(entry.dropoff_pin for entry in entries),
    )
    fresh_form = UploadForm(environments=environments, initial={"environment": environment})
    return _page(request, form=fresh_form, upload=upload)


@require_safe
@business_view
def orders_upload_template(request: HttpRequest) -> HttpResponseBase:
    """docs/sample-orders.csv: the header and three example rows."""
    return FileResponse(
        SAMPLE_ORDERS.open("rb"),
        as_attachment=True,
        filename="sample-orders.csv",
        content_type="text/csv; charset=utf-8",
    )
