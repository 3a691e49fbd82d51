"""run_test_driver: walk active sandbox drops along the happy path on a timer."""

import time

from django.core.management.base import BaseCommand

from accounts.models import Environment
from orders.models import Drop
from orders.statuses import ACTIVE_STATUSES
from tracking.lifecycle import along_happy_path, apply_moves
from tracking.services import sandbox_test_driver


class Command(BaseCommand):
    help = "Every --interval seconds, move every active sandbox drop one step toward DELIVERED."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=30.0)
        parser.add_argument(
            "--iterations", type=int, default=0, help="Stop after N rounds (0: run until stopped)."
        )

    def handle(self, *args, interval, iterations, **opts):
        driver = sandbox_test_driver()
        rounds = 0
        while True:
            ids = list(
                Drop.objects.filter(
                    environment=Environment.SANDBOX, status__in=ACTIVE_STATUSES
                ).values_list("pk", flat=True)
            )
            result = apply_moves(
                drop_ids=ids, steps=along_happy_path(), actor="sandbox test driver", driver=driver
            )
            self.stdout.write(f"Moved {len(result.moved)} sandbox drop(s) one step.")
            rounds += 1
            if iterations and rounds >= iterations:
                return
            time.sleep(interval)
