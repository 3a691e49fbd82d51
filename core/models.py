"""Counters that every app process shares: the rows behind rate limits (core/counters.py)."""

from django.db import models


class RateCounter(models.Model):
    """One counter's current fixed window: when it ends and how many hits it holds.

    A row is counted in by one upsert that opens a new window when the stored one has ended;
    rows of ended windows are only clutter, deleted by `purge_rate_counters`.
    """

    key = models.CharField(max_length=200, primary_key=True)
    # Epoch milliseconds, not a DateTimeField: the upsert compares it with plain integers, the
    # same SQL on PostgreSQL and SQLite.
    window_end_ms = models.BigIntegerField()
    hits = models.BigIntegerField()

    class Meta:
        db_table = "core_rate_counter"

    def __str__(self) -> str:
        return f"{self.key}: {self.hits}"


class PeriodicSlot(models.Model):
    """One run of a periodic job (core/schedule.py): the job's slot that starts at `due_at`.

    The first worker's scheduler to reach a slot inserts this row and enqueues the job's task
    in the same transaction; the unique (job, due_at) makes every other worker's insert a
    no-op, so a slot runs once however many workers there are (core/scheduler.py).
    """

    job = models.CharField(max_length=200)  # the task's dotted path
    due_at = models.DateTimeField()
    claimed_at = models.DateTimeField()
    worker_id = models.CharField(max_length=64)  # the db_worker whose scheduler claimed it
    task_id = models.CharField(max_length=64, blank=True)  # its django_tasks_db result

    class Meta:
        db_table = "core_periodic_slot"
        constraints = [models.UniqueConstraint(fields=["job", "due_at"], name="periodic_slot_once")]

    def __str__(self) -> str:
        return f"{self.job} @ {self.due_at:%Y-%m-%d %H:%M:%S}Z"
