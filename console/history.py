"""Every operator action goes into Django admin's log (LogEntry): the index's "Recent actions"
and each object's History say who did what, when, in a sentence (docs/operator.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.db.models import Model
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from console.columns import ServiceTimesAdmin, cut
from core.admin import ReadOnlyAdmin


def record(request: HttpRequest, objects: Sequence[Model], message: str) -> None:
    """One log entry per changed object, all in one INSERT; nothing when nothing changed."""
    if objects:
        LogEntry.objects.log_actions(
            user_id=request.user.pk,
            queryset=objects,
            action_flag=CHANGE,
            change_message=message,
        )


def record_each(request: HttpRequest, changes: Iterable[tuple[Model, str]]) -> None:
    """Objects changed in different ways by one action: one INSERT per distinct sentence."""
    by_message: dict[str, list[Model]] = defaultdict(list)
    for changed, message in changes:
        by_message[message].append(changed)
    for message, objects in by_message.items():
        record(request, objects, message)


@admin.register(LogEntry)
class LogEntryAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    """Every operator's actions, newest first (the index shows only one's own ten).

    Superusers see it; a group sees it with the admin.view_logentry permission.
    """

    list_display = ["action_time", "user", "content_type", "object_column", "said"]
    list_filter = ["content_type"]
    list_select_related = ["user", "content_type"]
    search_fields = ["object_repr", "change_message", "user__username"]

    @admin.display(description="Object", ordering="object_repr")
    def object_column(self, entry: LogEntry) -> SafeString | str:
        url = entry.get_admin_url()
        if entry.is_deletion() or not url:
            return cut(entry.object_repr, 40)
        return format_html('<a href="{}">{}</a>', url, cut(entry.object_repr, 40))

    @admin.display(description="What was done")
    def said(self, entry: LogEntry) -> str:
        return entry.get_change_message()
