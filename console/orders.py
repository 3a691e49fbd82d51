"""Operator console for orders: read-only batches, and orders and drops moved only through
the delivery state machine (tracking.services), delivered with their proof
(docs/contract.md §14)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.files.storage import default_storage
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html

from accounts.models import Environment
from console import queue
from console.columns import ServiceTimesAdmin, ServiceTimesInline
from console.forms import DeliverForm, FailForm, ReturnForm
from console.history import record, record_each
from core.admin import GatedActionsAdmin, ReadOnlyAdmin
from couriers.models import Driver
from dispatch.offers import TakeBackRefused, take_back_order
from orders.links import drop_tracking_url
from orders.models import (
    Batch,
    DeliveryEvent,
    Drop,
    DropStatus,
    FailureReason,
    IdempotencyRecord,
    Order,
    UndeliverableAction,
)
from orders.statuses import ACTIVE_STATUSES, TO_RETURN
from tracking.lifecycle import MoveResult, Outcome
from tracking.proof import photo_url
from tracking.services import DriverRefused, move_drops_as_operator, store_proof_photo


@admin.register(Batch)
class BatchAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    list_display = [
        "client_batch_id",
        "business",
        "environment",
        "status",
        "total",
        "accepted",
        "rejected",
        "created_at",
    ]
    list_filter = ["status", "environment"]
    search_fields = ["client_batch_id", "business__name"]
    exclude = ["response"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    list_display = ["key", "business", "environment", "batch", "created_at"]


class DeliveryEventInline(ServiceTimesInline, admin.TabularInline):
    model = DeliveryEvent
    extra = 0
    fields = ["at", "status", "actor"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class AssignDriverForm(forms.Form):
    driver = forms.ModelChoiceField(queryset=Driver.objects.filter(active=True))

    def __init__(self, *args, live: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if live:  # the sandbox test driver is never offered for a live order (docs/contract.md §20)
            field = self.fields["driver"]
            field.queryset = field.queryset.filter(is_sandbox_test_driver=False)
            field.error_messages["invalid_choice"] = (
                "Choose an active driver from the list: the Sandbox Test Driver drives sandbox "
                "orders only."
            )


def _drops_for_form(drops: QuerySet[Drop]) -> list[Drop]:
    """The drops as the confirmation forms need them, by client_order_id.

    Whether a drop asks for a PIN is read, never the PIN: it does not even reach the view.
    """
    asks_pin = ExpressionWrapper(Q(dropoff_pin__isnull=False), output_field=BooleanField())
    return list(
        drops.only("id", "client_order_id", "status", "undeliverable_action")
        .annotate(asks_pin=asks_pin)
        .order_by("client_order_id", "pk")
    )


def _refusal(request: HttpRequest, refused: dict[UUID, str]) -> None:
    if refused:
        statuses = ", ".join(sorted(set(refused.values())))
        messages.warning(request, f"{len(refused)} drop(s) refused: illegal from {statuses}.")


def _report(request: HttpRequest, result: MoveResult, verb: str) -> None:
    if result.moved:
        messages.success(request, f"{len(result.moved)} drop(s) {verb}.")
    _refusal(request, result.refused)


def _report_delivery(request: HttpRequest, result: MoveResult, names: dict[UUID, str]) -> None:
    """What marking delivered did to each drop; never the right PIN, which it doesn't know."""
    delivered = [d for d in result.moved if d.status == DropStatus.DELIVERED]
    failed = sorted(d.client_order_id for d in result.moved if d.status == DropStatus.FAILED)
    if delivered:
        messages.success(request, f"{len(delivered)} drop(s) delivered.")
    most = settings.MAX_PIN_ATTEMPTS
    for drop_id, attempts in sorted(result.wrong_pin.items(), key=lambda i: names[i[0]]):
        messages.warning(
            request, f"Wrong PIN for {names[drop_id]} ({attempts} of {most}): not delivered."
        )
    for name in sorted(names[drop_id] for drop_id in result.pin_missing):
        messages.warning(request, f"No PIN entered for {name}: not delivered.")
    for name in failed:
        messages.error(request, f"{name} failed: a wrong PIN {most} times (WRONG_PIN).")
    pin_refused = result.pin_missing | result.wrong_pin.keys()
    _refusal(request, {k: v for k, v in result.refused.items() if k not in pin_refused})


