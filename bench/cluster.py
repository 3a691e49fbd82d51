"""The service scaled out on this machine, under load, while its parts fail (issue 17).

    .venv/bin/python bench/cluster.py            # make cluster-test: 90 s of load with faults
    .venv/bin/python bench/cluster.py --short    # 15 s, no faults (the suite runs this)

Everything on loopback, from Debian packages installed if missing (pgbouncer, haproxy,
redis-server): a throwaway PostgreSQL; PgBouncer in transaction mode in front of it (the apps
and workers connect through it, DATABASE_POOLER=pgbouncer, docs/deployment.md); Redis as
CACHE_URL (rate limits shared by every instance); two gunicorn instances behind HAProxy; two
`db_worker`s; a webhook receiver (tests/webhook_receiver.py) with an endpoint per business.

1. Figures, one app instance: locust (bench/locustfile.py) straight at instance A.
2. Figures and faults, two instances: locust at HAProxy while this script kills -9 instance
   A (and restarts it), kills -9 a worker (and starts another), restarts PgBouncer, restarts
   Redis.
   Throughout, simulated couriers (bench/couriers_sim.py) sign in, post positions, take or
   decline the dispatcher's offers of the integrators' live batches and walk their routes;
   after the load, a settling phase lets them take what still waits.
3. Invariants, checked and printed: each Idempotency-Key answered with one batch; every
   accepted drop stored once; wallets equal to their ledger and never negative; no
   client_order_id active twice; every event delivered at least once (each id once after
   dedupe); no 5xx but the documented 503; one rate limit counted across both instances;
   no order assigned twice; no offer to a courier already on a route; every waiting live
   order assigned, offered or flagged; the couriers delivered, with no 5xx but the 503.

Exit 0 when every invariant holds. Nothing is left running.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bulk import (  # noqa: E402
    DB_NAME,
    HOST,
    SEED_SNIPPET,
    BenchError,
    Gunicorn,
    free_port,
    manage,
    start_database,
)
from bench.couriers_sim import Fleet, check_dispatch, settle  # noqa: E402
from bench.webhooks import Worker  # noqa: E402
from tests.webhook_receiver import WebhookReceiver  # noqa: E402

PACKAGES = {"pgbouncer": "/usr/sbin/pgbouncer", "haproxy": "/usr/sbin/haproxy"}
REDIS = "/usr/bin/redis-server"
TENANTS = 6
RATE_LIMIT = 3000  # per key per minute: far above the load's pace
# Bulk calls per key per minute: above the load's pace too (about 3 a second per key at
# most); the probe's own key, which the load never uses, spends it all.
BULK_RATE_LIMIT = 400
# Each integrator sends a small live batch this often (seconds): one order for the
# dispatcher, well below what the couriers can carry (about one order each per dispatcher
# run, every 10 s), so every live order can be served and the settling phase ends.
LIVE_EVERY = {"full": 40, "short": 20}
SERVICE_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    b'{"statusCode":503,"success":false,"error":{"code":"SERVICE_UNAVAILABLE",'
    b'"message":"The service is briefly unavailable; retry in a moment.","details":[],'
    b'"request_id":null}}\n'
)


def install_missing() -> None:
    missing = [name for name, path in PACKAGES.items() if not os.access(path, os.X_OK)]
    if not os.access(REDIS, os.X_OK):
        missing.append("redis-server")
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
        with contextlib.suppress(OSError), __import__("socket").create_connection((HOST, port), 1):
            return
        time.sleep(0.05)
    raise BenchError(f"{what} did not listen on {port} in {timeout:.0f} s")


def pgbouncer(workdir: Path, pg_port: int) -> Daemon:
    """Transaction pooling in front of the cluster; runs as `postgres` (it refuses root)."""
    # Its own folder under /tmp: the work folder is root's alone, and pgbouncer runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
    port = free_port()
    (folder / "userlist.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        f"""[databases]
{DB_NAME} = host={HOST} port={pg_port} dbname={DB_NAME} user=postgres

