"""db_worker: django_tasks_db's task worker, with the periodic jobs' scheduler and the
TASK_WORKER_COMPANIONS (the webhook sender) beside it, and a loop that outlives the database
going away.

Django takes a command from the first app in INSTALLED_APPS that has it, and core comes
before django_tasks_db, so `manage.py db_worker` is this one. Every worker runs the
scheduler (core/scheduler.py): any number of them enqueue each periodic slot once.

django_tasks_db's worker exits on the first database error outside a task (a PostgreSQL
restart, PgBouncer restarting): every worker of a pool would be gone after a blip of a few
seconds, until something restarts them. Ours waits and tries again instead (1 s, doubling
to 10 s), and logs each wait; a task that was running when the database went is left as
the library leaves it, and its work is found again by the rows it works from (the webhook
sweep, the scenario runs).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django.utils.module_loading import import_string
from django_tasks_db.management.commands import db_worker as upstream
from django_tasks_db.management.commands.db_worker import Command as WorkerCommand
from django_tasks_db.management.commands.db_worker import valid_interval

from core import stopping
from core.scheduler import TICK_SECONDS, Scheduler

logger = logging.getLogger(__name__)
MAX_WAIT_SECONDS = 10.0


class ResilientWorker(upstream.Worker):
    def shutdown(self, signum, frame) -> None:
        """The library's graceful stop, told to the running task too (core.stopping).

        Between tasks the library exits from the signal handler at once, wherever the loop
        is; inside its claiming transaction (or its commit) that left the connection in the
        transaction, and the worker exited 1 with a traceback instead of 0. There the loop
        is only told to stop: it ends after the transaction, running a task it just claimed.
        """
        stopping.requested.set()
        if self.running and not self.running_task and _in_transaction():
            logger.warning("Received %s - stopping after this claim.", signal.strsignal(signum))
            self.running = False
            return
        super().shutdown(signum, frame)

    def run(self) -> None:
        wait = 1.0
        while True:
            started = time.monotonic()
            try:
                return super().run()
            except (OperationalError, InterfaceError) as exc:
                if not self.running:
                    raise
                if time.monotonic() - started > 60:
                    wait = 1.0  # a new outage, not the same one going on
                logger.warning(
                    "Database unavailable; the worker tries again in %.0f s: %s", wait, exc
                )
                connections.close_all()
                time.sleep(wait)
                wait = min(wait * 2, MAX_WAIT_SECONDS)


def _in_transaction() -> bool:
    """Whether any open connection of this thread is inside a transaction (or committing)."""
    return any(
        conn.connection is not None and (conn.in_atomic_block or not conn.autocommit)
        for conn in connections.all(initialized_only=True)
    )


# The library's command builds its worker from this module attribute: ours is built instead.
upstream.Worker = ResilientWorker


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

    def configure_logging(self, verbosity: int) -> None:
        """The library's levels for its task loggers (INFO at the default verbosity), but at
        that verbosity never below LOG_LEVEL's: with LOG_LEVEL=WARNING (`make run`) a task's
        start and end are not said; at the default INFO, or with -v 2, nothing changes."""
        super().configure_logging(verbosity)
        if verbosity != 1:
            return
        floor = logging.getLogger().level  # the root's: LOG_LEVEL (config/settings.py)
        for name in (upstream.TASKS_LOGGER, upstream.logger.name):
            task_logger = logging.getLogger(name)
            task_logger.setLevel(max(task_logger.level, floor))

    def handle(self, *, scheduler: bool, scheduler_interval: float, **options) -> None:
        # With --reload the command runs twice: a parent that only watches the files and a
        # child that works. Only a working process schedules; --batch drains and exits.
        watcher = options["reload"] and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true"
        if options["batch"] or watcher:
            return super().handle(**options)
        with contextlib.ExitStack() as running:
            if scheduler:
                clock = Scheduler(worker_id=options["worker_id"], every=scheduler_interval)
                running.callback(clock.start().stop)
            for companion in settings.TASK_WORKER_COMPANIONS:
                running.callback(import_string(companion)().stop)
            return super().handle(**options)
