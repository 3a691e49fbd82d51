"""purge_idempotency_keys: delete idempotency records older than IDEMPOTENCY_TTL_HOURS."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from orders.models import IdempotencyRecord


class Command(BaseCommand):
    help = "Delete idempotency records past their retention (IDEMPOTENCY_TTL_HOURS)."

    def handle(self, *args, **opts):
        cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS)
        deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
        self.stdout.write(
            f"Purged {deleted} idempotency record(s) older than {cutoff:%Y-%m-%d %H:%M}Z."
        )
