"""Background work of events, run by `manage.py db_worker`: sending webhook deliveries, the
sweep that re-asks for any due delivery without a queued task, and the retention purge.

The sending itself is events.delivery's; this module asks for the tasks it says go on
(`Sent.next_tasks`), so the task module imports the sending one and never the reverse.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django_tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult, get_date_max

from events.delivery import NextTask, endpoints_to_sweep, send_due
from events.retention import purge_events_before


@task()
def send_due_deliveries(endpoint_id: str) -> int:
    """Send this endpoint's due deliveries; returns how many were attempted."""
    return send_due_deliveries_of(endpoint_id)


def send_due_deliveries_of(endpoint_id) -> int:
    """What the task runs: in a task worker, wake the worker's sender (events.delivery,
    `send_due`); elsewhere send here, then ask for the tasks that go on from it. How many
    attempts were made here."""
    sent = send_due(endpoint_id)
    for next_task in sent.next_tasks:
        ask_for(next_task)
    return sent.attempted


def ask_for(next_task: NextTask) -> None:
    """Enqueue the task unless one for the endpoint is already queued to run by then (it
    sends as much: a task sends its business's due deliveries)."""
    # run_after orders a task before those without one once due: "now" would jump the queue.
    at = next_task.at
    due_now = at is None or at <= timezone.now()
    by = Q(run_after=get_date_max()) | Q(run_after__lte=timezone.now() if due_now else at)
    queued = DBTaskResult.objects.filter(
        by,
        status=TaskResultStatus.READY,
        task_path=send_due_deliveries.module_path,
        args_kwargs__args=[str(next_task.endpoint_id)],
    )
    if queued.exists():
        return
    sender = send_due_deliveries if due_now else send_due_deliveries.using(run_after=at)
    sender.enqueue(str(next_task.endpoint_id))


@task()
def sweep_deliveries() -> int:
    """Every minute: a send task for each endpoint with due deliveries and none queued.

    The delivery rows are the truth, not the queue: a delivery whose worker was killed
    mid-send is due again once its lease ends, and this is what sends it. Returns how
    many tasks were enqueued.
    """
    queued = set(
        DBTaskResult.objects.ready()  # runnable now: a retry's task hours ahead does not count
        .filter(task_path=send_due_deliveries.module_path)
        .values_list("args_kwargs__args__0", flat=True)
        .distinct()
    )
    endpoint_ids = [pk for pk in endpoints_to_sweep() if str(pk) not in queued]
    for endpoint_id in endpoint_ids:
        send_due_deliveries.enqueue(str(endpoint_id))
    return len(endpoint_ids)


@task()
def purge_old_events() -> int:
    """Hourly: delete events older than EVENT_RETENTION_DAYS; returns how many."""
    cutoff = timezone.now() - timedelta(days=settings.EVENT_RETENTION_DAYS)
    return purge_events_before(cutoff)
