"""purge_idempotency_keys: delete idempotency records older than IDEMPOTENCY_TTL_HOURS.

The workers run it hourly (orders.tasks, core/schedule.py); this is the operator's way to
run it now.
"""

from django.core.management.base import BaseCommand

from orders.tasks import idempotency_cutoff, purge_idempotency_records


class Command(BaseCommand):
    help = "Delete idempotency records past their retention (IDEMPOTENCY_TTL_HOURS)."

    def handle(self, *args, **opts):
        cutoff = idempotency_cutoff()
        deleted = purge_idempotency_records(cutoff)
        self.stdout.write(
            f"Purged {deleted} idempotency record(s) older than {cutoff:%Y-%m-%d %H:%M}Z."
        )
