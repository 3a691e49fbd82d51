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
