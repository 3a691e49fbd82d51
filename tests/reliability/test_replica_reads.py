"""The read router on a real streaming replica (core/replica.py, docs/contract.md §22).

A primary and a hot standby made from it with pg_basebackup, a gunicorn reading through
DATABASE_REPLICA_URL. Replay on the standby is paused on purpose (pg_wal_replay_pause), so the
replica lags as long as a test wants: what a request then reads tells where it read. A caller
that just wrote reads its batch back at once (the primary); once READ_YOUR_WRITES_SECONDS have
passed, the same read shows the replica's older state; nothing is lost when the replica stops.
Last, the short form of `make ha-test`: the primary crashes, the standby is promoted, and
the app (DATABASE_URL listing both, target_session_attrs=read-write) answers 503 in between
and then writes to the new primary with no restart.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import orjson
import psycopg
import pytest

from tests.helpers import SCRIPT_WITH_A_TENANT, run_django_script
from tests.pgcluster import PostgresCluster
from tests.reliability.gunicorn_server import Gunicorn, Reply, wait_for

# Its own primary and replica, gunicorn on them, a failover: left out of the fast loop.
pytestmark = pytest.mark.slow

DATABASE = "delivery"
READ_YOUR_WRITES_SECONDS = 1
SYNC_MARGIN_SECONDS = 2  # tracking.listing.SYNC_MARGIN

SETUP = (
    SCRIPT_WITH_A_TENANT
    + r"""
from datetime import time
from geo.models import OpeningHours
OpeningHours.objects.update(opens=time(0), closes=time(23, 59, 59, 999999))
from django.contrib.auth import get_user_model
from accounts.models import Membership
email = "owner@example.com"
owner = get_user_model().objects.create_user(email, email, "Owner-pass-1")
Membership.objects.create(user=owner, business=tenant.business, is_owner=True)
print(json.dumps({"key": tenant.sandbox_key}))
"""
)


@dataclass
class Site:
    primary: PostgresCluster
    standby: PostgresCluster
    server: Gunicorn
    key: str

    def call(self, method: str, path: str, body: dict | None = None, **headers: str) -> Reply:
        headers = {"Authorization": f"Bearer {self.key}", **headers}
        if body is not None:
            headers["Content-Type"] = "application/json"
        payload = None if body is None else orjson.dumps(body)
        return self.server.request(method, path, payload, headers)

    def create(self, reference: str) -> dict:
        """The batch's answer (`data`) for one drop named `reference`."""
        reply = self.server.bulk(orjson.dumps(one_drop(reference)), self.key, str(uuid.uuid4()))
        assert reply.status == 200, (reply.body, self.server.log_tail())
        data = reply.json()["data"]
        assert data["orders"][0]["status"] != "REJECTED", data
        return data

    def track(self, reference: str) -> str:
        reply = self.call("POST", "/api/v1/orders/tracking", {"identifiers": [reference]})
        assert reply.status == 200, (reply.body, self.server.log_tail())
        return reply.json()["data"]["orders"][0]["status"]

    def listed(self, query: str = "") -> set[str]:
        reply = self.call("GET", f"/api/v1/orders?limit=500{query}")
        assert reply.status == 200, reply.body
        return {order["client_order_id"] for order in reply.json()["data"]["orders"]}

    def events_naming(self, text: str) -> list[str]:
        reply = self.call("GET", "/api/v1/events?limit=100")
        assert reply.status == 200, reply.body
        return [e["id"] for e in reply.json()["data"]["events"] if text in orjson.dumps(e).decode()]

    def signed_in(self) -> str:
        """A dashboard session's cookie header, just signed in (a write of the session)."""
        form = self.server.request("GET", "/login/")
        csrf = form.headers["set-cookie"].split("csrftoken=")[1].split(";")[0]
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.body)[1]
        body = (
            urlencode({"username": "owner@example.com", "password": "Owner-pass-1"}).encode()
            + b"&csrfmiddlewaretoken="
            + token
        )
        reply = self.server.request(
            "POST",
            "/login/",
            body,
            {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}"},
        )
        assert reply.status == 302, reply.body[:500]
        return "sessionid=" + reply.headers["set-cookie"].split("sessionid=")[1].split(";")[0]

    def dashboard_shows(self, cookie: str, reference: str) -> bool:
        page = self.server.request("GET", "/orders/", headers={"Cookie": cookie})
        assert page.status == 200, page.body[:500]
        return reference.encode() in page.body

    def caught_up(self) -> None:
        with psycopg.connect(self.primary.url(DATABASE), autocommit=True) as conn:
            # Insert, not write: with synchronous_commit off a commit may sit in WAL buffers.
            written = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        with psycopg.connect(self.standby.url(DATABASE), autocommit=True) as conn:
            replayed = "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn"
            wait_for("the standby", lambda: conn.execute(replayed, [written]).fetchone()[0])

    def replay(self, paused: bool) -> None:
        verb = "pause" if paused else "resume"
        with psycopg.connect(self.standby.url(DATABASE), autocommit=True) as conn:
            conn.execute(f"SELECT pg_wal_replay_{verb}()")


