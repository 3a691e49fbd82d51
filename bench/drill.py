"""What the two drills share (make cluster-test, bench/cluster.py; make ha-test, bench/ha.py).

Both seed one database and serve it the same way: the demo data, the bench's places, the
load's tenants and the probe (and the simulated couriers, when asked) provisioned in one
`manage.py shell` process; a webhook receiver with an endpoint per tenant and environment;
two gunicorn instances behind HAProxy; two `db_worker`s. Both run the same locust load
(bench/locustfile.py) and check the same invariants on what it left. A drill adds only what
differs: its database and what sits in front of it, its faults, its own checks and figures.
"""

from __future__ import annotations

import contextlib
import csv
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from bench import couriers_sim  # noqa: E402
from bench.bulk import HOST, SEED_SNIPPET, BenchError, Gunicorn, free_port, manage  # noqa: E402
from bench.couriers_sim import Fleet  # noqa: E402
from bench.webhooks import Worker  # noqa: E402
from tests.webhook_receiver import WebhookReceiver  # noqa: E402

HAPROXY = "/usr/sbin/haproxy"
TENANTS = 6
RATE_LIMIT = 3000  # per key per minute: far above the load's pace
# Bulk calls per key per minute: above the load's pace too (about 3 a second per key at
# most); the probe's own key, which the load never uses, spends it all.
BULK_RATE_LIMIT = 400
# Each integrator sends a small live batch this often (seconds): one order for the
# dispatcher, well below what the couriers can carry (about one order each per dispatcher
# run, every 10 s), so every live order can be served and the settling phase ends.
LIVE_EVERY = {"full": 40, "short": 20}
# The apps' and workers' settings in every drill, beside its database's.
APP_SETTINGS = {
    "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
    "WEBHOOK_RETRY_SCHEDULE": "1,2,5,10,30",
    "RATE_LIMIT_DEFAULT": f"{RATE_LIMIT}/minute",
    "RATE_LIMIT_BULK": f"{BULK_RATE_LIMIT}/minute",
    "CONN_MAX_AGE": "60",
    "LOG_LEVEL": "INFO",
    # The drills' couriers ride no real road: their runs are as long as the planner thinks,
    # never as long as it takes them. Plan as far ahead as the load lasts.
    "RUN_HORIZON_MINUTES": "600",
}
SERVICE_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    b'{"statusCode":503,"success":false,"error":{"code":"SERVICE_UNAVAILABLE",'
    b'"message":"The service is briefly unavailable; retry in a moment.","details":[],'
    b'"request_id":null}}\n'
)


def install_missing(packages: dict[str, str]) -> None:
    """The Debian packages (name -> a file each installs) not installed yet, in one apt-get."""
    missing = [name for name, path in packages.items() if not Path(path).exists()]
    if missing:
        print(f"installing {', '.join(missing)} from Debian ...", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)


# --------------------------------------------------------------------------- the parts


@dataclass
class Daemon:
    """A process we start, kill and restart; its output goes to `log`."""

    name: str
    command: list[str]
    log: Path
    env: dict[str, str] | None = None
    process: subprocess.Popen | None = None

    def start(self) -> Daemon:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                start_new_session=True,
            )  # fmt: skip
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


def wait_port(port: int, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), 1):
            return
        time.sleep(0.05)
    raise BenchError(f"{what} did not listen on {port} in {timeout:.0f} s")


def haproxy(workdir: Path, app_ports: list[int]) -> Daemon:
    """Round robin over the app instances, health-checked on /healthz every second.

    A request the balancer cannot serve (no instance up, or the instance died under it) is
    answered with our 503 envelope and Retry-After, like the app's own 503: clients retry it
    with the same Idempotency-Key (docs/api.md).
    """
    port = free_port()
    errors = workdir / "503.http"
    errors.write_bytes(SERVICE_UNAVAILABLE)
    servers = "\n".join(
        f"  server app{i} {HOST}:{p} check inter 1s fall 3 rise 1" for i, p in enumerate(app_ports)
    )
    config = workdir / "haproxy.cfg"
    config.write_text(
        f"""global
  maxconn 4000
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  # A sync gunicorn answers /healthz after the requests ahead of it: a busy instance is not a
  # dead one. Three missed checks (~3 s) take an instance out; one answer brings it back.
  timeout check 5s
  retries 2
  option redispatch
  errorfile 502 {errors}
  errorfile 503 {errors}
  errorfile 504 {errors}
frontend api
  bind {HOST}:{port}
  default_backend apps
backend apps
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
{servers}
"""
    )
    daemon = Daemon("haproxy", [HAPROXY, "-db", "-f", str(config)], workdir / "haproxy.out")
    daemon.port = port  # type: ignore[attr-defined]
    return daemon


