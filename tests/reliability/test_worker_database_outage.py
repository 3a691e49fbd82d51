"""A task worker outlives the database going away (core/management/commands/db_worker.py):
PostgreSQL stopped for a few seconds under a real `db_worker`, which is still there when it is
back and runs the next task. The library's own loop would have exited."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest
from django.conf import settings

from tests.pgcluster import PostgresCluster
from tests.reliability.gunicorn_server import wait_for
from tests.workers import Worker

# A cluster of its own, stopped under a task worker: left out of the fast loop.
pytestmark = pytest.mark.slow

DATABASE = "delivery"


@pytest.fixture
def own_cluster():
    cluster = PostgresCluster()
    cluster.start()
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    yield cluster
    cluster.stop()


def test_a_worker_waits_out_a_database_outage_and_works_on(own_cluster, tmp_path):
    database = {"USER": own_cluster.user, "HOST": own_cluster.host,
                "PORT": own_cluster.port, "NAME": DATABASE}  # fmt: skip
    worker = Worker(database, tmp_path / "worker.log")
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=worker.env,
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    run("migrate", "--noinput", "-v0")
    worker.start()
    try:
        own_cluster.stop_server()
        time.sleep(3)  # the worker polls every 0.05 s: it meets the outage many times
        own_cluster.start_server()
        assert worker.alive, worker.log_tail()
        assert "Database unavailable; the worker tries again" in worker.log_text()

        run("shell", "-c", "from core.tasks import purge_rate_counters as t; t.enqueue()")
        with psycopg.connect(own_cluster.url(DATABASE), autocommit=True) as conn:
            wait_for(
                "the task enqueued after the outage to run",
                lambda: (
                    conn.execute("SELECT status FROM django_tasks_database_dbtaskresult").fetchone()
                    == ("SUCCESSFUL",)
                ),
                timeout=30,
            )
    finally:
        worker.stop()
