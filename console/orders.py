"""Operator console for orders: read-only batches, and orders and drops moved only through
the delivery state machine (tracking.services)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from core.admin import GatedActionsAdmin, ReadOnlyAdmin
from orders.models import (
    ACTIVE_STATUSES,
    Batch,
    DeliveryEvent,
    Driver,
    Drop,
    DropStatus,
    IdempotencyRecord,
    Order,
)
from tracking.services import move_drops_as_operator


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
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
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ["key", "business", "environment", "batch", "created_at"]


@admin.register(Driver)
class DriverAdmin(admin.ModelAdmin):
    list_display = ["name", "phone", "active", "is_sandbox_test_driver"]


class DeliveryEventInline(admin.TabularInline):
    model = DeliveryEvent
    extra = 0
    fields = ["at", "status", "actor"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class AssignDriverForm(forms.Form):
    driver = forms.ModelChoiceField(queryset=Driver.objects.filter(active=True))


def _report(request, result, verb: str) -> None:
    if result.moved:
        messages.success(request, f"{len(result.moved)} drop(s) {verb}.")
    if result.refused:
        statuses = ", ".join(sorted(set(result.refused.values())))
        messages.warning(
            request, f"{len(result.refused)} drop(s) refused: illegal from {statuses}."
        )


def _actor(request) -> str:
    return f"operator {request.user.get_username()}"


def _dispatch_actions(drop_ids_of):
    """Admin actions for a queryset (orders or drops), each through the state machine."""

    def mover(to: str, verb: str, description: str, permission: str = "dispatch"):
        def action(modeladmin, request, queryset):
            result = move_drops_as_operator(
                drop_ids=drop_ids_of(queryset), to=to, actor=_actor(request)
            )
            _report(request, result, verb)

        action.__name__ = f"mark_{to.lower()}"
        return admin.action(description=description, permissions=[permission])(action)

    def assign_driver(modeladmin, request, queryset):
        form = AssignDriverForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            result = move_drops_as_operator(
                drop_ids=drop_ids_of(queryset),
                to=DropStatus.ASSIGNED,
                actor=_actor(request),
                driver=form.cleaned_data["driver"],
            )
            _report(request, result, f"assigned to {form.cleaned_data['driver']}")
            return None
        return TemplateResponse(
            request,
            "admin/tracking/assign_driver.html",
            {
                **modeladmin.admin_site.each_context(request),
                "form": form,
                "queryset": queryset,
                "opts": modeladmin.model._meta,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "title": "Assign a driver",
            },
        )

    assign_driver = admin.action(
        description="Assign a driver (pending drops → ASSIGNED)", permissions=["dispatch"]
    )(assign_driver)
    return [
        assign_driver,
        mover(DropStatus.PICKED_UP, "picked up", "Mark picked up"),
        mover(DropStatus.DELIVERED, "delivered", "Mark delivered"),
        mover(DropStatus.FAILED, "failed", "Mark failed"),
        mover(
            DropStatus.CANCELLED,
            "cancelled (refunded)",
            "Cancel (refund or reverse the charge)",
            permission="cancel",
        ),
    ]


class DispatchAdmin(GatedActionsAdmin, ReadOnlyAdmin):
    """Orders and drops are read-only; each move is an action behind its own permission."""

    def has_dispatch_permission(self, request):
        return request.user.has_perm("orders.dispatch_drop")

    def has_cancel_permission(self, request):
        return request.user.has_perm("orders.cancel_drop")


class DropInline(admin.TabularInline):
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
    list_filter = ["environment", "drops__status"]
    search_fields = ["id", "business__name", "drops__client_order_id"]
    inlines = [DropInline]
    actions = _dispatch_actions(
        lambda qs: list(
            Drop.objects.filter(order__in=qs, status__in=[*ACTIVE_STATUSES]).values_list(
                "pk", flat=True
            )
        )
    )


@admin.register(Drop)
class DropAdmin(DispatchAdmin):
    list_display = [
        "client_order_id",
        "business",
        "environment",
        "status",
        "price",
        "currency",
        "created_at",
    ]
    list_filter = ["status", "environment"]
    search_fields = ["client_order_id", "external_waybill", "business__name"]
    inlines = [DeliveryEventInline]
    actions = _dispatch_actions(lambda qs: list(qs.values_list("pk", flat=True)))