# --------------------------------------------------------------------------- seeding


# Run inside `manage.py shell -c`: the demo data, SEED_SNIPPET, then the load's tenants (some
# wallets run dry during the run: INSUFFICIENT_BALANCE must stop them at 0) and last the
# probe; prints them as one JSON list, the last line.
PROVISION_SNIPPET = f"""
import json
from decimal import Decimal
from console.provisioning import provision_business
made = [
    provision_business(
        name=f"Load {{i}}", email=f"load{{i}}@example.com",
        sandbox_balance=Decimal("200.00" if i % 3 == 0 else "1000000.00"),
        live_balance=Decimal("1000000.00"),
    )
    for i in range({TENANTS})
]
made.append(provision_business(name="Probe", email="probe@example.com"))
print(json.dumps([
    {{"business_id": str(m.business.pk), "sandbox_key": m.sandbox_key, "live_key": m.live_key}}
    for m in made
]))
"""


def seed_snippet(couriers: int) -> str:
    """Everything a drill's database holds before the load, for one `manage.py shell -c`: a
    management command's own process costs ~2 s of Django start-up, ~4 s beside the suite."""
    fleet = couriers_sim.PROVISION_SNIPPET.format(count=couriers, password=couriers_sim.PASSWORD)
    return (
        "from django.core.management import call_command\n"
        'call_command("seed_demo")\n'
        + SEED_SNIPPET
        + (fleet if couriers else "")
        + PROVISION_SNIPPET
    )


