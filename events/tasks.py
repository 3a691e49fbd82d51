"""Background work of events, run by `manage.py db_worker`: sending webhook deliveries, the
sweep that re-asks for any due delivery without a queued task, and the retention purge."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task

from events.delivery import endpoints_to_sweep, send_due_deliveries_of
from events.retention import purge_events_before


@task()
def send_due_deliveries(endpoint_id: str) -> int:
    """Send this endpoint's due deliveries; returns how many were attempted."""
    return send_due_deliveries_of(endpoint_id)


@task()
def sweep_deliveries() -> int:
    """Every minute: a send task for each endpoint with due deliveries and none queued.

    The delivery rows are the truth, not the queue: a delivery whose worker was killed
    mid-send is due again once its lease ends, and this is what sends it. Returns how
    many tasks were enqueued.
    """
    endpoint_ids = endpoints_to_sweep()
    for endpoint_id in endpoint_ids:
        send_due_deliveries.enqueue(str(endpoint_id))
    return len(endpoint_ids)


@task()
def purge_old_events() -> int:
    """Hourly: delete events older than EVENT_RETENTION_DAYS; returns how many."""
    cutoff = timezone.now() - timedelta(days=settings.EVENT_RETENTION_DAYS)
    return purge_events_before(cutoff)
