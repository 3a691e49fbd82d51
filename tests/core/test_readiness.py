"""/readyz tells the task backlog (docs/contract.md §16): tasks due that no worker has started yet,
and how long the oldest has waited."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from core.health import due_tasks
from tracking.tasks import dispatch_due_orders


def enqueued(ago: timedelta, *, run_after=None, status: str | None = None) -> DBTaskResult:
    task = dispatch_due_orders.using(run_after=run_after) if run_after else dispatch_due_orders
    row = DBTaskResult.objects.get(pk=task.enqueue().id)
    row.enqueued_at = timezone.now() - ago
    row.status = status or row.status
    row.save(update_fields=["enqueued_at", "status"])
    return row


def test_with_no_task_the_backlog_is_empty(db, client):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"database": "ok", "tasks": {"due": 0, "oldest_due_seconds": 0}}


def test_ready_tasks_whose_time_has_come_are_due_since_then(db, client):
    now = timezone.now()
    enqueued(timedelta(seconds=90))  # waiting for a minute and a half: the oldest
    enqueued(timedelta(seconds=5))
    # Deferred: due from its run_after, not from when it was enqueued.
    enqueued(timedelta(minutes=10), run_after=now - timedelta(seconds=30))
    enqueued(timedelta(minutes=10), run_after=now + timedelta(minutes=1))  # not yet due
    enqueued(timedelta(minutes=20), status="RUNNING")  # a worker has it
    enqueued(timedelta(minutes=30), status="SUCCESSFUL")
    enqueued(timedelta(minutes=30), status="FAILED")

    tasks = client.get("/readyz").json()["tasks"]

    assert tasks["due"] == 3
    # The oldest's 90 s and more, whatever the machine's pace; not the deferred one's 600 s.
    assert 90 <= tasks["oldest_due_seconds"] < 120


def test_a_deferred_task_is_due_from_its_run_after(db):
    now = timezone.now()
    enqueued(timedelta(minutes=10), run_after=now - timedelta(seconds=30))

    assert due_tasks(now) == {"due": 1, "oldest_due_seconds": 30}
    assert due_tasks(now - timedelta(seconds=31)) == {"due": 0, "oldest_due_seconds": 0}
