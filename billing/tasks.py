"""Background work of billing, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django.utils import timezone
from django_tasks import task

from billing.custody import log_custody_breaches
from billing.services import close_invoices as close
from billing.services import invoice_period


@task()
def close_invoices() -> int:
    """Issue (live) or close (sandbox) the OPEN invoices of months that have ended; how many.

    What `manage.py close_invoices` does without --month: months are cut in TIME_ZONE.
    """
    now = timezone.now()
    return len(close(before_period=invoice_period(now), today=timezone.localdate(now)))


@task()
def check_custody() -> int:
    """Log at ERROR each environment and currency where the couriers' cash does not add up
    to what the businesses were collected (docs/contract.md §23); how many."""
    return log_custody_breaches()
