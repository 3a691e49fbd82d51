"""purge_old_events: delete events older than EVENT_RETENTION_DAYS (the hourly task's work)."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from events.retention import purge_events_before


class Command(BaseCommand):
    help = "Delete events, their deliveries and attempt logs past EVENT_RETENTION_DAYS."

    def handle(self, *args, **opts):
        cutoff = timezone.now() - timedelta(days=settings.EVENT_RETENTION_DAYS)
        deleted = purge_events_before(cutoff)
        self.stdout.write(f"Purged {deleted} event(s) older than {cutoff:%Y-%m-%d %H:%M}Z.")
