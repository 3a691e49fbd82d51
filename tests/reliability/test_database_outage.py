"""PostgreSQL going away under a real gunicorn (docs/contract.md §3, §16): a restart costs no
request, a stopped database is a JSON 503 with Retry-After (and /readyz says so while
/healthz stays up), and service resumes by itself when it is back.

The outage is real — pg_ctl restart/stop/start — on a cluster of this module's own, so the
session's cluster, which every other test uses, is never touched. gunicorn runs two workers
that keep their connections (CONN_MAX_AGE=60), as in production: the stale connections a
restart leaves behind are what the health check (CONN_HEALTH_CHECKS) is for.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import orjson
import psycopg
import pytest
from django.conf import settings

from tests.pgcluster import PostgresCluster
from tests.reliability.gunicorn_server import Gunicorn, Reply, wait_for

# A cluster of its own, stopped and restarted under gunicorn: left out of the fast loop.
pytestmark = pytest.mark.slow

DATABASE = "delivery"
WORKERS = 2
# What a 503 must never show a client: a traceback, the driver, the database's words.
LEAKS = (b"Traceback", b'File "', b"psycopg", b"connection", b"refused", b"administrator")


@dataclass
class Outage:
    """A site of its own: a cluster we may stop, gunicorn on it, and a sandbox key."""

    cluster: PostgresCluster
    server: Gunicorn
    key: str

    def account(self) -> Reply:
        return self.server.request(
            "GET", "/api/v1/account", headers={"Authorization": f"Bearer {self.key}"}
        )

    def tracking(self) -> Reply:
        return self.server.request(
            "POST",
            "/api/v1/orders/tracking",
            orjson.dumps({"identifiers": ["OUTAGE-1"]}),
            {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )

    def bulk(self) -> Reply:
        return self.server.bulk(b'{"orders": []}', self.key, str(uuid.uuid4()))

    def app_connections(self) -> int:
        """Connections the workers hold to the app's database (ours is to another one)."""
        with psycopg.connect(self.cluster.url(), autocommit=True) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [DATABASE]
            ).fetchone()[0]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def outage(tmp_path_factory, collected_static):
    cluster = PostgresCluster()
    server: Gunicorn | None = None
    try:
        cluster.start()
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        database = {
            "USER": cluster.user,
            "HOST": cluster.host,
            "PORT": cluster.port,
            "NAME": DATABASE,
        }
        log_path = tmp_path_factory.mktemp("outage") / "gunicorn.log"
        server = Gunicorn(database, log_path, workers=WORKERS, conn_max_age=60)
        # The server's own environment, so the schema and the key are made as it will read them;
        # the suite's collectstatic output, because the dashboard's pages name its manifest's files.
        server.env["STATIC_ROOT"] = str(collected_static)
        manage(server.env, "migrate", "--noinput", "-v0")
        provisioned = manage(
            server.env,
            "provision_business",
            "--name",
            "Outage Shop",
            "--email",
            "outage@example.com",
            "--stage",
            "approved",
            "--json",
        )
        key = orjson.loads(provisioned)["sandbox_key"]
        server.start()
        yield Outage(cluster, server, key)
    finally:
        if server is not None:
            server.stop()
        cluster.stop()


def two_at_a_time(call: Callable[[], Reply], times: int) -> list[Reply]:
    """`times` calls, two in flight at once, so that both workers serve some."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(lambda _: call(), range(times)))


def keep_a_connection_in_each_worker(outage: Outage) -> None:
    def both_connected() -> bool:
        replies = two_at_a_time(outage.account, 2)
        assert [r.status for r in replies] == [200, 200], [r.body for r in replies]
        return outage.app_connections() == WORKERS

    wait_for(f"{WORKERS} workers each keeping a database connection", both_connected)


def assert_service_unavailable(reply: Reply) -> None:
    assert reply.status == 503, reply.body[:1000]
    assert reply.headers["content-type"] == "application/json"
    assert int(reply.headers["retry-after"]) > 0
    envelope = reply.json()
    assert envelope["statusCode"] == 503
    assert envelope["success"] is False
    assert envelope["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert envelope["error"]["request_id"] == reply.headers["x-request-id"]
    for leak in LEAKS:
        assert leak not in reply.body


def test_a_database_restart_costs_no_request(outage):
    keep_a_connection_in_each_worker(outage)
    outage.cluster.restart_server()

    # Each worker's kept connection is now dead; the health check replaces it unseen.
    replies = two_at_a_time(outage.account, 11)

    assert [r.status for r in replies] == [200] * 11, (
        [r.body[:300] for r in replies if r.status != 200],
        outage.server.log_tail(),
    )


def test_with_the_database_stopped_the_api_answers_503_and_recovers(outage):
    keep_a_connection_in_each_worker(outage)
    outage.cluster.stop_server()
    try:
        # Twice each, two at a time: the kept connections die first, then connecting fails.
        for call in (outage.account, outage.tracking, outage.bulk):
            for reply in two_at_a_time(call, 2 * WORKERS):
                assert_service_unavailable(reply)

        ready = outage.server.request("GET", "/readyz")
        assert ready.status == 503
        assert ready.headers["content-type"] == "application/json"
        assert int(ready.headers["retry-after"]) > 0
        assert ready.json() == {"database": "unavailable"}
        alive = outage.server.request("GET", "/healthz")
        assert (alive.status, alive.body) == (200, b"ok")

        # The dashboard: a page that needs no database still renders; one that does (a
        # session to look up) is a short "try again" page, never a stack trace.
        login = outage.server.request("GET", "/login/")
        assert login.status == 200
        session = "sessionid=" + "0123456789abcdefghijklmnopqrstuv"  # well-formed, looked up
        home = outage.server.request("GET", "/", headers={"Cookie": session})
        assert home.status == 503, home.body[:1000]
        assert int(home.headers["retry-after"]) > 0
        assert home.headers["content-type"].startswith("text/html")
        for leak in LEAKS:
            assert leak not in home.body
    finally:
        outage.cluster.start_server()

    ready = outage.server.request("GET", "/readyz")
    assert ready.status == 200, ready.body
    assert ready.json()["database"] == "ok"
    replies = two_at_a_time(outage.account, 2 * WORKERS)
    assert [r.status for r in replies] == [200] * len(replies), [r.body[:300] for r in replies]
    assert outage.account().json()["success"] is True
