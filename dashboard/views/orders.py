"""Orders and batches: the filtered listing, its CSV export, an order's page and its
cancel, the batches and a batch's results."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import partial
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.models import Business, Environment
from core.api import ApiError
from core.cursors import InvalidCursor
from dashboard.exports import export_lines
from dashboard.exports import header as export_header
from dashboard.forms import EnvironmentFilterForm, OrderEditForm, OrderFilterForm
from dashboard.maps import batch_map, order_map
from dashboard.views.common import (
    PAGE_SIZE,
    business_view,
    new_key_form_token,
    page_of,
    spend_key_form_token,
)
from fleet.models import VehicleType
from orders.links import drop_tracking_url
from orders.models import Batch, Drop, DropStatus, WindowStatus
from orders.results import ResultEntry
from orders.selectors import batches_named, stored_results
from orders.statuses import EDITABLE_LOCATION
from tracking.api import edit_refusal
from tracking.edit_inputs import parse_drop_change
from tracking.edits import EditRefused, edit_drop
from tracking.labels import MAX_LABELS, batch_labels, drop_labels, labels_pdf
from tracking.lifecycle import CANCELLABLE
from tracking.listing import DropFilters, list_drops
from tracking.proof import photo_url, signature_url
from tracking.selectors import entries_by_drop_id
from tracking.services import cancel_orders

BATCH_PAGE_SIZE = 100


@dataclass(frozen=True)
class OrderQuery:
    """What the orders page and its export list: the account's environments and filters."""

    environments: list[str]
    filters: DropFilters
    # The batch filter names no batch of the account: nothing to list, nothing to query.
    matches_nothing: bool = False


def _midnight(day: date) -> datetime:
    """The day's start in the service time zone: the filters' days are the business's days."""
    return datetime.combine(day, time(), tzinfo=ZoneInfo(settings.TIME_ZONE))


def order_query(*, business: Business, data: dict) -> OrderQuery:
    """The listing's filters from OrderFilterForm's cleaned data; days are inclusive."""
    environments = [data["environment"]] if data.get("environment") else list(Environment.values)
    batch_ids: tuple[uuid.UUID, ...] = ()
    if data.get("batch"):
        batch_ids = tuple(
            batches_named(business=business, environments=environments, text=data["batch"])
        )
        if not batch_ids:
            return OrderQuery(environments, DropFilters(), matches_nothing=True)
    start, end = data.get("created_from"), data.get("created_to")
    filters = DropFilters(
        statuses=tuple(data.get("status") or ()),
        window_statuses=tuple(data.get("window_status") or ()),
        created_since=_midnight(start) if start else None,
        created_before=_midnight(end + timedelta(days=1)) if end else None,
        batch_ids=batch_ids,
        search=data.get("q", ""),
    )
    return OrderQuery(environments, filters)


@business_view
def orders(request):
    # The same listing as GET /api/v1/orders (tracking/listing.py), newest first, with
    # the page's position in an opaque cursor: no second way of reading drops.
    form = OrderFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        # Never the unfiltered list under filters that were asked for: the errors instead.
        return render(
            request, "dashboard/orders.html", {"form": form, "orders": [], "invalid": True}
        )
    query = order_query(business=request.business, data=form.cleaned_data if form.is_bound else {})
    cursor = request.GET.get("cursor", "")[:1000]
    listing = partial(
        list_drops,
        business=request.business,
        environments=query.environments,
        filters=query.filters,
        limit=PAGE_SIZE,
    )
    page = None
    if not query.matches_nothing:
        try:
            page = listing(cursor=cursor or None)
        except InvalidCursor:
            # A link from other filters (or edited by hand): start from the newest instead.
            cursor, page = "", listing(cursor=None)
    rows = [
        {
            **entry,
            "environment_label": Environment(entry["environment"]).label,
            "status_label": DropStatus(entry["status"]).label,
            "window_status_label": WindowStatus(entry["window_status"]).label
            if entry["window_status"]
            else None,
        }
        for entry in (page.orders if page else [])
    ]
    return render(
        request,
        "dashboard/orders.html",
        {"form": form, "orders": rows, "page": page, "cursor": cursor},
    )


@business_view
def orders_export(request):
    """The filtered orders, every page of them, as CSV (docs/dashboard.md has the columns)."""
    form = OrderFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return HttpResponse(
            f"Not exported: {problems}", status=400, content_type="text/plain; charset=utf-8"
        )
    query = order_query(business=request.business, data=form.cleaned_data if form.is_bound else {})
    if query.matches_nothing:
        lines = iter([export_header()])
    else:
        lines = export_lines(
            business=request.business, environments=query.environments, filters=query.filters
        )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="orders-{stamp}Z.csv"'
    response["Cache-Control"] = "no-store"  # recipients' names and phone numbers
    return response


