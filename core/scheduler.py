"""The periodic jobs' scheduler: a thread beside each `db_worker` that enqueues every slot once.

Every few seconds each worker's scheduler looks for jobs of core/schedule.py whose current
slot has no row in core_periodic_slot. For each it opens one transaction that inserts the
slot (INSERT … ON CONFLICT DO NOTHING, core.db.claim) and, if the insert took it, enqueues
the job's task: a django_tasks_db row, committed with the slot or not at all. When workers
race for a slot, PostgreSQL makes the later inserts wait for the first transaction and then
find its row, so exactly one of them enqueues; if that transaction rolls back (its worker
died before commit), the slot is free again and the next tick of any worker takes it. The
task then runs in whichever worker picks it up, like any other task.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks.base import Task

from core.db import claim
from core.models import PeriodicSlot
from core.schedule import SCHEDULE

logger = logging.getLogger(__name__)

TICK_SECONDS = 5.0  # a minute job runs at most this long after its minute starts
# Claimed slots kept for operators ("did close_invoices run last night?"); older ones go
# when their job claims a new slot.
SLOT_RETENTION = timedelta(days=7)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_reported_missing: set[str] = set()


def slot_of(now: datetime, every: timedelta) -> datetime:
    """When the slot holding `now` starts: the last multiple of `every` since the epoch."""
    elapsed = (now - _EPOCH) // _MICROSECOND
    return _EPOCH + _MICROSECOND * (elapsed - elapsed % (every // _MICROSECOND))


def enqueue_due_jobs(
    *, worker_id: str, now: datetime | None = None, schedule: Mapping[str, timedelta] = SCHEDULE
) -> list[PeriodicSlot]:
    """Claim and enqueue the current slot of every job no worker has claimed; the claimed."""
    now = now or timezone.now()
    slots = {job: slot_of(now, every) for job, every in schedule.items()}
    # One indexed read finds the slots already claimed: on most ticks that is all of them.
    taken = set(
        PeriodicSlot.objects.filter(
            job__in=list(slots), due_at__gte=min(slots.values(), default=now)
        ).values_list("job", "due_at")
    )
    claimed = []
    # The longest period first: two workers starting seconds apart compute the same slot of
    # an hourly job, not always of a 10-second one, so they meet on their first claim.
    for job, due_at in sorted(slots.items(), key=lambda item: -schedule[item[0]]):
        if (job, due_at) in taken or (task := _task_of(job)) is None:
            continue
        slot = PeriodicSlot(job=job, due_at=due_at, claimed_at=now, worker_id=worker_id)
        with transaction.atomic():
            # Another worker's uncommitted claim of this slot makes us wait here until it
            # commits (then None: the slot is its) or rolls back (then the slot is ours).
            if claim(slot, unique=("job", "due_at")) is None:
                continue
            slot.task_id = str(task.enqueue().id)
            PeriodicSlot.objects.filter(pk=slot.pk).update(task_id=slot.task_id)
            PeriodicSlot.objects.filter(job=job, due_at__lt=due_at - SLOT_RETENTION).delete()
        claimed.append(slot)
    return claimed


def _task_of(job: str) -> Task | None:
    """The job's task, imported when first needed; None (warned once) while it is missing."""
    try:
        found = import_string(job)
    except ImportError as exc:
        if job not in _reported_missing:
            _reported_missing.add(job)
            logger.warning("Periodic job %s is skipped until it exists: %s", job, exc)
        return None
    if not isinstance(found, Task):
        if job not in _reported_missing:
            _reported_missing.add(job)
            logger.error("Periodic job %s is skipped: it is not a @task", job)
        return None
    return found


class Scheduler:
    """One worker's scheduler thread: a tick at once, then one every `every` seconds."""

    def __init__(
        self,
        *,
        worker_id: str,
        every: float = TICK_SECONDS,
        schedule: Mapping[str, timedelta] = SCHEDULE,
    ) -> None:
        self.worker_id = worker_id
        self.every = every
        self.schedule = schedule
        self._stopping = threading.Event()
        # A daemon: a worker forced to exit never waits for it; stop() is the clean way.
        self._thread = threading.Thread(target=self._run, name="periodic-jobs", daemon=True)

    def start(self) -> Scheduler:
        logger.info(
            "Scheduler of %d periodic jobs started, worker_id=%s",
            len(self.schedule),
            self.worker_id,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def tick(self) -> list[PeriodicSlot]:
        # The thread's own connection, treated like a request's: dropped when broken or old.
        close_old_connections()
        try:
            claimed = enqueue_due_jobs(worker_id=self.worker_id, schedule=self.schedule)
        except DatabaseError as exc:
            # The database is away or busy (SQLite locked): the next tick tries again.
            logger.warning("Periodic jobs not enqueued this tick: %s", exc)
            return []
        finally:
            close_old_connections()
        for slot in claimed:
            logger.info(
                "Enqueued periodic job %s for %s (task %s)",
                slot.job,
                f"{slot.due_at:%Y-%m-%d %H:%M:%S}Z",
                slot.task_id,
            )
        return claimed

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    self.tick()
                except Exception:  # a bug in one tick must not stop every later one
                    logger.exception("Periodic jobs tick failed")
                self._stopping.wait(self.every)
        finally:
            connection.close()
