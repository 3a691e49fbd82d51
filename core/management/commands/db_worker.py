"""db_worker: django_tasks_db's task worker, with the periodic jobs' scheduler beside it.

Django takes a command from the first app in INSTALLED_APPS that has it, and core comes
before django_tasks_db, so `manage.py db_worker` is this one. Every worker runs the
scheduler (core/scheduler.py): any number of them enqueue each periodic slot once.
"""

from __future__ import annotations

import os

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands.db_worker import Command as WorkerCommand
from django_tasks_db.management.commands.db_worker import valid_interval

from core.scheduler import TICK_SECONDS, Scheduler


class Command(WorkerCommand):
    help = (
        "Run a database task worker, and beside it the scheduler that enqueues the periodic "
        "jobs of core/schedule.py (each slot once, however many workers run)."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--no-scheduler",
            action="store_false",
            dest="scheduler",
            help="Only run tasks; leave the periodic jobs to the other workers.",
        )
        parser.add_argument(
            "--scheduler-interval",
            default=TICK_SECONDS,
            type=valid_interval,
            help="Seconds between two looks for due periodic jobs (default: %(default)r).",
        )

    def handle(self, *, scheduler: bool, scheduler_interval: float, **options) -> None:
        # With --reload the command runs twice: a parent that only watches the files and a
        # child that works. Only a working process schedules; --batch drains and exits.
        watcher = options["reload"] and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true"
        if not scheduler or options["batch"] or watcher:
            return super().handle(**options)
        clock = Scheduler(worker_id=options["worker_id"], every=scheduler_interval).start()
        try:
            return super().handle(**options)
        finally:
            clock.stop()