@business_view
def orders_labels(request):
    """POST: the orders ticked on the orders page as one PDF, a label per page, in the
    page's order (docs/dashboard.md, Labels)."""
    if request.method != "POST":
        return redirect("dashboard:orders")
    drop_ids = []
    for text in request.POST.getlist("drop")[:MAX_LABELS]:
        try:
            drop_ids.append(uuid.UUID(text))
        except ValueError:
            return HttpResponse(
                "Not a drop id.", status=400, content_type="text/plain; charset=utf-8"
            )
    labels = drop_labels(
        business=request.business, environments=Environment.values, drop_ids=drop_ids
    )
    if not labels:
        messages.error(request, _("Tick the orders to print labels for, then press Labels (PDF)."))
        return redirect(_back_to_orders(request))
    return _labels_response(labels, "labels")


@business_view
def order_label(request, pk: uuid.UUID):
    """One order's label, as the API serves it; another business's order is a 404."""
    labels = drop_labels(business=request.business, environments=Environment.values, drop_ids=[pk])
    if not labels:
        raise Http404("No such order.")
    return _labels_response(labels, f"label-{labels[0].short_code}")


def _back_to_orders(request) -> str:
    """The orders page the form was sent from (its filters kept), never another site."""
    referer = urlsplit(request.headers.get("Referer", ""))
    if referer.netloc == request.get_host() and referer.path == reverse("dashboard:orders"):
        return f"{referer.path}?{referer.query}" if referer.query else referer.path
    return reverse("dashboard:orders")