class Drill:
    """The apps, workers and receiver of a drill over a database its subclass starts: the
    subclass sets `workdir`, `env` (APP_SETTINGS among them), `db`, then calls `serve`."""

    short: bool
    workdir: Path
    env: dict[str, str]
    db: psycopg.Connection

    def serve(
        self,
        cleanup: contextlib.ExitStack,
        *,
        app_workers: int = 2,
        instances: int = 2,
        couriers: int = 0,
        collect_static: bool = False,
    ) -> None:
        """Migrate and seed; start the receiver, the app instances (two unless said) behind
        HAProxy and two workers; give each tenant its webhook endpoints. Everything stops on
        `cleanup`."""
        manage(self.env, "migrate", "--noinput", "-v0")
        if collect_static:
            # The recipients' pages name hashed static files (DEBUG off): collected once,
            # gzip only (brotli would be ~35 s of the two cores' CPU, core/static.py).
            manage({**self.env, "STATIC_BROTLI": "false"}, "collectstatic", "--noinput", "-v0")
        provisioned = manage(self.env, "shell", "-c", seed_snippet(couriers))
        self.couriers = couriers
        self.receiver = WebhookReceiver()
        cleanup.callback(self.receiver.stop)
        self.apps = [
            Gunicorn(self.env, app_workers, self.workdir / f"app{i}.log") for i in range(instances)
        ]
        for app in self.apps:
            cleanup.callback(app.stop)
        # Both at once: each start waits for its instance's first /healthz (Django loaded).
        with ThreadPoolExecutor(len(self.apps)) as starting:
            list(starting.map(Gunicorn.start, self.apps))
        self.balancer = haproxy(self.workdir, [app.port for app in self.apps])
        cleanup.callback(self.balancer.stop)
        self.balancer.start()
        wait_port(self.balancer.port, "haproxy")
        self.tenants = self._endpoints(orjson.loads(provisioned.strip().splitlines()[-1]))
        self.workers: list[Worker] = []
        cleanup.callback(lambda: [w.stop() for w in self.workers])
        for _ in range(2):
            self.start_worker(wait=False)
        for worker in self.workers:
            worker.wait_started()

    def _endpoints(self, provisioned: list[dict]) -> list[dict]:
        """The tenants PROVISION_SNIPPET made (the last one is the probe), each with a webhook
        endpoint per environment."""
        tenants, secrets = [], []
        for i, made in enumerate(provisioned[:-1]):
            key = made["sandbox_key"]
            # An endpoint per environment: the live batches' events are delivered too.
            for suffix, endpoint_key in (("", key), ("-live", made["live_key"])):
                status, answer = self.call("POST", "/api/v1/webhook-endpoints", endpoint_key, {
                    "url": self.receiver.url(f"/t{i}{suffix}"), "event_types": ["*"],
                })  # fmt: skip
                if status != 201:
                    raise BenchError(f"webhook endpoint not created: {status} {answer}")
                secrets.append(answer["data"]["secret"])
            tenants.append(
                {
                    "name": f"load{i}",
                    "key": key,
                    "live_key": made["live_key"],
                    "business_id": made["business_id"],
                }
            )
        self.receiver.trust(*secrets)
        probe = provisioned[-1]
        self.probe = {"key": probe["sandbox_key"], "business_id": probe["business_id"]}
        self.tenants_file = self.workdir / "tenants.json"
        self.tenants_file.write_text(json.dumps(tenants))
        return tenants

    def start_couriers(self, cleanup: contextlib.ExitStack) -> Fleet:
        """The couriers `serve` provisioned, started (signed in, online) through HAProxy."""
        fleet = Fleet(HOST, self.balancer.port, self.couriers)
        cleanup.callback(fleet.stop)
        fleet.start()
        # Signed in before the load starts: each sign-in hashes a password (~1 s of a sync
        # worker), which would otherwise be measured as the mix's queueing (5 s p99 at one
        # instance, docs/scaling.md).
        deadline = time.monotonic() + 120
        while fleet.signed_in() < self.couriers and time.monotonic() < deadline:
            time.sleep(0.2)
        return fleet

    def call(self, method: str, path: str, key: str, body=None, idempotency: bool = False):
        """One API call through the balancer: (status, parsed body)."""
        conn = http.client.HTTPConnection(HOST, self.balancer.port, timeout=30)
        data = orjson.dumps(body) if body is not None else None
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        if idempotency:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        return response.status, orjson.loads(raw) if raw else None

    def start_worker(self, wait: bool = True) -> Worker:
        """One more `db_worker`; with `wait`, once it has started."""
        worker = Worker(
            self.env, self.workdir / f"worker{len(self.workers)}.log", len(self.workers)
        )
        worker.launch()
        self.workers.append(worker)
        if wait:
            worker.wait_started()
        return worker

    def cpu_by_component(self) -> dict[str, float]:
        """CPU seconds used so far by each part (a drill that measures them says)."""
        return {}

    def wait_delivered(self, seconds: float) -> None:
        """Until no webhook delivery is pending, or `seconds`."""
        print("waiting for every webhook to be delivered ...", flush=True)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pending = self.db.execute(
                "SELECT count(*) FROM events_delivery WHERE status = 'PENDING'"
            ).fetchone()[0]
            if pending == 0:
                return
            time.sleep(1)


# --------------------------------------------------------------------------- load


@dataclass
class Phase:
    name: str
    seconds: float
    instances: int
    started: float = 0.0
    ended: float = 0.0
    stats: list[dict] = field(default_factory=list)
    records: dict = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)  # component -> CPU seconds used


