"""The service scaled out on this machine, under load, while its parts fail.

    .venv/bin/python bench/cluster.py            # make cluster-test: 90 s of load with faults
    .venv/bin/python bench/cluster.py --short    # 15 s, no faults (the suite runs this)

Everything on loopback, from Debian packages installed if missing (pgbouncer, haproxy,
redis-server): a throwaway PostgreSQL; PgBouncer in transaction mode in front of it (the apps
and workers connect through it, DATABASE_POOLER=pgbouncer, docs/deployment.md); Redis as
CACHE_URL (rate limits shared by every instance); two gunicorn instances behind HAProxy; two
`db_worker`s; a webhook receiver (tests/webhook_receiver.py) with an endpoint per business.
The seeding, the apps, workers and receiver, the load and the invariants both drills check
are bench/drill.py's (shared with bench/ha.py); this file adds PgBouncer, Redis and the faults.

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
   no order assigned twice; no offer of an order another courier holds; every waiting live
   order assigned, offered or flagged; the couriers delivered, with no 5xx but the 503.

Exit 0 when every invariant holds. Nothing is left running.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bulk import DB_NAME, HOST, BenchError, free_port, start_database  # noqa: E402
from bench.couriers_sim import check_dispatch, settle  # noqa: E402
from bench.drill import (  # noqa: E402
    APP_SETTINGS,
    BULK_RATE_LIMIT,
    HAPROXY,
    Daemon,
    Drill,
    Phase,
    check_invariants,
    figures,
    install_missing,
    run_locust,
    wait_port,
)

PACKAGES = {
    "pgbouncer": "/usr/sbin/pgbouncer",
    "haproxy": HAPROXY,
    "redis-server": "/usr/bin/redis-server",
}


# --------------------------------------------------------------------------- the parts


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
    command = [PACKAGES["redis-server"], "--bind", HOST, "--port", str(port), "--save", "",
               "--appendonly", "no", "--dir", str(folder)]  # fmt: skip
    daemon = Daemon("redis", command, workdir / "redis.out")
    daemon.port = port  # type: ignore[attr-defined]
    return daemon


# --------------------------------------------------------------------------- the run


class Cluster(Drill):
    """The drill's apps and workers on one PostgreSQL behind PgBouncer in transaction mode,
    with Redis as the cache (the rate limits counted across both instances)."""

    def __init__(
        self, cleanup: contextlib.ExitStack, short: bool, workers: int = 2, couriers: int = 0
    ) -> None:
        self.short = short
        install_missing(PACKAGES)
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
            **APP_SETTINGS,
            "DATABASE_URL": f"postgres://postgres@{HOST}:{self.bouncer.port}/{DB_NAME}",
            "DATABASE_POOLER": "pgbouncer",
            "CACHE_URL": f"redis://{HOST}:{self.cache.port}/0",
        }
        print("migrating and seeding through PgBouncer ...", flush=True)
        self.serve(cleanup, app_workers=workers, couriers=couriers)
        print(
            f"cluster up: PostgreSQL :{self.pg.port}, PgBouncer :{self.bouncer.port}, "
            f"Redis :{self.cache.port}, apps :{self.apps[0].port} :{self.apps[1].port}, "
            f"HAProxy :{self.balancer.port}, {len(self.workers)} workers, receiver "
            f"{self.receiver.url()}",
            flush=True,
        )

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
        couriers = 6 if args.short else args.couriers
        cluster = Cluster(cleanup, short=args.short, workers=args.workers, couriers=couriers)
        fleet = cluster.start_couriers(cleanup)
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
        cluster.wait_delivered(120)
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