[pgbouncer]
listen_addr = {HOST}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
reserve_pool_size = 5
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = {folder}/pgbouncer.log
"""
    )
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        for path in folder.iterdir():
            shutil.chown(path, "postgres", "postgres")
    command = [PACKAGES["pgbouncer"], str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    daemon = Daemon("pgbouncer", command, workdir / "pgbouncer.out")
    daemon.port, daemon.folder = port, folder  # type: ignore[attr-defined]
    return daemon


def redis(workdir: Path) -> Daemon:
    port = free_port()
    folder = workdir / "redis"
    folder.mkdir()
    command = [REDIS, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no",
               "--dir", str(folder)]  # fmt: skip
    daemon = Daemon("redis", command, workdir / "redis.out")
    daemon.port = port  # type: ignore[attr-defined]
    return daemon


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
    daemon = Daemon(
        "haproxy", [PACKAGES["haproxy"], "-db", "-f", str(config)], workdir / "haproxy.out"
    )
    daemon.port = port  # type: ignore[attr-defined]
    return daemon


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
    cluster: Cluster,
    host: str,
    users: int,
    classes: tuple[str, ...] = ("Integrator",),
) -> None:
    workdir, tenants_file = cluster.workdir, cluster.tenants_file
    prefix = workdir / f"locust-{phase.name}"
    records = workdir / f"records-{phase.name}.json"
    env = {
        **os.environ,
        "CLUSTER_TENANTS": str(tenants_file),
        "CLUSTER_RECORDS": str(records),
        "CLUSTER_LIVE_EVERY": str(LIVE_EVERY["short" if cluster.short else "full"]),
    }
    command = [
        str(Path(sys.executable).parent / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"),
        "--headless", "--host", host, "-u", str(users), "-r", str(users),
        "-t", f"{int(phase.seconds)}s", "--csv", str(prefix), "--only-summary",
        "--loglevel", "WARNING", "--stop-timeout", "20", "--exit-code-on-error", "0",
        *classes,
    ]  # fmt: skip
    phase.started = time.time()
    before = cluster.cpu_by_component()
    with (workdir / f"locust-{phase.name}.log").open("wb") as log:
        load = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        done = load.wait()
        after = cluster.cpu_by_component()
    phase.ended = time.time()
    phase.cpu = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    if done != 0:
        raise BenchError(f"locust exited {done}: see {workdir}/locust-{phase.name}.log")
    with open(f"{prefix}_stats.csv") as stats:
        phase.stats = list(csv.DictReader(stats))
    phase.records = json.loads(records.read_text())


# --------------------------------------------------------------------------- the run


# Run inside `manage.py shell -c`: the demo data, SEED_SNIPPET, then the load's tenants (some
# wallets run dry during the run: INSUFFICIENT_BALANCE must stop them at 0) and last the
# probe; prints them as one JSON list.
PROVISION_SNIPPET = (
    "from django.core.management import call_command\n"
    'call_command("seed_demo")\n'
    + SEED_SNIPPET
    + f"""
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
)


