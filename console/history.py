"""Every operator action goes into Django admin's log (LogEntry): the index's "Recent actions"
and each object's History say who did what, when, in a sentence (docs/operator.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from django.contrib.admin.models import CHANGE, LogEntry
from django.db.models import Model
from django.http import HttpRequest


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
