"""purge_rate_counters: delete the rows of rate-limit and login counters whose window ended."""

from django.core.management.base import BaseCommand

from core.counters import purge_ended


class Command(BaseCommand):
    help = (
        "Delete the database rows of rate-limit and login-throttle counters whose window has "
        "ended (with CACHE_URL=redis://… the counters expire in Redis and the table stays empty)."
    )

    def handle(self, *args, **opts):
        deleted = purge_ended()
        self.stdout.write(f"Purged {deleted} rate counter(s) whose window had ended.")
