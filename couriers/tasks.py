"""Background work of couriers, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django_tasks import task

from couriers.services import prune_trail


@task()
def prune_courier_trail() -> int:
    """Delete trail points older than COURIER_TRAIL_HOURS; how many."""
    return prune_trail()
