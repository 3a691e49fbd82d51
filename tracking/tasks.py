"""Background work of tracking, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django_tasks import task

from tracking.services import dispatch_due_orders as dispatch


@task()
def dispatch_due_orders() -> int:
    """Move due SCHEDULED drops to PENDING (one transaction); how many moved."""
    return len(dispatch().moved)