def _delivered(drop: Drop, outcome: Outcome) -> str:
    """The log's sentence for a delivered drop: the proof it was delivered with."""
    proof = ["the right PIN"] if drop.asks_pin else []
    if outcome.received_by:
        proof.append(f"received by {outcome.received_by}")
    if outcome.photo:
        proof.append("a photo")
    return "Marked delivered" + (f" ({', '.join(proof)})" if proof else "") + "."


def _log_delivery(
    request: HttpRequest, result: MoveResult, drops: list[Drop], outcome: Outcome
) -> None:
    """The log of a delivery: each drop delivered, failed on the last wrong PIN, or with a
    wrong PIN counted (a change too: its attempts went up)."""
    most = settings.MAX_PIN_ATTEMPTS
    wrong_pin_failed = f"Marked failed: a wrong PIN {most} times ({FailureReason.WRONG_PIN})."
    by_id = {d.pk: d for d in drops}  # as the form read them: whether each asks for a PIN
    record_each(
        request,
        [
            *(
                (
                    by_id[d.pk],
                    _delivered(by_id[d.pk], outcome)
                    if d.status == DropStatus.DELIVERED
                    else wrong_pin_failed,
                )
                for d in result.moved
            ),
            *(
                (by_id[pk], f"Wrong PIN entered ({n} of {most}): not delivered.")
                for pk, n in result.wrong_pin.items()
            ),
        ],
    )


def _actor(request: HttpRequest) -> str:
    return f"operator {request.user.get_username()}"


def _confirmation(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    template: str,
    **context,
) -> TemplateResponse:
    return TemplateResponse(
        request,
        template,
        {
            **modeladmin.admin_site.each_context(request),
            "queryset": queryset,
            "opts": modeladmin.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            **context,
        },
    )


def _move(
    modeladmin: DispatchAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    *,
    to: str,
    verb: str,
    logged: str,
) -> None:
    """A move that asks nothing more (picked up, cancel), logged on each drop it moved."""
    drop_ids = list(modeladmin.drops_of(queryset).values_list("pk", flat=True))
    result = move_drops_as_operator(drop_ids=drop_ids, to=to, actor=_actor(request))
    _report(request, result, verb)
    record(request, result.moved, logged)