def one_drop(reference: str) -> dict:
    return {
        "client_batch_id": reference,
        "orders": [
            {
                "pickup": {
                    "name": "Shop",
                    "phone": "+85512345678",
                    "lat": 11.5564,
                    "long": 104.9282,
                },
                "dropoff": [
                    {
                        "client_order_id": reference,
                        "dropoff": {
                            "name": "R",
                            "phone": "+85512345679",
                            "lat": 11.5696,
                            "long": 104.921,
                        },
                    }
                ],
            }
        ],
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory, collected_static) -> Iterator[Site]:
    primary, standby = PostgresCluster(), PostgresCluster()
    server: Gunicorn | None = None
    try:
        primary.start()
        with psycopg.connect(primary.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        key = run_django_script(SETUP, primary.url(DATABASE))["key"]
        standby.start_standby_of(primary)
        database = {"USER": primary.user, "HOST": primary.host, "PORT": primary.port}
        log_path = tmp_path_factory.mktemp("replica") / "gunicorn.log"
        server = Gunicorn({**database, "NAME": DATABASE}, log_path, conn_max_age=60)
        # Both nodes, as a failover-ready deployment lists them: libpq keeps the writable one.
        server.env["DATABASE_URL"] = (
            f"postgres://{primary.user}@{primary.host}:{primary.port},"
            f"{standby.host}:{standby.port}/{DATABASE}?target_session_attrs=read-write"
            "&connect_timeout=2"
        )
        server.env["STATIC_ROOT"] = str(collected_static)
        server.env["DATABASE_REPLICA_URL"] = standby.url(DATABASE)
        server.env["READ_YOUR_WRITES_SECONDS"] = str(READ_YOUR_WRITES_SECONDS)
        server.start()
        yield Site(primary, standby, server, key)
    finally:
        if server is not None:
            server.stop()
        standby.stop()
        primary.stop()


@pytest.fixture
def lagging(site) -> Iterator[Site]:
    """The replica stops replaying for the test, and catches up after it."""
    site.replay(paused=True)
    try:
        yield site
    finally:
        site.replay(paused=False)


def past_the_write_window() -> None:
    time.sleep(READ_YOUR_WRITES_SECONDS + 0.3)


def test_a_batch_just_created_is_tracked_at_once_and_later_read_on_the_replica(lagging):
    batch = lagging.create("RYW-1")

    # The replica stopped before the batch: only the primary can answer this.
    status = lagging.track("RYW-1")
    assert status != "NOT_FOUND"
    assert "RYW-1" in lagging.listed()
    assert len(lagging.events_naming(batch["batch_id"])) == 1

    past_the_write_window()
    assert lagging.track("RYW-1") == "NOT_FOUND"
    assert "RYW-1" not in lagging.listed()
    assert lagging.events_naming(batch["batch_id"]) == []

    lagging.replay(paused=False)
    wait_for("the replica to catch up", lambda: lagging.track("RYW-1") == status)


def test_the_sync_order_reads_the_primary_whose_horizon_it_keeps(lagging):
    lagging.create("SYNC-1")
    time.sleep(SYNC_MARGIN_SECONDS + 0.5)  # past the sync horizon, and the write window

    assert "SYNC-1" not in lagging.listed()  # newest first: the replica's page
    assert "SYNC-1" in lagging.listed("&updated_since=2020-01-01T00:00:00Z")


def test_the_recipient_page_opens_the_moment_its_link_is_sent(lagging):
    batch = lagging.create("PAGE-1")
    past_the_write_window()
    assert lagging.track("PAGE-1") == "NOT_FOUND"  # the replica has no such drop yet

    path = "/" + batch["orders"][0]["tracking_url"].split("/", 3)[3]
    page = lagging.server.request("GET", path)

    assert page.status == 200, page.body[:500]  # an unknown link is a 404


def test_a_dashboard_session_reads_the_primary_after_it_writes_else_the_replica(lagging):
    lagging.create("DASH-1")
    past_the_write_window()
    assert lagging.track("DASH-1") == "NOT_FOUND"  # the replica has no such drop yet

    cookie = lagging.signed_in()  # the session's own write: reads on the primary a while
    assert lagging.dashboard_shows(cookie, "DASH-1")

    past_the_write_window()
    assert not lagging.dashboard_shows(cookie, "DASH-1")


def test_writes_go_to_the_primary_and_reads_survive_a_stopped_replica(site):
    """Last in the module: it stops the replica, which the router then rests a while."""
    site.create("DOWN-1")
    site.standby.stop_server()
    try:
        past_the_write_window()
        statuses = [site.track("DOWN-1") for _ in range(5)]
        assert "NOT_FOUND" not in statuses
        assert "DOWN-1" in site.listed()
        site.create("DOWN-2")  # no write ever needed the replica
    finally:
        site.standby.start_server()

    # Back on the replica once it answers again: paused, it lacks a newer batch.
    site.replay(paused=True)
    try:
        site.create("DOWN-3")
        past_the_write_window()
        wait_for("reads from the replica again", lambda: site.track("DOWN-3") == "NOT_FOUND")
    finally:
        site.replay(paused=False)


def test_after_a_failover_the_app_writes_to_the_new_primary_without_a_restart(site):
    """Last: the primary is lost for good. The manager's part (pg_auto_failover in make
    ha-test) is played by `pg_ctl promote`; the app's part is the multi-host URL."""
    site.create("FAIL-1")
    site.caught_up()  # what a synchronous standby promises before the 200 (make ha-test)
    site.primary.crash_server()

    refused = site.server.bulk(orjson.dumps(one_drop("FAIL-2")), site.key, str(uuid.uuid4()))
    assert refused.status == 503, refused.body[:500]  # no node takes writes: retry later
    assert refused.json()["error"]["code"] == "SERVICE_UNAVAILABLE"

    site.standby.promote()
    key = str(uuid.uuid4())
    body = orjson.dumps(one_drop("FAIL-2"))
    answered = wait_for("a write on the new primary", lambda: _answered(site, body, key))
    assert answered.status == 200, answered.body[:500]
    assert site.track("FAIL-1") != "NOT_FOUND"  # acknowledged before the loss, still there
    assert site.track("FAIL-2") != "NOT_FOUND"


def _answered(site: Site, body: bytes, key: str) -> Reply | None:
    reply = site.server.bulk(body, site.key, key)
    return None if reply.status == 503 else reply
