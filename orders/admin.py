"""Operator console for orders: read-only batches; orders and drops (dispatch in tracking)."""

from __future__ import annotations

from django.contrib import admin

from billing.admin import ReadOnlyAdmin
from orders.models import Batch, DeliveryEvent, Driver, IdempotencyRecord


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
