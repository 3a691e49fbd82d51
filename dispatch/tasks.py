"""The planner's periodic run, by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django.conf import settings
from django_tasks import task

from dispatch.dispatcher import dispatch_waiting
from dispatch.planner import plan_runs


@task()
def dispatch_orders() -> int:
    """One run of the planner (DISPATCH_PLANNER "runs"), or of the one-order-at-a-time
    dispatcher ("nearest"); how many offers it made."""
    if settings.DISPATCH_PLANNER == "nearest":
        return len(dispatch_waiting().offers)
    return len(plan_runs().offers)
