"""dispatch_due_orders: move due SCHEDULED drops to PENDING now.

The workers do it every minute (tracking.tasks, core/schedule.py); this is for operators.
"""

from django.core.management.base import BaseCommand

from tracking.services import dispatch_due_orders


class Command(BaseCommand):
    help = "Move scheduled drops whose pickup time has come to PENDING."

    def handle(self, *args, **opts):
        result = dispatch_due_orders()
        self.stdout.write(f"Dispatched {len(result.moved)} drop(s).")
