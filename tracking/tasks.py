"""Background work of tracking, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Min
from django.utils import timezone
from django_tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

from orders.models import Drop
from tracking.scenarios import run_due_scenarios
from tracking.services import dispatch_due_orders as dispatch
from tracking.window_watch import flag_windows_at_risk as flag_windows


@task()
def dispatch_due_orders() -> int:
    """Move due SCHEDULED drops to PENDING (one transaction); how many moved."""
    return len(dispatch().moved)


@task()
def flag_windows_at_risk() -> int:
    """Turn at_risk the drops whose ETA has passed their window's end; how many (one
    order.window_at_risk each, the first time: tracking/window_watch.py)."""
    return flag_windows()


@task()
def run_sandbox_scenarios() -> int:
    """Step every due sandbox scenario drop, then ask for the run of the next due step.

    Runs from the batch that started the scenarios, from itself, and every minute as a sweep
    (core/schedule.py). Returns how many drops it stepped.
    """
    earliest = Drop.objects.filter(scenario_next_at__isnull=False).aggregate(
        next=Min("scenario_next_at")
    )["next"]
    if earliest is None:
        return 0  # nothing left to walk: the chain of runs ends here
    # A successor first, committed on its own: a worker killed in the middle of this run
    # leaves the steps it was taking due, and that run takes them one step later. Not
    # before the earliest step is due: a scheduled drop waits for its pickup time.
    step = timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
    schedule_scenario_run(max(timezone.now() + step, earliest))
    result = run_due_scenarios()
    if result.more:
        schedule_scenario_run(None)
    elif result.next_due is not None:
        schedule_scenario_run(result.next_due)
    return result.stepped


def schedule_scenario_run(due_at: datetime | None, **_signal) -> None:
    """A run at `due_at` (None: now) unless one is already queued to run by then."""
    queued = DBTaskResult.objects.filter(
        task_path=f"{__name__}.run_sandbox_scenarios", status=TaskResultStatus.READY
    )
    if due_at is None:
        run_sandbox_scenarios.enqueue()
        return
    if not queued.filter(run_after__lte=due_at).exists():
        run_sandbox_scenarios.using(run_after=due_at).enqueue()