class Cluster:
    def __init__(self, cleanup: contextlib.ExitStack, short: bool, workers: int = 2) -> None:
        self.short = short
        install_missing()
        self.workdir, self.pg, base_env = start_database(cleanup)
        self.db = cleanup.enter_context(psycopg.connect(self.pg.url(DB_NAME), autocommit=True))
        self.bouncer = pgbouncer(self.workdir, self.pg.port)
        cleanup.callback(shutil.rmtree, self.bouncer.folder, True)
        self.cache = redis(self.workdir)
        for daemon in (self.bouncer, self.cache):
            cleanup.callback(daemon.stop)
            daemon.start()
        wait_port(self.bouncer.port, "pgbouncer")
        wait_port(self.cache.port, "redis")
        self.env = {
            **base_env,
            "DATABASE_URL": f"postgres://postgres@{HOST}:{self.bouncer.port}/{DB_NAME}",
            "DATABASE_POOLER": "pgbouncer",
            "CACHE_URL": f"redis://{HOST}:{self.cache.port}/0",
            "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
            "WEBHOOK_RETRY_SCHEDULE": "1,2,5,10,30",
            "RATE_LIMIT_DEFAULT": f"{RATE_LIMIT}/minute",
            "RATE_LIMIT_BULK": f"{BULK_RATE_LIMIT}/minute",
            "CONN_MAX_AGE": "60",
            "LOG_LEVEL": "INFO",
        }
        print("migrating and seeding through PgBouncer ...", flush=True)
        manage(self.env, "migrate", "--noinput", "-v0")
        # The demo data, the bench's places and every tenant in one process: a management
        # command's own process costs ~2 s of Django start-up, ~4 s beside the suite.
        provisioned = manage(self.env, "shell", "-c", PROVISION_SNIPPET)
        self.receiver = WebhookReceiver()
        cleanup.callback(self.receiver.stop)
        self.apps = [Gunicorn(self.env, workers, self.workdir / f"app{i}.log") for i in range(2)]
        for app in self.apps:
            cleanup.callback(app.stop)
            app.start()
        self.balancer = haproxy(self.workdir, [app.port for app in self.apps])
        cleanup.callback(self.balancer.stop)
        self.balancer.start()
        wait_port(self.balancer.port, "haproxy")
        self.tenants = self._provision(orjson.loads(provisioned.strip().splitlines()[-1]))
        self.workers: list[Worker] = []
        cleanup.callback(lambda: [w.stop() for w in self.workers])
        for _ in range(2):
            self.start_worker()
        print(
            f"cluster up: PostgreSQL :{self.pg.port}, PgBouncer :{self.bouncer.port}, "
            f"Redis :{self.cache.port}, apps :{self.apps[0].port} :{self.apps[1].port}, "
            f"HAProxy :{self.balancer.port}, {len(self.workers)} workers, receiver "
            f"{self.receiver.url()}",
            flush=True,
        )

    def _provision(self, provisioned: list[dict]) -> list[dict]:
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
        path = self.workdir / "tenants.json"
        path.write_text(json.dumps(tenants))
        self.tenants_file = path
        return tenants

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

    def cpu_by_component(self) -> dict[str, float]:
        """CPU seconds used so far by each part, its child processes included."""
        roots = {
            "postgres": [int(self.pg.datadir.joinpath("postmaster.pid").read_text().split()[0])],
            "pgbouncer": [self.bouncer.process.pid],
            "redis": [self.cache.process.pid],
            "haproxy": [self.balancer.process.pid],
            "apps (gunicorn)": [app.process.pid for app in self.apps if app.process],
            "workers": [w.process.pid for w in self.workers if w.process],
        }
        used = {name: cpu_seconds(tree(pids)) for name, pids in roots.items()}
        # locust's own use: the times of the children this process has waited for.
        used["load (locust)"] = _children_cpu()
        return used

    def start_worker(self) -> Worker:
        worker = Worker(
            self.env, self.workdir / f"worker{len(self.workers)}.log", len(self.workers)
        )
        worker.launch()
        worker.wait_started()
        self.workers.append(worker)
        return worker


def faults(cluster: Cluster, seconds: float, log: list[str]) -> threading.Thread:
    """The outages, spread over the loaded phase."""

    def at(fraction: float) -> None:
        time.sleep(max(0.0, started + fraction * seconds - time.time()))

    def note(text: str) -> None:
        log.append(f"{time.time() - started:6.1f} s  {text}")
        print(f"  fault: {log[-1]}", flush=True)

    def run() -> None:
        app = cluster.apps[0]
        at(0.15)
        note(f"kill -9 app instance A (gunicorn master {app.process.pid} and its workers)")
        # The whole process group, as a host dying takes them: killing the master alone
        # leaves its workers serving the port until they notice, and the new master
        # cannot bind it.
        os.killpg(app.process.pid, signal.SIGKILL)
        app.process.wait()
        time.sleep(5)
        app.start()
        note("app instance A restarted")
        at(0.35)
        victim = cluster.workers[0]
        note(f"kill -9 worker {victim.worker_id}")
        victim.process.kill()
        victim.process.wait()
        cluster.start_worker()
        note("a new worker started")
        at(0.55)
        note("PgBouncer stopped")
        cluster.bouncer.stop()
        time.sleep(2)
        cluster.bouncer.start()
        wait_port(cluster.bouncer.port, "pgbouncer")
        note("PgBouncer back")
        at(0.75)
        note("Redis stopped")
        cluster.cache.stop()
        time.sleep(2)
        cluster.cache.start()
        wait_port(cluster.cache.port, "redis")
        note("Redis back")

    started = time.time()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# --------------------------------------------------------------------------- checks


