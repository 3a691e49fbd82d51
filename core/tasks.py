"""Background work of core, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from core.counters import purge_ended

# How long a finished task's row (return value or traceback) is kept: django_tasks_db's
# own default for `manage.py prune_db_task_results`, the operator's way to prune by hand.
TASK_RESULT_RETENTION = timedelta(days=14)


@task()
def purge_rate_counters() -> int:
    """Delete the rows of rate-limit and login counters whose window has ended; how many."""
    return purge_ended()


@task()
def prune_task_results() -> int:
    """Delete the rows of tasks that finished (succeeded or failed) long ago; how many."""
    cutoff = timezone.now() - TASK_RESULT_RETENTION
    return DBTaskResult.objects.finished().filter(finished_at__lte=cutoff).delete()[0]
