"""New delivery: the form, its live quote, the lookups it makes as one types (an address on
the map, a recipient of the address book), the booking (the batch pipeline, exactly once per
form) and its result (docs/dashboard.md, "New delivery")."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Business, Environment
from billing.services import BillingError
from core.api import ApiError, envelope, error_response
from dashboard.batches import send_batch
from dashboard.booking import (
    MAX_DROPS,
    DeliveryForm,
    DropFormSet,
    Refusal,
    add_refusals,
    booked_batch_id,
    booking_body,
    geocoded,
    initial_again,
    new_token,
    recipients_like,
    refusal_of,
)
from dashboard.maps import service_areas
from dashboard.uploads import upload_environments
from dashboard.views.common import business_view
from orders.errors import BatchRefused, ClientBatchIdReused, IdempotencyKeyReused
from orders.inputs import BatchIn, parse_batch
from orders.models import Batch, Drop
from orders.selectors import stored_results
from orders.services import quote_batch
from tracking.api import quote_data
from tracking.page_data import map_tiles

DROPS = "drops"  # the drop rows' prefix in the form
_ROW_FIELD = re.compile(rf"{DROPS}-(\d+)-(.+)")


class Booking:
    """The page's two forms (the delivery, its drop rows) for the request's business."""

    def __init__(self, request: HttpRequest, data=None, *, initial=None, drops=None) -> None:
        self.environments = upload_environments(request.business)
        fresh = {"form_token": new_token(), "environment": self.environments[-1:] or None}
        if fresh["environment"]:
            fresh["environment"] = fresh["environment"][0]
        self.delivery = DeliveryForm(
            data,
            business=request.business,
            environments=self.environments,
            initial={**fresh, **(initial or {})},
        )
        self.drops = DropFormSet(
            data,
            prefix=DROPS,
            initial=drops,
            form_kwargs={"recipient_language": request.business.recipient_language},
        )

    def is_valid(self) -> bool:
        return all([self.delivery.is_valid(), self.drops.is_valid()])

    @property
    def rows(self) -> list[int]:
        """The drop rows sent, by index: a row left blank (added, never filled) is skipped."""
        return [
            n
            for n, form in enumerate(self.drops.forms)
            if form.is_valid()
            and form.cleaned_data
            and not (form.empty_permitted and not form.has_changed())
        ]

    @property
    def environment(self) -> str:
        return self.delivery.cleaned_data["environment"]

    @property
    def key(self) -> uuid.UUID:
        return self.delivery.cleaned_data["form_token"]

    def body(self, rows: list[int] | None = None) -> dict[str, Any]:
        rows = self.rows if rows is None else rows
        drops = [self.drops.forms[n].cleaned_data for n in rows]
        return booking_body(self.delivery.cleaned_data, drops)

    def refuse(self, refusals: list[Refusal], rows: list[int]) -> None:
        """Refusals of the sent drops, each beside its field on the drop's own row."""
        add_refusals(
            self.delivery,
            self.drops,
            [Refusal(rows[r.drop], r.field, r.words, r.failure_reason) for r in refusals],
        )


def _page(request: HttpRequest, booking: Booking, status: int = 200) -> HttpResponse:
    places = list(request.business.pickup_places.all())
    return render(
        request,
        "dashboard/new_delivery.html",
        {
            "delivery": booking.delivery,
            "drops": booking.drops,
            "can_book": bool(booking.environments),
            "max_drops": MAX_DROPS,
            "has_places": bool(places),
            "places": {str(p.pk): [p.lat, p.long, p.name] for p in places},
            "map": {"tiles": map_tiles(), "areas": service_areas()},
        },
        status=status,
    )


