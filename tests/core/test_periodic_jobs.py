"""The periodic jobs' scheduler (core/scheduler.py): each slot of each job is enqueued once,
however many workers' schedulers reach it at the same moment, and in one transaction with
its claim. The real processes are in tests/reliability/test_task_workers.py."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from django.db import DatabaseError, connection
from django.utils.module_loading import import_string
from django_tasks.base import Task
from django_tasks_db.models import DBTaskResult

from core import scheduler
from core.models import PeriodicSlot
from core.schedule import HOUR, MINUTE, SCHEDULE
from core.scheduler import Scheduler, enqueue_due_jobs, slot_of

NOW = datetime(2026, 11, 23, 3, 0, 42, 123456, tzinfo=UTC)
DISPATCH = "tracking.tasks.dispatch_due_orders"
PURGE = "orders.tasks.purge_idempotency_keys"
TWO_JOBS = {DISPATCH: MINUTE, PURGE: HOUR}


def tasks_by_job() -> Counter:
    return Counter(DBTaskResult.objects.values_list("task_path", flat=True))


def slots_by_job() -> Counter:
    return Counter(PeriodicSlot.objects.values_list("job", flat=True))


def test_a_slot_starts_on_a_multiple_of_its_interval_since_the_epoch():
    assert slot_of(NOW, MINUTE) == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    assert slot_of(NOW, HOUR) == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    assert slot_of(NOW, timedelta(seconds=5)) == datetime(2026, 11, 23, 3, 0, 40, tzinfo=UTC)
    on_the_minute = datetime(2026, 11, 23, 3, 1, tzinfo=UTC)
    assert slot_of(on_the_minute, MINUTE) == on_the_minute
    assert slot_of(on_the_minute - timedelta(microseconds=1), MINUTE) == NOW.replace(
        second=0, microsecond=0
    )


def test_every_scheduled_job_is_a_task_that_runs_on_an_empty_database(db):
    for job in SCHEDULE:
        task = import_string(job)
        assert isinstance(task, Task), job
        assert isinstance(task.call(), int), job  # what it did, stored as the task's result


def test_a_slot_is_enqueued_once_and_the_next_slot_again(db):
    first = enqueue_due_jobs(worker_id="w1", now=NOW, schedule=TWO_JOBS)

    assert [(s.job, s.due_at) for s in first] == [  # the hourly job first: longest period
        (PURGE, datetime(2026, 11, 23, 3, 0, tzinfo=UTC)),
        (DISPATCH, datetime(2026, 11, 23, 3, 0, tzinfo=UTC)),
    ]
    assert (
        enqueue_due_jobs(worker_id="w2", now=NOW + timedelta(seconds=17), schedule=TWO_JOBS) == []
    )
    later = enqueue_due_jobs(worker_id="w2", now=NOW + MINUTE, schedule=TWO_JOBS)
    assert [(s.job, s.worker_id) for s in later] == [(DISPATCH, "w2")]  # the hour is not over
    assert tasks_by_job() == {DISPATCH: 2, PURGE: 1}
    # Each slot names the task it enqueued, which waits for a worker.
    for slot in PeriodicSlot.objects.all():
        task = DBTaskResult.objects.get(pk=slot.task_id)
        assert (task.task_path, task.status) == (slot.job, "READY")


def test_concurrent_schedulers_enqueue_each_slot_once(transactional_db):
    workers = 8
    start = threading.Barrier(workers)
    claimed: list[list[PeriodicSlot]] = [[] for _ in range(workers)]
    errors: list[BaseException] = []

    def scheduler_of(n: int) -> None:
        try:
            start.wait(timeout=10)
            claimed[n] = enqueue_due_jobs(worker_id=f"w{n}", now=NOW, schedule=SCHEDULE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=scheduler_of, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    assert sorted(slot.job for slots in claimed for slot in slots) == sorted(SCHEDULE)
    assert slots_by_job() == tasks_by_job() == dict.fromkeys(SCHEDULE, 1)


def test_a_claim_whose_enqueue_fails_leaves_the_slot_free(transactional_db, monkeypatch):
    # transactional: a tick closes its connection when done, as between two requests.
    class Unreachable:
        def enqueue(self):
            raise DatabaseError("the task table is away")

    monkeypatch.setattr(scheduler, "_task_of", lambda job: Unreachable())
    ticking = Scheduler(worker_id="w1", schedule={DISPATCH: MINUTE})

    assert ticking.tick() == []  # logged, retried next tick
    assert PeriodicSlot.objects.count() == 0

    monkeypatch.undo()
    assert [s.job for s in ticking.tick()] == [DISPATCH]
    assert tasks_by_job() == {DISPATCH: 1}


def test_a_job_that_does_not_exist_yet_is_skipped_with_one_warning(db, caplog, monkeypatch):
    monkeypatch.setattr(scheduler, "_reported_missing", set())
    jobs = {"events.tasks.not_written_yet": MINUTE, DISPATCH: MINUTE}

    with caplog.at_level(logging.WARNING, logger="core.scheduler"):
        first = enqueue_due_jobs(worker_id="w1", now=NOW, schedule=jobs)
        second = enqueue_due_jobs(worker_id="w1", now=NOW + MINUTE, schedule=jobs)

    assert [s.job for s in first + second] == [DISPATCH, DISPATCH]
    assert slots_by_job() == {DISPATCH: 2}
    warnings = [r.getMessage() for r in caplog.records if "not_written_yet" in r.getMessage()]
    assert len(warnings) == 1 and "skipped until it exists" in warnings[0]


def test_slots_older_than_a_week_go_when_their_job_claims_a_new_one(db):
    enqueue_due_jobs(worker_id="w1", now=NOW - timedelta(days=8), schedule=TWO_JOBS)
    enqueue_due_jobs(worker_id="w1", now=NOW - timedelta(days=6), schedule=TWO_JOBS)

    enqueue_due_jobs(worker_id="w1", now=NOW, schedule={DISPATCH: MINUTE})

    kept = PeriodicSlot.objects.values_list("job", "due_at")
    assert sorted(kept) == sorted([
        (DISPATCH, slot_of(NOW - timedelta(days=6), MINUTE)),
        (DISPATCH, slot_of(NOW, MINUTE)),
        (PURGE, slot_of(NOW - timedelta(days=8), HOUR)),  # its job has not claimed since
        (PURGE, slot_of(NOW - timedelta(days=6), HOUR)),
    ])  # fmt: skip


def test_the_scheduler_thread_ticks_until_stopped():
    ticking = Scheduler(worker_id="w1", every=0.01, schedule={DISPATCH: MINUTE})
    # Its ticks are counted, not run: the thread's connection would not see the test's
    # transaction (the real ticks run in tests/reliability/test_task_workers.py).
    ticks = threading.Semaphore(0)
    ticking.tick = lambda: ticks.release()  # type: ignore[method-assign]

    ticking.start()
    for _ in range(3):
        assert ticks.acquire(timeout=5)
    started = time.monotonic()
    ticking.stop()

    # Stopped at once: well within its join's timeout (10 s), however loaded the machine.
    assert time.monotonic() - started < 5
    while ticks.acquire(blocking=False):  # a tick that came before stop() returned
        pass
    assert not ticks.acquire(timeout=20 * ticking.every)  # and none after
