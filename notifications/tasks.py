"""Background work of recipient notifications, run by `manage.py db_worker`."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task

from notifications.collect import collect
from notifications.models import Message
from notifications.sending import expire_claims, send_due


@task()
def notify_recipients() -> int:
    """Every NOTIFY_EVERY (core/schedule.py): make the messages new events call for, settle
    claims whose worker died, send what is due; how many messages were claimed.

    Safe to run twice at once: feeds and messages are claimed with SKIP LOCKED, and a
    message exists once per drop, kind and channel.
    """
    now = timezone.now()
    collect(now=now)
    expire_claims(now=now)
    return send_due()


@task()
def purge_old_messages() -> int:
    """Hourly: delete log rows older than NOTIFY_LOG_DAYS; how many. Their events are long
    gone (EVENT_RETENTION_DAYS) and past NOTIFY_MAX_EVENT_AGE_MINUTES, so none is made again."""
    cutoff = timezone.now() - timedelta(days=settings.NOTIFY_LOG_DAYS)
    deleted, _ = Message.objects.filter(created_at__lt=cutoff).delete()
    return deleted