@require_http_methods(["GET", "HEAD", "POST"])
@business_view
def new_delivery(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        again = request.GET.get("again")
        if again:
            drop = get_object_or_404(Drop, pk=_uuid_or_404(again), business=request.business)
            initial, drops = initial_again(request.business, drop)
            return _page(request, Booking(request, initial=initial, drops=drops))
        return _page(request, Booking(request))
    if "add_drop" in request.POST or "remove_drop" in request.POST:
        return _page(request, _rows_edited(request))
    booking = Booking(request, request.POST)
    if not booking.environments:
        return _page(request, booking, status=403)
    if not booking.is_valid() or not booking.rows:
        return _page(request, booking, status=400)
    return _book(request, booking)


def _book(request: HttpRequest, booking: Booking) -> HttpResponse:
    """Quote first, book only what all passes, through the pipeline, once per form token."""
    rows = booking.rows
    batch = _parsed(booking, rows)
    if batch is None:
        return _page(request, booking, status=400)
    business, environment, key = request.business, booking.environment, booking.key
    # A form already sent (a reload, a second click) goes straight to the pipeline, which
    # replays its answer; a new one is quoted first, so nothing is booked while a drop
    # would be refused: the form comes back as typed, each reason beside its field.
    if booked_batch_id(business=business, environment=environment, key=key) is None:
        refusals = _quote_refusals(business, environment, batch)
        # A twin of this form (a double click) may have been booked since the look above:
        # its drops are then why this one is refused (their references are taken), and the
        # pipeline replays it. Committed before the quote read them, it is seen now.
        if (
            refusals
            and booked_batch_id(business=business, environment=environment, key=key) is None
        ):
            booking.refuse(refusals, rows)
            return _page(request, booking, status=400)
    try:
        result = send_batch(request, environment=environment, idempotency_key=key, batch=batch)
    except (IdempotencyKeyReused, ClientBatchIdReused):
        booked = booked_batch_id(business=business, environment=environment, key=key)
        messages.error(
            request,
            _(
                "This form was booked already, as it was first sent; the changes made to it "
                "since were not booked. Start a new delivery for them."
            ),
        )
        return redirect("dashboard:delivery_booked", booked)
    except (BatchRefused, BillingError) as refused:
        booking.delivery.add_error(None, _("Nothing was booked: %(why)s") % {"why": refused})
        return _page(request, booking, status=409)
    if result.accepted == 0:
        # Refused between the quote and the booking (the wallet spent meanwhile): nothing
        # was made, and the form is kept with a new token for the corrected booking.
        booking.refuse(_refusals_of(result.entries()), rows)
        fresh = booking.delivery.data.copy()
        fresh["form_token"] = new_token()
        booking.delivery.data = fresh
        return _page(request, booking, status=400)
    return redirect("dashboard:delivery_booked", result.batch_id)


def _quote_refusals(business: Business, environment: str, batch: BatchIn) -> list[Refusal]:
    """What a quote of the form's drops refuses now, each reason beside its row."""
    quoted = quote_batch(business=business, environment=environment, batch=batch)
    return [
        refusal_of(n, d.reason.name, d.message, d.side)
        for n, d in enumerate(quoted.decisions.drops)
        if not d.accepted
    ]


def _parsed(booking: Booking, rows: list[int]) -> BatchIn | None:
    """The body through the API's own parser; its field errors on the form (rare: the form
    checks the same shapes)."""
    try:
        return parse_batch(booking.body(rows))
    except ApiError as error:
        for detail in error.details or [{"message": str(error.detail)}]:
            booking.delivery.add_error(None, f"{detail.get('field', '')}: {detail['message']}")
        return None


def _refusals_of(entries) -> list[Refusal]:
    return [
        refusal_of(n, entry.failure_reason, entry.message or "")
        for n, entry in enumerate(entries)
        if not entry.accepted
    ]


def _rows_edited(request: HttpRequest) -> Booking:
    """The form as typed with a drop row added or removed (the page without JavaScript)."""
    data = request.POST
    total = min(_int(data.get(f"{DROPS}-TOTAL_FORMS")), MAX_DROPS)
    rows: list[dict[str, str]] = [{} for _ in range(total)]
    for name, value in data.items():
        if (match := _ROW_FIELD.fullmatch(name)) and int(match[1]) < total:
            rows[int(match[1])][match[2]] = value
    remove = _int(data.get("remove_drop"), default=-1)
    if 0 <= remove < len(rows) and len(rows) > 1:
        rows.pop(remove)
    if "add_drop" in data and len(rows) < MAX_DROPS:
        rows.append({})
    delivery = {name: data.get(name) for name in DeliveryForm.base_fields if name in data}
    return Booking(request, initial=delivery, drops=rows)


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(text or "")
    except ValueError:
        return default


def _uuid_or_404(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise Http404 from None


# --- What the page asks as one types (JSON in the API's envelope, the session's login) ------
# Their codes are the API's; their messages are the page's language, like the page itself.


@require_POST
@business_view
def delivery_quote(request: HttpRequest) -> HttpResponse:
    """The live quote of the form as it stands (the same service as POST /orders/quote):
    each complete drop's price or its refusal in words, and the total; a drop not yet
    complete is "incomplete". CSRF-protected like every POST of the dashboard."""
    booking = Booking(request, request.POST)
    if not booking.environments:
        return error_response(request, 403, "SANDBOX_ONLY", _("This account cannot book yet."))
    if not booking.delivery.is_valid():
        details = [
            {"field": name, "message": " ".join(errors)}
            for name, errors in booking.delivery.errors.items()
        ]
        return error_response(
            request, 400, "VALIDATION_ERROR", _("The form is incomplete."), details
        )
    booking.drops.is_valid()  # each row on its own: the complete ones are quoted
    rows = booking.rows
    batch = None
    if rows:
        try:
            batch = parse_batch(booking.body(rows))
        except ApiError as error:
            return error_response(request, 400, "VALIDATION_ERROR", str(error.detail))
    answer = {"currency": None, "total_price": None, "quote_id": None, "drops": []}
    quoted: dict[int, dict] = {}
    if batch is not None:
        result = quote_batch(
            business=request.business, environment=booking.environment, batch=batch
        )
        data = quote_data(result)
        answer |= {k: data[k] for k in ("currency", "total_price", "quote_id", "counts")}
        for n, (entry, decision) in enumerate(
            zip(data["orders"], result.decisions.drops, strict=True)
        ):
            if decision.accepted:
                quoted[rows[n]] = {"status": "quotable", "price": entry["price"]}
            else:
                refusal = refusal_of(n, decision.reason.name, decision.message, decision.side)
                quoted[rows[n]] = {"status": "rejected", **refusal.as_json()}
    answer["drops"] = [
        quoted.get(n, {"status": "incomplete"}) for n in range(len(booking.drops.forms))
    ]
    return envelope(answer)


@require_GET
@business_view
def delivery_geocode(request: HttpRequest) -> HttpResponse:
    """An address typed on the form, found on the map: {found, lat, long}."""
    address = request.GET.get("address", "").strip()
    if not address or len(address) > 300:
        details = [{"field": "address", "message": _("Give an address of 1 to 300 characters.")}]
        return error_response(request, 400, "VALIDATION_ERROR", _("No address to find."), details)
    pin = geocoded(address)
    found = {"found": pin is not None, "lat": None, "long": None}
    if pin is not None:
        found |= {"lat": pin[0], "long": pin[1]}
    return envelope(found)


@require_GET
@business_view
def delivery_recipients(request: HttpRequest) -> HttpResponse:
    """The address book: the business's own earlier recipients like what is typed."""
    environment = request.GET.get("environment", Environment.SANDBOX)
    if environment not in Environment.values:
        details = [{"field": "environment", "message": _("live or sandbox.")}]
        return error_response(request, 400, "VALIDATION_ERROR", _("Unknown environment."), details)
    found = recipients_like(
        business=request.business, environment=environment, text=request.GET.get("q", "")[:100]
    )
    return envelope({"recipients": found})


# --- The result -----------------------------------------------------------------------------


@require_GET
@business_view
def delivery_booked(request: HttpRequest, pk: uuid.UUID) -> HttpResponse:
    """What a booking made: each drop's order, tracking link and PIN, and the labels."""
    batch = get_object_or_404(Batch, pk=pk, business=request.business)
    entries = stored_results(batch)
    return render(
        request,
        "dashboard/delivery_booked.html",
        {
            "batch": batch,
            "entries": entries,
            "accepted": [e for e in entries if e.accepted],
            "rejected": _refusals_of(entries),
            "rejected_entries": [e for e in entries if not e.accepted],
            "new_url": reverse("dashboard:new_delivery"),
        },
    )