def run_locust(
    phase: Phase,
    drill: Drill,
    host: str,
    users: int,
    classes: tuple[str, ...] = ("Integrator",),
) -> None:
    workdir = drill.workdir
    prefix = workdir / f"locust-{phase.name}"
    records = workdir / f"records-{phase.name}.json"
    env = {
        **os.environ,
        "CLUSTER_TENANTS": str(drill.tenants_file),
        "CLUSTER_RECORDS": str(records),
        "CLUSTER_LIVE_EVERY": str(LIVE_EVERY["short" if drill.short else "full"]),
    }
    command = [
        str(Path(sys.executable).parent / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"),
        "--headless", "--host", host, "-u", str(users), "-r", str(users),
        "-t", f"{int(phase.seconds)}s", "--csv", str(prefix), "--only-summary",
        "--loglevel", "WARNING", "--stop-timeout", "20", "--exit-code-on-error", "0",
        *classes,
    ]  # fmt: skip
    phase.started = time.time()
    before = drill.cpu_by_component()
    with (workdir / f"locust-{phase.name}.log").open("wb") as log:
        load = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        done = load.wait()
        after = drill.cpu_by_component()
    phase.ended = time.time()
    phase.cpu = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    if done != 0:
        raise BenchError(f"locust exited {done}: see {workdir}/locust-{phase.name}.log")
    with open(f"{prefix}_stats.csv") as stats:
        phase.stats = list(csv.DictReader(stats))
    phase.records = json.loads(records.read_text())


# --------------------------------------------------------------------------- checks


def check_invariants(drill: Drill, phases: list[Phase]) -> list[tuple[str, bool, str]]:
    db = drill.db
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        results.append((name, ok, detail))

    keys: dict[str, set[str]] = {}
    accepted: dict[str, set[str]] = {}
    statuses: Counter[str] = Counter()
    for phase in phases:
        for key, ids in phase.records["keys"].items():
            keys.setdefault(key, set()).update(ids)
        for batch_id, ids in phase.records["accepted"].items():
            accepted.setdefault(batch_id, set()).update(ids)
        statuses.update(phase.records["statuses"])
    twice = [k for k, ids in keys.items() if len(ids) != 1]
    stored_keys = db.execute("SELECT count(*) FROM orders_idempotencyrecord").fetchone()[0]
    check(
        "each Idempotency-Key answered with one batch",
        not twice,
        f"{len(keys)} keys answered, {sum(len(v) for v in keys.values())} batch ids, "
        f"{len(twice)} keys with more than one; {stored_keys} keys stored",
    )
    drop_ids = [d for ids in accepted.values() for d in ids]
    found = db.execute(
        "SELECT count(*) FROM orders_drop WHERE id = ANY(%s::uuid[])", (drop_ids,)
    ).fetchone()[0]
    mismatched = db.execute(
        """SELECT count(*) FROM orders_batch b
           WHERE b.accepted <> (SELECT count(*) FROM orders_drop d WHERE d.batch_id = b.id)"""
    ).fetchone()[0]
    check(
        "every accepted drop stored, once",
        found == len(drop_ids) == len(set(drop_ids)) and mismatched == 0,
        f"{len(drop_ids)} accepted in answers, {found} in the database; "
        f"{mismatched} batches whose accepted count differs from their drops",
    )
    check_wallets(db, check)
    check_custody(db, check)
    doubled = db.execute(
        """SELECT count(*) FROM (SELECT 1 FROM orders_drop
           WHERE status IN ('SCHEDULED','PENDING','ASSIGNED','PICKED_UP')
           GROUP BY business_id, environment, client_order_id HAVING count(*) > 1) t"""
    ).fetchone()[0]
    check("no client_order_id active twice", doubled == 0, f"{doubled} ids active twice")
    events = {row[0] for row in db.execute("SELECT public_id FROM events_event")}
    received = Counter(r.id for r in drill.receiver.received)
    missing = events - set(received)
    by_status = dict(db.execute("SELECT status, count(*) FROM events_delivery GROUP BY 1"))
    alive = sum(worker.alive for worker in drill.workers)
    check(
        "every event delivered at least once",
        not missing,
        f"{len(events)} events, {len(set(received))} distinct delivered, {len(missing)} "
        f"missing, {sum(n - 1 for n in received.values())} duplicate deliveries (deduped); "
        f"deliveries {by_status}; {alive} of {len(drill.workers)} workers alive",
    )
    codes = Counter()
    for name, n in statuses.items():
        codes[int(name.rsplit(" ", 1)[1])] += n
    bad = {code: n for code, n in codes.items() if code >= 500 and code != 503}
    check(
        "no 5xx but the documented 503",
        not bad,
        f"{codes[503]} answers 503 (retried with the same key), other 5xx: {bad or 'none'}; "
        f"{codes[0]} connections dropped mid-request by an instance killed under them "
        "(no status; retried with the same key)",
    )
    return results


def check_wallets(db, check) -> None:
    wallets = db.execute(
        """SELECT count(*) FILTER (WHERE w.balance <> coalesce(l.total, 0)),
                  count(*) FILTER (WHERE w.balance < 0), count(*)
           FROM billing_wallet w
           LEFT JOIN (SELECT wallet_id, sum(amount) AS total FROM billing_ledgerentry
                      GROUP BY wallet_id) l ON l.wallet_id = w.id"""
    ).fetchone()
    negative_ever = db.execute(
        "SELECT count(*) FROM billing_ledgerentry WHERE balance_after < 0"
    ).fetchone()[0]
    check(
        "wallets equal their ledger, never negative",
        wallets[0] == 0 and wallets[1] == 0 and negative_ever == 0,
        f"{wallets[2]} wallets, {wallets[0]} off their ledger, {wallets[1]} negative, "
        f"{negative_ever} ledger rows below zero",
    )


# Cash custody (docs/contract.md §23), per environment and currency: what the businesses'
# COD ledgers say was collected, what the couriers' cash ledgers say they took, and where it
# is now (in hand, handed over, short).
CUSTODY = """
WITH businesses AS (
    SELECT a.environment, d.currency, sum(e.amount) AS collected
    FROM billing_codentry e JOIN billing_codaccount a ON a.id = e.account_id
    JOIN orders_drop d ON d.id = e.drop_id
    WHERE e.kind = 'COLLECTED' GROUP BY 1, 2),
couriers AS (
    SELECT a.environment, a.currency,
           coalesce(sum(e.amount) FILTER (WHERE e.kind = 'COLLECTED'), 0) AS collected,
           coalesce(-sum(e.amount) FILTER (WHERE e.kind <> 'COLLECTED'), 0) AS gone
    FROM billing_couriercashentry e JOIN billing_couriercashaccount a ON a.id = e.account_id
    GROUP BY 1, 2),
held AS (
    SELECT environment, currency, sum(in_hand) AS in_hand
    FROM billing_couriercashaccount GROUP BY 1, 2)
SELECT coalesce(b.environment, c.environment, h.environment),
       coalesce(b.currency, c.currency, h.currency),
       coalesce(b.collected, 0), coalesce(c.collected, 0),
       coalesce(h.in_hand, 0) + coalesce(c.gone, 0)
FROM businesses b
FULL JOIN couriers c ON (c.environment, c.currency) = (b.environment, b.currency)
FULL JOIN held h ON (h.environment, h.currency)
    = (coalesce(b.environment, c.environment), coalesce(b.currency, c.currency))
"""


def check_custody(db, check) -> None:
    rows = db.execute(CUSTODY).fetchall()
    off = [row for row in rows if not row[2] == row[3] == row[4]]
    collected = sum((row[2] for row in rows), start=0)
    check(
        "cash custody adds up: businesses' COD collected = couriers' = in hand + handed over",
        not off,
        f"{collected} collected in {len(rows)} environment-currency pairs; "
        f"{len(off)} off: {off or 'none'}",
    )


# --------------------------------------------------------------------------- figures


def figures(phase: Phase, drill: Drill) -> list[str]:
    rows = {row["Name"]: row for row in phase.stats}
    total = rows.get("Aggregated", {})
    seconds = phase.ended - phase.started
    drops = drill.db.execute(
        "SELECT count(*) FROM orders_drop"
        " WHERE created_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)",
        (phase.started, phase.ended),
    ).fetchone()[0]
    lines = [
        f"{phase.name}: {phase.instances} app instance(s), {seconds:.0f} s: "
        f"{float(total.get('Requests/s', 0)):.1f} requests/s, {drops / seconds:.0f} drops/s",
        f"  {'endpoint':<16} {'requests':>8} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}",
    ]
    for name, row in sorted(rows.items(), key=lambda item: _order(item[0])):
        if name == "Aggregated":
            continue
        lines.append(
            f"  {name:<16} {row['Request Count']:>8} {row['Failure Count']:>5} "
            f"{row['50%']:>7} {row['95%']:>7} {row['99%']:>7}"
        )
    if phase.cpu and "faults" not in phase.name:
        busy = ", ".join(
            f"{name} {used / seconds:.2f}"
            for name, used in sorted(phase.cpu.items(), key=lambda item: -item[1])
        )
        lines.append(f"  CPU cores busy (of {os.cpu_count()}): {busy}")
    return lines


def _order(name: str) -> tuple:
    """bulk 1, bulk 5, …, bulk 2000 in size order, then the other calls by name."""
    kind, _, size = name.partition(" ")
    return (kind, int(size) if size.isdigit() else 10**9, name)