def _labels_response(labels: list, name: str) -> HttpResponse:
    response = HttpResponse(labels_pdf(labels), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{name}.pdf"'
    response["Cache-Control"] = "no-store"  # recipients' names
    return response


@business_view
def order_detail(request, pk: uuid.UUID):
    drop = get_object_or_404(
        Drop.objects.select_related("order__driver", "batch"), pk=pk, business=request.business
    )
    return render(
        request,
        "dashboard/order.html",
        {
            "drop": drop,
            "order": drop.order,
            "events": drop.timeline(),
            "drop_tracking_url": drop_tracking_url(drop.pk),
            "map": order_map(drop),
            "can_cancel": drop.status in CANCELLABLE,
            "window_status": _window_status(drop),
            "vehicle": VehicleType.objects.filter(pk=drop.order.vehicle).first(),
            # Same-origin, as the recipient's page shows it: the signed /pod/ link's path.
            "photo_path": urlsplit(photo_url(drop.pk)).path if drop.pod_photo else None,
            "signature_path": urlsplit(signature_url(drop.pk)).path if drop.pod_signature else None,
        },
    )


def _window_status(drop: Drop) -> WindowStatus | None:
    """The window's status as the API's tracking entry says it (at risk as soon as the ETA
    passes the window's end, before the minute's job stores it): no second rule here."""
    if drop.window_start is None:
        return None
    status = entries_by_drop_id([drop.pk])[str(drop.pk)]["window_status"]
    return WindowStatus(status) if status else None


@business_view
def order_cancel(request, pk: uuid.UUID):
    """Cancel a drop before pickup, after a confirmation page: the API's cancel (refunded)."""
    drop = get_object_or_404(Drop, pk=pk, business=request.business)
    # The service names drops by client_order_id, which picks the id's active drop: a
    # finished drop's page must never cancel a newer drop that reuses its id.
    if drop.status not in CANCELLABLE:
        messages.info(
            request,
            _("%(order)s is %(status)s: only an order not yet picked up can be cancelled.")
            % {"order": drop.client_order_id, "status": drop.get_status_display().lower()},
        )
        return redirect("dashboard:order", pk=drop.pk)
    if request.method != "POST":
        return render(request, "dashboard/order_cancel.html", {"drop": drop})
    [entry] = cancel_orders(
        business=request.business,
        environment=drop.environment,
        identifiers=[drop.client_order_id],
        actor=f"dashboard {request.user.get_username()}"[:100],
    )
    if "error" in entry:
        messages.error(
            request,
            _("%(order)s was not cancelled: %(why)s")
            % {"order": drop.client_order_id, "why": entry["error"]["message"]},
        )
    else:
        messages.success(
            request,
            _("%(order)s is cancelled; its price is refunded.") % {"order": drop.client_order_id},
        )
    return redirect("dashboard:order", pk=drop.pk)


@business_view
def order_edit(request, pk: uuid.UUID):
    """Edit an active drop's fields (docs/dashboard.md): the API's PATCH /orders/<drop_id>,
    its parsing and its service, for the drop's own environment."""
    drop = get_object_or_404(Drop, pk=pk, business=request.business)
    if closed := _closed_to_edits(request.business, drop):
        status, why = closed
        return _edit_page(request, drop, None, status=status, closed=why)
    if request.method != "POST":
        return _edit_page(request, drop, OrderEditForm(drop=drop))
    if not spend_key_form_token(request):
        # Sent already (a refresh, the back button): a second send could undo a later change.
        messages.info(request, _("That form was sent already: here is the order as it is now."))
        return redirect("dashboard:order", pk=drop.pk)
    form = OrderEditForm(request.POST, drop=drop)
    if not form.is_valid():
        return _edit_page(request, drop, form, status=400)
    try:
        change = parse_drop_change(form.change_body())
        edit_drop(
            business=request.business, environment=drop.environment, drop_id=drop.pk, change=change
        )
    except (ApiError, EditRefused) as refused:
        # The API's own answer (status, message, fields): a 400 of shape, or the refusal.
        error = refused if isinstance(refused, ApiError) else edit_refusal(refused)
        form.add_refusal(error.message, error.details)
        return _edit_page(request, drop, form, status=error.status_code, refusal=error)
    said = changes_said(drop, Drop.objects.get(pk=drop.pk))
    if said:
        messages.success(
            request,
            _("%(order)s is saved: %(said)s.") % {"order": drop.client_order_id, "said": said},
        )
    else:
        messages.info(
            request,
            _("Nothing changed: %(order)s already had those values.")
            % {"order": drop.client_order_id},
        )
    return redirect("dashboard:order", pk=drop.pk)


def _closed_to_edits(business: Business, drop: Drop) -> tuple[int, str] | None:
    """Why no edit of this drop can be made here, with the API's status for it: a finished
    drop, or the API's own gates on the account (accounts/permissions.py); None if it can."""
    if not drop.is_active:
        status = drop.get_status_display().lower()
        return 409, _("%(order)s is %(status)s: only an active order can be edited.") % {
            "order": drop.client_order_id,
            "status": status,
        }
    if business.is_suspended or not business.can_use_sandbox:
        return 403, _("This account is suspended: its orders cannot be edited.")
    if drop.environment == Environment.LIVE and not business.is_live:
        return 403, _(
            "Live access is not enabled for this account: its live orders cannot be edited."
        )
    return None


def _edit_page(
    request,
    drop: Drop,
    form: OrderEditForm | None,
    *,
    status: int = 200,
    refusal: ApiError | None = None,
    closed: str = "",
):
    return render(
        request,
        "dashboard/order_edit.html",
        {
            "drop": drop,
            "form": form,
            "form_token": new_key_form_token(request) if form is not None else "",
            "before_pickup": drop.status in EDITABLE_LOCATION,
            "refusal": refusal,
            "closed": closed,
        },
        status=status,
    )


# What an edit changed, in the page's words: (the drop's columns, what the message calls them).
_CHANGES_SAID = (
    (("recipient_name",), "recipient name"),
    (("recipient_phone",), "phone"),
    (("notes",), "notes"),
    (("external_waybill",), "waybill"),
    (("lat", "long", "address"), "drop-off location"),
    (("window_start", "window_end"), "drop-off window"),
    (("undeliverable_action",), "what happens if it cannot be delivered"),
)


def changes_said(before: Drop, after: Drop) -> str:
    """ "phone and notes changed; price 3.10 USD (was 2.80 USD)", or "" for no change."""
    changed = [
        said
        for columns, said in _CHANGES_SAID
        if any(getattr(before, column) != getattr(after, column) for column in columns)
    ]
    if not changed:
        return ""
    names = changed[0] if len(changed) == 1 else f"{', '.join(changed[:-1])} and {changed[-1]}"
    text = f"{names} changed"
    if after.price != before.price:
        text += f"; price {after.price} {after.currency} (was {before.price} {before.currency})"
    return text


@business_view
def batches(request):
    form = EnvironmentFilterForm(request.GET or None)
    # Not the stored answer: a list page has no use for a few megabytes of JSON per row.
    rows = (
        Batch.objects.filter(business=request.business)
        .defer("response")
        .order_by("-created_at", "-pk")
    )
    if form.is_valid() and form.cleaned_data["environment"]:
        rows = rows.filter(environment=form.cleaned_data["environment"])
    return render(
        request, "dashboard/batches.html", {"form": form, "batches": page_of(request, rows)}
    )


@business_view
def batch_labels_pdf(request, pk: uuid.UUID):
    """Every drop the batch accepted, a label per page, in the order they were sent."""
    batch = get_object_or_404(Batch, pk=pk, business=request.business)
    labels = batch_labels(business=request.business, batch=batch)
    return _labels_response(labels, f"labels-{batch.client_batch_id}"[:100])


@dataclass(slots=True)
class ResultRow:
    """A line of the batch page: a drop's result entry, its place in the batch, and where
    the drop is now."""

    position: int  # 1-based, in submission order
    entry: ResultEntry
    delivery_status: DropStatus | None = None


@business_view
def batch_page(request, pk: uuid.UUID):
    batch = get_object_or_404(Batch, pk=pk, business=request.business)
    rows = [ResultRow(n, entry) for n, entry in enumerate(stored_results(batch), start=1)]
    rejected_only = request.GET.get("rejected") == "1"
    shown = [row for row in rows if not row.entry.accepted] if rejected_only else rows
    page = page_of(request, shown, size=BATCH_PAGE_SIZE)
    pins = batch_map(business=request.business, batch_id=batch.pk)
    for row in page:
        if row.entry.accepted and (status := pins.by_status.get(row.entry.drop_id)):
            row.delivery_status = DropStatus(status)
    return render(
        request,
        "dashboard/batch.html",
        {
            "batch": batch,
            "results": page,
            "rejected_only": rejected_only,
            "map": pins.data,
            "legend": pins.legend,
        },
    )