def check_invariants(cluster: Cluster, phases: list[Phase]) -> list[tuple[str, bool, str]]:
    db = cluster.db
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
    doubled = db.execute(
        """SELECT count(*) FROM (SELECT 1 FROM orders_drop
           WHERE status IN ('SCHEDULED','PENDING','ASSIGNED','PICKED_UP')
           GROUP BY business_id, environment, client_order_id HAVING count(*) > 1) t"""
    ).fetchone()[0]
    check("no client_order_id active twice", doubled == 0, f"{doubled} ids active twice")
    events = {row[0] for row in db.execute("SELECT public_id FROM events_event")}
    received = Counter(r.id for r in cluster.receiver.received)
    missing = events - set(received)
    by_status = dict(db.execute("SELECT status, count(*) FROM events_delivery GROUP BY 1"))
    alive = sum(worker.alive for worker in cluster.workers)
    check(
        "every event delivered at least once",
        not missing,
        f"{len(events)} events, {len(set(received))} distinct delivered, {len(missing)} "
        f"missing, {sum(n - 1 for n in received.values())} duplicate deliveries (deduped); "
        f"deliveries {by_status}; {alive} of {len(cluster.workers)} workers alive",
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


def rate_limit_probe(cluster: Cluster) -> tuple[str, bool, str]:
    """A key the load never used sends BULK_RATE_LIMIT + 20 bulk calls at once, through the
    balancer (both instances): exactly BULK_RATE_LIMIT may pass the throttle, whichever
    instance counts them. An empty body is refused after the throttle (400), so nothing is
    created."""
    key = cluster.probe["key"]
    sent = BULK_RATE_LIMIT + 20
    codes: Counter[int] = Counter()
    lock = threading.Lock()

    def send(count: int) -> None:
        for _ in range(count):
            status, _ = cluster.call("POST", "/api/v1/orders/bulk", key, {}, idempotency=True)
            with lock:
                codes[status] += 1

    threads = [threading.Thread(target=send, args=(sent // 10,)) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    served = [
        sum(cluster.probe["business_id"] in line for line in app.log_path.read_text().splitlines())
        for app in cluster.apps
    ]
    healthy = [_healthy(app.port) for app in cluster.apps]
    return (
        "rate limits counted across both instances",
        codes[400] == BULK_RATE_LIMIT and codes[429] == sent - BULK_RATE_LIMIT and min(served) > 0,
        f"{sent} bulk calls of one key: {codes[400]} passed the throttle, {codes[429]} refused "
        f"with 429 (limit {BULK_RATE_LIMIT}/min); instances served {served[0]} and {served[1]} "
        f"(each answers /healthz: {healthy})",
    )


def _healthy(port: int) -> bool:
    with contextlib.suppress(OSError):
        conn = http.client.HTTPConnection(HOST, port, timeout=5)
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    return False


# --------------------------------------------------------------------------- figures


def figures(phase: Phase, cluster: Cluster) -> list[str]:
    rows = {row["Name"]: row for row in phase.stats}
    total = rows.get("Aggregated", {})
    seconds = phase.ended - phase.started
    drops = cluster.db.execute(
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


def database_share(cluster: Cluster) -> str:
    """Of the apps' time serving API calls, the share spent in database statements."""
    total = db_total = 0.0
    for app in [*cluster.apps]:
        for line in app.log_path.read_text(errors="replace").splitlines():
            if '"api.access"' not in line:
                continue
            with contextlib.suppress(ValueError, KeyError):
                entry = json.loads(line)
                total += entry["duration_ms"]
                db_total += entry.get("db_ms", 0.0)
    if not total:
        return "database share: no access lines"
    return (
        f"time in database statements: {db_total / total:.0%} of the apps' request time "
        f"({db_total / 1000:.0f} s of {total / 1000:.0f} s; COPY not counted)"
    )


def tree(roots: list[int]) -> list[int]:
    """The processes under these (themselves included), from /proc."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo += [child for child, ppid in parent.items() if ppid == pid]
    return sorted(found)


def _children_cpu() -> float:
    usage = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds(pids: list[int]) -> float:
    used = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return used


def start_couriers(cluster: Cluster, cleanup: contextlib.ExitStack, count: int) -> Fleet:
    """The simulated couriers, provisioned in one process and started (signed in, online)."""
    fleet = Fleet(HOST, cluster.balancer.port, count)
    manage(cluster.env, "shell", "-c", fleet.snippet())
    cleanup.callback(fleet.stop)
    fleet.start()
    # Signed in before the load starts: each sign-in hashes a password (~1 s of a sync
    # worker), which would otherwise be measured as the mix's queueing (5 s p99 at one
    # instance, docs/scaling.md).
    deadline = time.monotonic() + 120
    while fleet.signed_in() < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return fleet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="15 s, no faults")
    parser.add_argument("--seconds", type=int, default=90, help="the loaded phase (60-120)")
    parser.add_argument("--users", type=int, default=24)
    parser.add_argument("--couriers", type=int, default=20, help="simulated (--short: 6)")
    parser.add_argument(
        "--workers", type=int, default=2, help="gunicorn's sync workers per app instance"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with contextlib.ExitStack() as cleanup:
        cluster = Cluster(cleanup, short=args.short, workers=args.workers)
        fleet = start_couriers(cluster, cleanup, 6 if args.short else args.couriers)
        phases: list[Phase] = []
        fault_log: list[str] = []
        balancer = f"http://{HOST}:{cluster.balancer.port}"
        if args.short:
            phases.append(Phase("two instances", 15, 2))
            run_locust(phases[-1], cluster, balancer, args.users // 2)
        else:
            # The same load at one instance, then at two, for the figures; then at two while
            # parts fail, for the invariants.
            phases.append(Phase("one instance", 30, 1))
            run_locust(phases[-1], cluster, f"http://{HOST}:{cluster.apps[0].port}", args.users)
            phases.append(Phase("two instances", 30, 2))
            run_locust(phases[-1], cluster, balancer, args.users)
            phases.append(Phase("two instances, faults", args.seconds, 2))
            thread = faults(cluster, args.seconds, fault_log)
            run_locust(phases[-1], cluster, balancer, args.users)
            thread.join(timeout=30)
        print("load done; the couriers take what still waits ...", flush=True)
        unserved, settled = settle(cluster.db, fleet, 30 if args.short else 60)
        fleet.stop()
        print("waiting for every webhook to be delivered ...", flush=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pending = cluster.db.execute(
                "SELECT count(*) FROM events_delivery WHERE status = 'PENDING'"
            ).fetchone()[0]
            if pending == 0:
                break
            time.sleep(1)
        results = check_invariants(cluster, phases)
        results.append(rate_limit_probe(cluster))
        results += check_dispatch(cluster.db, fleet, unserved, settled)
        print("\n=== figures ===")
        for phase in phases:
            print("\n".join(figures(phase, cluster)))
        print(database_share(cluster))
        if fault_log:
            print("=== faults ===")
            print("\n".join(fault_log))
        print("=== invariants ===")
        for name, ok, detail in results:
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        print(f"(whole run {time.monotonic() - started:.0f} s, work files in {cluster.workdir})")
        if all(ok for _, ok, _ in results):
            return 0
        kept = Path(tempfile.mkdtemp(prefix="cluster-failed-"))
        for log in cluster.workdir.glob("*.log"):
            shutil.copy(log, kept)
        print(f"logs kept in {kept}")
        return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nCLUSTER RUN FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
