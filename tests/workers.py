"""Real `manage.py db_worker` processes on the test database, for tests of background work.

`db_worker()` starts one around a block and always stops it; the `task_worker` fixture is one
around a test. The worker runs the production settings in a clean environment (as the
gunicorn of tests/reliability does), so it sees only what the test has committed: use them in
`@pytest.mark.django_db(transaction=True)` tests, and pass settings the test changed (with
the `settings` fixture) as environment variables in `env`.

    from tests.workers import db_worker, wait_for_task

    @pytest.mark.django_db(transaction=True)
    def test_the_worker_sends_it(task_worker):
        result = send_due_deliveries.enqueue(str(endpoint.pk))
        finished = wait_for_task(result.id)         # its DBTaskResult, SUCCESSFUL or FAILED
        assert finished.status == "SUCCESSFUL", finished.traceback

    with db_worker(tmp_path / "worker.log", env={"WEBHOOK_ALLOW_PRIVATE_URLS": "true"}) as w:
        ...
        w.kill()                                    # SIGKILL, as a crash or the OOM killer

The periodic jobs' scheduler is off unless `scheduler=True` (it would enqueue every job of
core/schedule.py at start); stopping is SIGTERM, the graceful stop, which lets a running task
finish. A worker that outlives its stop fails the test.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from tests.reliability.gunicorn_server import WAIT_SECONDS, database_url, wait_for

STOP_SECONDS = 20  # a graceful stop waits for the running task; past this the test fails


class Worker:
    """One `manage.py db_worker` on `database` (a Django settings dict), logging to a file."""

    def __init__(
        self,
        database: dict,
        log_path: Path,
        *,
        scheduler: bool = False,
        scheduler_interval: float = 0.2,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.log_path = log_path
        self.worker_id = f"test-{secrets.token_hex(6)}"
        self.process: subprocess.Popen[bytes] | None = None
        self.command = [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "db_worker",
            "--worker-id",
            self.worker_id,
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.05",  # poll fast: tests wait for tasks
            *(
                ["--scheduler-interval", str(scheduler_interval)]
                if scheduler
                else ["--no-scheduler"]
            ),
            *args,
        ]
        inherited = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
        self.env = {
            **{name: os.environ[name] for name in inherited if name in os.environ},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url(database),
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "false",
            "CONN_MAX_AGE": "0",
            "LOG_LEVEL": "INFO",
            **(env or {}),
        }

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> Worker:
        self.launch()
        self.wait_started()
        return self

    def launch(self) -> Worker:
        """Start the process without waiting for it (to start several at the same moment)."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our own signals only, never the terminal's
            )
        return self

    def wait_started(self) -> None:
        def started() -> bool:
            if not self.alive:
                raise AssertionError(f"db_worker exited at start:\n{self.log_tail()}")
            return "Starting worker" in self.log_text()

        wait_for("db_worker to start", started)

    def stop(self) -> None:
        """SIGTERM and wait; fails if the worker has not exited within STOP_SECONDS."""
        if not self.alive:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"db_worker did not stop within {STOP_SECONDS} s:\n{self.log_tail()}"
            ) from None

    def kill(self) -> None:
        """SIGKILL: no cleanup, no rollback but the database's own."""
        if self.alive:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:]) or "(no log)"


@contextlib.contextmanager
def db_worker(
    log_path: Path | None = None,
    *,
    scheduler: bool = False,
    scheduler_interval: float = 0.2,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> Iterator[Worker]:
    """A started db_worker on the test database (pytest-django must have created it),
    stopped at the end of the block whatever happens in it."""
    with contextlib.ExitStack() as stack:
        if log_path is None:
            log_path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "worker.log"
        worker = Worker(
            connection.settings_dict,
            log_path,
            scheduler=scheduler,
            scheduler_interval=scheduler_interval,
            env=env,
            args=args,
        )
        try:
            yield worker.start()
        finally:
            worker.stop()


@pytest.fixture
def task_worker(transactional_db, tmp_path) -> Iterator[Worker]:
    """One db_worker (no scheduler) for the length of a test, on the committed test data."""
    with db_worker(tmp_path / "db_worker.log") as worker:
        yield worker


FINISHED = (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED)


def wait_for_task(result_id, timeout: float = WAIT_SECONDS) -> DBTaskResult:
    """The task's row once a worker has finished it (SUCCESSFUL or FAILED)."""

    def finished() -> DBTaskResult | None:
        row = DBTaskResult.objects.get(pk=result_id)
        return row if row.status in FINISHED else None

    return wait_for(f"task {result_id} to finish", finished, timeout)


def wait_until_idle(timeout: float = WAIT_SECONDS) -> None:
    """Until no task is due or running (tasks enqueued by tasks included)."""

    def idle() -> bool:
        # Deferred tasks (run_after in the future) are not waited for.
        return not (DBTaskResult.objects.ready() | DBTaskResult.objects.running()).exists()

    wait_for("the workers to run every task", idle, timeout)
