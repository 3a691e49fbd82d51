"""The dispatcher's periodic run, by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django_tasks import task

from dispatch.dispatcher import dispatch_waiting


@task()
def dispatch_orders() -> int:
    """One run of the dispatcher; how many offers it made."""
    return len(dispatch_waiting().offers)
