"""Background work of orders, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task

from orders.models import IdempotencyRecord
from orders.services import purge_expired_quotes as purge_quotes


def idempotency_cutoff(now: datetime | None = None) -> datetime:
    """Records created before this are past their retention (IDEMPOTENCY_TTL_HOURS)."""
    return (now or timezone.now()) - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS)


def purge_idempotency_records(cutoff: datetime) -> int:
    """Delete the idempotency records created before `cutoff`; how many. Idempotent."""
    return IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()[0]


@task()
def purge_idempotency_keys() -> int:
    """Delete idempotency records past their retention; how many."""
    return purge_idempotency_records(idempotency_cutoff())


@task()
def purge_expired_quotes() -> int:
    """Delete quotes past their expiry (QUOTE_TTL_MINUTES); how many."""
    return purge_quotes()
