"""Probes for load balancers and orchestrators (docs/contract.md §16)."""

from __future__ import annotations

from datetime import datetime

from django.db import DatabaseError, connection
from django.db.models import Case, Count, F, Min, Q, When
from django.db.models.functions import Greatest
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max

from core.middleware import RETRY_AFTER_SECONDS


@never_cache
def liveness(request) -> HttpResponse:
    """The process answers; the database is not asked, so a database outage restarts nothing."""
    return HttpResponse("ok", content_type="text/plain")


@never_cache
def readiness(request) -> JsonResponse:
    """Ready when the database answers; 503 (take this instance out of rotation) when not.

    With it, the task queue's backlog: tasks due to run that no worker has started, and how
    long the oldest has waited (0 with none) — a growing figure means too few workers.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        tasks = due_tasks()
    except DatabaseError:
        response = JsonResponse({"database": "unavailable"}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return JsonResponse({"database": "ok", "tasks": tasks})


def due_tasks(now: datetime | None = None) -> dict[str, int]:
    """READY tasks whose time has come (run_after unset or past), and the oldest one's wait.

    A task is due from when it was enqueued, or from its run_after if that is later;
    django_tasks_db stores an unset run_after as a far-future sentinel.
    """
    now = now or timezone.now()
    never = get_date_max()
    due = DBTaskResult.objects.filter(
        Q(run_after=never) | Q(run_after__lte=now), status=TaskResultStatus.READY
    )
    found = due.aggregate(
        due=Count("pk"),
        since=Min(
            Case(
                When(run_after=never, then=F("enqueued_at")),
                default=Greatest("run_after", "enqueued_at"),
            )
        ),
    )
    waited = (now - found["since"]).total_seconds() if found["since"] else 0
    return {"due": found["due"], "oldest_due_seconds": max(0, int(waited))}