@admin.action(description="Mark picked up", permissions=["dispatch"])
def mark_picked_up(modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    _move(
        modeladmin,
        request,
        queryset,
        to=DropStatus.PICKED_UP,
        verb="picked up",
        logged="Marked picked up.",
    )


@admin.action(description="Cancel (refund or reverse the charge)", permissions=["cancel"])
def mark_cancelled(modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    _move(
        modeladmin,
        request,
        queryset,
        to=DropStatus.CANCELLED,
        verb="cancelled (refunded)",
        logged="Cancelled; the charge refunded (wallet) or reversed (invoice).",
    )


@admin.action(description="Assign a driver (pending drops → ASSIGNED)", permissions=["dispatch"])
def assign_driver(
    modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    drops = modeladmin.drops_of(queryset)
    live = drops.exclude(environment=Environment.SANDBOX).exists()
    form = AssignDriverForm(request.POST if "apply" in request.POST else None, live=live)
    if not form.is_valid():
        return _confirmation(
            modeladmin,
            request,
            queryset,
            "admin/tracking/assign_driver.html",
            form=form,
            title="Assign a driver",
        )
    driver = form.cleaned_data["driver"]
    try:
        result = move_drops_as_operator(
            drop_ids=list(drops.values_list("pk", flat=True)),
            to=DropStatus.ASSIGNED,
            actor=_actor(request),
            driver=driver,
        )
    except DriverRefused as refused:
        messages.error(request, str(refused))
        return None
    _report(request, result, f"assigned to {driver}")
    record(request, result.moved, f"Assigned to driver {driver} (id {driver.pk}).")
    return None


@admin.action(
    description="Take back from courier (not picked up → PENDING)", permissions=["dispatch"]
)
def take_back(modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """Each selected order taken back from its courier before pickup, to wait for another
    (dispatch.offers.take_back_order); a refusal is said per order, the others go ahead."""
    for order in queryset.order_by("created_at", "pk"):
        try:
            taken = take_back_order(order=order, actor=_actor(request))
        except TakeBackRefused as refused:
            messages.error(request, f"Order of {order.pickup_name}: {refused}")
            continue
        record(
            request,
            taken.moved,
            f"Taken back from courier {taken.courier} (id {taken.courier.pk}).",
        )
        messages.success(
            request,
            f"Order of {order.pickup_name}: {len(taken.moved)} drop(s) taken back from "
            f"{taken.courier}; it waits for another courier.",
        )


@dataclass(frozen=True, slots=True)
class ConfirmedMove:
    """A move that asks something first, on a confirmation page: admin/tracking/<action>.html."""

    action: str  # the admin action's name
    source: str  # the status its drops move from
    source_words: str  # how the page names them ("picked-up drops")
    verb: str  # what they are marked ("delivered")


DELIVER = ConfirmedMove("mark_delivered", DropStatus.PICKED_UP, "picked-up", "delivered")
FAIL = ConfirmedMove("mark_failed", DropStatus.PICKED_UP, "picked-up", "failed")
START_RETURN = ConfirmedMove("mark_returning", DropStatus.FAILED, "failed", "returning")
RETURN = ConfirmedMove("mark_returned", DropStatus.RETURNING, "returning", "returned")


class Confirmation(NamedTuple):
    form: forms.Form | None  # filled in and valid: make the move
    page: TemplateResponse | None  # else what the action answers (None: refused at once)


def _confirm(
    modeladmin: DispatchAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    move: ConfirmedMove,
    drops: list[Drop],
    make_form: Callable[..., forms.Form],
) -> Confirmation:
    """The confirmation step every such move shares: nothing selected can move, refused at
    once; else its form, shown (again, with its errors) until it is posted back valid.

    `make_form(data, files, ready)` builds the form for the drops that can move."""
    ready = [d for d in drops if d.status == move.source]
    if not ready:
        _refusal(request, {d.pk: d.status for d in drops})
        return Confirmation(None, None)
    applying = "apply" in request.POST
    form = make_form(request.POST if applying else None, request.FILES if applying else None, ready)
    if form.is_valid():
        return Confirmation(form, None)
    page = _confirmation(
        modeladmin,
        request,
        queryset,
        f"admin/tracking/{move.action}.html",
        form=form,
        action=move.action,
        verb=move.verb,
        source_words=move.source_words,
        submit=f"Mark {move.verb}",
        ready=ready,
        elsewhere=[d for d in drops if d.status != move.source],
        title=f"Mark {move.verb}",
    )
    return Confirmation(None, page)


@admin.action(description="Mark delivered…", permissions=["dispatch"])
def mark_delivered(
    modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    drops = _drops_for_form(modeladmin.drops_of(queryset))
    form, page = _confirm(
        modeladmin,
        request,
        queryset,
        DELIVER,
        drops,
        lambda data, files, ready: DeliverForm(
            data, files, asking_pin=[d for d in ready if d.asks_pin]
        ),
    )
    if form is None:
        return page
    photo = form.cleaned_data["photo"]
    stored = store_proof_photo(photo) if photo else None
    outcome = Outcome(
        pins=form.pins(), photo=stored, received_by=form.cleaned_data["received_by"] or None
    )
    result = move_drops_as_operator(
        drop_ids=[d.pk for d in drops],
        to=DropStatus.DELIVERED,
        actor=_actor(request),
        outcome=outcome,
    )
    if stored and not any(d.status == DropStatus.DELIVERED for d in result.moved):
        default_storage.delete(stored)  # no drop refers to it
    _report_delivery(request, result, {d.pk: d.client_order_id for d in drops})
    _log_delivery(request, result, drops, outcome)
    return None


@admin.action(description="Mark failed…", permissions=["dispatch"])
def mark_failed(
    modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    drops = _drops_for_form(modeladmin.drops_of(queryset))
    form, page = _confirm(
        modeladmin, request, queryset, FAIL, drops, lambda data, files, ready: FailForm(data)
    )
    if form is None:
        return page
    reason = form.cleaned_data["reason"]
    result = move_drops_as_operator(
        drop_ids=[d.pk for d in drops],
        to=DropStatus.FAILED,
        actor=_actor(request),
        outcome=Outcome(failure_reason=reason),
    )
    _report(request, result, "failed")
    label = FailureReason(reason).label.lower()
    record(request, result.moved, f"Marked failed: {label} ({reason}).")
    return None


@admin.action(description="Send back to the pickup (failed → RETURNING)…", permissions=["dispatch"])
def mark_returning(
    modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    drops = _drops_for_form(modeladmin.returns_of(queryset))
    form, page = _confirm(
        modeladmin,
        request,
        queryset,
        START_RETURN,
        drops,
        lambda data, files, ready: forms.Form(data),
    )
    if form is None:
        return page
    result = move_drops_as_operator(
        drop_ids=[d.pk for d in drops], to=DropStatus.RETURNING, actor=_actor(request)
    )
    _report(request, result, "on their way back to the pickup")
    _refusal_of_disposal(request, drops, result)
    record(request, result.moved, "Sent back to the pickup (RETURNING).")
    return None


@admin.action(description="Mark returned (back at the pickup)…", permissions=["dispatch"])
def mark_returned(
    modeladmin: DispatchAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    drops = _drops_for_form(modeladmin.returns_of(queryset))
    form, page = _confirm(
        modeladmin,
        request,
        queryset,
        RETURN,
        drops,
        lambda data, files, ready: ReturnForm(data),
    )
    if form is None:
        return page
    received_by = form.cleaned_data["received_by"]
    result = move_drops_as_operator(
        drop_ids=[d.pk for d in drops],
        to=DropStatus.RETURNED,
        actor=_actor(request),
        outcome=Outcome(return_received_by=received_by),
    )
    _report(request, result, "returned (the return fee charged)")
    record(request, result.moved, f"Marked returned, received by {received_by}.")
    return None


def _refusal_of_disposal(request: HttpRequest, drops: list[Drop], result: MoveResult) -> None:
    """Say why a failed drop did not move: it is to be disposed of, never returned."""
    disposed = sorted(
        d.client_order_id
        for d in drops
        if d.pk in result.refused and d.undeliverable_action == UndeliverableAction.DISPOSE
    )
    if disposed:
        messages.warning(
            request,
            f"To be disposed of, never returned: {', '.join(disposed)} (docs/contract.md §19).",
        )


class DispatchAdmin(ServiceTimesAdmin, GatedActionsAdmin, ReadOnlyAdmin):
    """Orders and drops are read-only; each move is an action behind its own permission,
    through the state machine, logged on the drops it changed (console.history)."""

    actions = [
        assign_driver,
        mark_picked_up,
        mark_delivered,
        mark_failed,
        mark_returning,
        mark_returned,
        mark_cancelled,
    ]

    def drops_of(self, queryset: QuerySet) -> QuerySet[Drop]:
        """The drops an action on this changelist's selection applies to."""
        raise NotImplementedError

    def returns_of(self, queryset: QuerySet) -> QuerySet[Drop]:
        """The drops a return action on this changelist's selection applies to."""
        raise NotImplementedError

    def has_dispatch_permission(self, request):
        return request.user.has_perm("orders.dispatch_drop")

    def has_cancel_permission(self, request):
        return request.user.has_perm("orders.cancel_drop")


class WaitingForDriverFilter(admin.SimpleListFilter):
    """The index's "Waiting for a driver", as a filter of the orders list."""

    title = "waiting for"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("driver", "A driver (live)")]

    def queryset(self, request, queryset: QuerySet[Order]) -> QuerySet[Order]:
        if self.value() == "driver":
            return queryset.filter(pk__in=queue.waiting_for_driver().values("pk"))
        return queryset


class DropInline(ServiceTimesInline, admin.TabularInline):
    model = Drop
    extra = 0
    fields = ["client_order_id", "status", "recipient_name", "price", "updated_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Order)
class OrderAdmin(DispatchAdmin):
    list_display = [
        "id",
        "business",
        "environment",
        "pickup_name",
        "driver",
        "pickup_scheduled_at",
        "created_at",
    ]
    list_filter = [WaitingForDriverFilter, "environment", "drops__status"]
    search_fields = ["id", "business__name", "drops__client_order_id"]
    inlines = [DropInline]
    actions = [*DispatchAdmin.actions, take_back]

    def drops_of(self, queryset: QuerySet[Order]) -> QuerySet[Drop]:
        """The selected orders' drops still on their way (an action moves no finished one)."""
        return Drop.objects.filter(order__in=queryset, status__in=[*ACTIVE_STATUSES])

    def returns_of(self, queryset: QuerySet[Order]) -> QuerySet[Drop]:
        """The selected orders' drops that failed or are on their way back."""
        return Drop.objects.filter(order__in=queryset, status__in=TO_RETURN)


@admin.register(Drop)
class DropAdmin(DispatchAdmin):
    list_display = [
        "client_order_id",
        "business",
        "environment",
        "status",
        "price_column",
        "created_at",
    ]
    list_filter = ["status", "environment", "failure_reason"]
    search_fields = ["client_order_id", "external_waybill", "business__name"]
    # The PIN is the recipient's proof that the parcel reached them: an operator who could
    # read it could "deliver" without them. Listed fields only, so a new column stays hidden
    # until someone decides to show it.
    exclude = ["dropoff_pin", "pod_photo"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "client_order_id",
                    "business",
                    "environment",
                    "order",
                    "batch",
                    "status",
                    "external_waybill",
                    "price",
                    "currency",
                    "created_at",
                    "updated_at",
                ]
            },
        ),
        (
            "Recipient",
            {
                "fields": [
                    "recipient_name",
                    "recipient_phone",
                    "address",
                    "lat",
                    "long",
                    "resolved",
                    "tracking_link",
                ]
            },
        ),
        # The promise to the recipient and the word to the courier (docs/contract.md §17).
        (
            "Commitments",
            {
                "fields": [
                    "window_start",
                    "window_end",
                    "window_status",
                    "notes",
                    "undeliverable_action",
                ]
            },
        ),
        (
            "Proof of delivery",
            {
                "fields": [
                    "pin_required",
                    "pin_attempts",
                    "pod_method",
                    "pod_received_by",
                    "photo",
                    "failure_reason",
                ]
            },
        ),
        ("Sandbox", {"fields": ["sandbox_scenario", "scenario_next_at", "courier_progress"]}),
    ]
    readonly_fields = ["tracking_link", "pin_required", "photo"]
    inlines = [DeliveryEventInline]

    def drops_of(self, queryset: QuerySet[Drop]) -> QuerySet[Drop]:
        return Drop.objects.filter(pk__in=queryset.values("pk"))

    def returns_of(self, queryset: QuerySet[Drop]) -> QuerySet[Drop]:
        return self.drops_of(queryset)

    @admin.display(description="Price", ordering="price")
    def price_column(self, drop: Drop) -> str:
        return f"{drop.price} {drop.currency}"  # one column: a list fits 1280 px

    @admin.display(description="Tracking link")
    def tracking_link(self, drop: Drop) -> str:
        if drop.pk is None:
            return self.get_empty_value_display()
        url = drop_tracking_url(drop.pk)
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    @admin.display(description="PIN required")
    def pin_required(self, drop: Drop) -> str:
        return "yes" if drop.dropoff_pin is not None else "no"

    @admin.display(description="Photo")
    def photo(self, drop: Drop) -> str:
        if not drop.pod_photo:
            return self.get_empty_value_display()
        return format_html(
            '<a href="{}" target="_blank" rel="noopener">photo</a> (the link works for {} min)',
            photo_url(drop.pk),
            settings.POD_PHOTO_URL_SECONDS // 60,
        )
