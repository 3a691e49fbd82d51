"""Real `manage.py db_worker` processes on PostgreSQL (docs/contract.md §15): a worker runs what is
enqueued, two workers' schedulers racing for the same slots enqueue each one once, and a
worker SIGKILLed in the middle of a periodic job leaves nothing half-done for the next slot
to finish.

The races are made to happen, not hoped for: a temporary trigger holds the first claim of a
slot inside its transaction (batch_hold.BatchHold, as for the batches) until the second
worker is seen waiting on it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from core.models import PeriodicSlot
from core.schedule import MINUTE, SCHEDULE
from core.scheduler import enqueue_due_jobs
from orders.models import Drop, DropStatus, Order
from tests.helpers import timeline_of
from tests.reliability.batch_hold import HoldPoint, activity, backend_alive
from tests.reliability.gunicorn_server import wait_for
from tests.tracking.helpers import drop_in
from tests.workers import Worker, db_worker, wait_for_task, wait_until_idle
from tracking.tasks import dispatch_due_orders

# Task workers started, raced and killed: left out of the fast loop.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DISPATCH = "tracking.tasks.dispatch_due_orders"
CLAIMING_A_SLOT = HoldPoint("claiming a periodic slot", "core_periodic_slot", "INSERT", frozenset())
MOVING_A_DROP = HoldPoint(
    "dispatch, the drop moved, writing its event", "orders_deliveryevent", "INSERT", frozenset()
)


@pytest.fixture
def due_drop(make_tenant) -> Drop:
    """A SCHEDULED drop whose pickup time passed a minute ago (by the real clock)."""
    tenant = make_tenant(name="Scheduled Shop")
    drop = drop_in(DropStatus.SCHEDULED, business=tenant.business)
    Order.objects.filter(pk=drop.order_id).update(
        pickup_scheduled_at=timezone.now() - timedelta(minutes=1)
    )
    return drop


def statuses_of(drop: Drop) -> list[str]:
    """The drop's whole history: its creation (no row), then its stored moves."""
    return [event.status for event in timeline_of(drop.pk)]


def waiting_backends() -> list[tuple[int, str]]:
    """(pid, what it waits for) of the other backends blocked on a lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, wait_event FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchall()


def test_a_worker_runs_an_enqueued_task_and_stops_leaving_nothing_running(due_drop, tmp_path):
    with db_worker(tmp_path / "worker.log") as worker:
        result = dispatch_due_orders.enqueue()
        finished = wait_for_task(result.id)

    assert (finished.status, finished.return_value) == ("SUCCESSFUL", 1), finished.traceback
    assert finished.worker_ids == [worker.worker_id]
    assert Drop.objects.get(pk=due_drop.pk).status == DropStatus.PENDING
    assert statuses_of(due_drop) == [DropStatus.SCHEDULED, DropStatus.PENDING]
    # Stopped, and reaped: no process of that pid is left.
    assert not worker.alive
    assert worker.process.returncode == 0, worker.log_tail()


def test_two_workers_racing_for_the_same_slots_enqueue_each_once(due_drop, hold, tmp_path):
    hold.hold(CLAIMING_A_SLOT)
    with contextlib.ExitStack() as running:
        workers = []
        for n in (1, 2):
            worker = Worker(connection.settings_dict, tmp_path / f"w{n}.log", scheduler=True)
            running.callback(worker.stop)
            workers.append(worker.launch())
        for worker in workers:
            worker.wait_started()

        # One holds its claim of the first slot uncommitted; the other's insert of the same
        # slot waits for that transaction to end.
        def racing() -> bool:
            return sorted(wait for _, wait in waiting_backends()) == ["advisory", "transactionid"]

        try:
            wait_for("both schedulers to claim the same slot", racing)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the database meanwhile:\n{activity()}") from None
        hold.release()

        # Every job of the schedule is claimed (a job added since counts too), then run.
        wait_for("every job to be claimed", lambda: PeriodicSlot.objects.count() >= len(SCHEDULE))
        wait_until_idle()

    slots = Counter(PeriodicSlot.objects.values_list("job", flat=True))
    tasks = Counter(DBTaskResult.objects.values_list("task_path", flat=True))
    # A minute may turn meanwhile: a second slot of the minute jobs, each enqueued once too.
    assert set(slots) == set(SCHEDULE)
    assert tasks == slots
    claimed_tasks = set(PeriodicSlot.objects.values_list("task_id", flat=True))
    assert claimed_tasks == {str(pk) for pk in DBTaskResult.objects.values_list("pk", flat=True)}
    dispatches = DBTaskResult.objects.filter(task_path=DISPATCH)
    assert {d.status for d in dispatches} == {"SUCCESSFUL"}, [d.traceback for d in dispatches]
    assert statuses_of(due_drop) == [DropStatus.SCHEDULED, DropStatus.PENDING]  # moved once


def test_a_worker_killed_mid_job_leaves_nothing_half_done_and_the_next_slot_finishes_it(
    due_drop, hold, tmp_path
):
    now = timezone.now()
    [slot] = enqueue_due_jobs(worker_id="test", now=now, schedule={DISPATCH: MINUTE})
    hold.hold(MOVING_A_DROP)

    with db_worker(tmp_path / "first.log") as first:
        # The job has moved the drop (row written, not committed) and waits before its event.
        def held() -> int | None:
            assert first.alive, first.log_tail()
            pids = [pid for pid, wait in waiting_backends() if wait == "advisory"]
            return pids[0] if pids else None

        pid = wait_for("the dispatch to be held in its transaction", held)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE l.pid = %s AND c.relname = 'orders_drop' AND l.mode = 'RowExclusiveLock'",
                [pid],
            )
            assert cursor.fetchone()[0] == 1  # it has updated the drop
        first.kill()

    hold.release()  # the orphaned backend goes on, finds its client gone, and rolls back
    wait_for("the killed worker's backend to end", lambda: not backend_alive(pid))
    assert Drop.objects.get(pk=due_drop.pk).status == DropStatus.SCHEDULED
    assert statuses_of(due_drop) == [DropStatus.SCHEDULED]
    # django_tasks_db leaves the killed run RUNNING for ever (it has no lease): the jobs do
    # not depend on it, the next slot runs them again.
    assert DBTaskResult.objects.get(pk=slot.task_id).status == "RUNNING"
    hold.remove()

    [next_slot] = enqueue_due_jobs(worker_id="test", now=now + MINUTE, schedule={DISPATCH: MINUTE})
    with db_worker(tmp_path / "second.log"):
        finished = wait_for_task(next_slot.task_id)

    assert (finished.status, finished.return_value) == ("SUCCESSFUL", 1), finished.traceback
    assert Drop.objects.get(pk=due_drop.pk).status == DropStatus.PENDING
    assert statuses_of(due_drop) == [DropStatus.SCHEDULED, DropStatus.PENDING]
