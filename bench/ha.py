"""Lose the primary, lose nothing: the service on a replicated PostgreSQL.

    .venv/bin/python bench/ha.py            # make ha-test: 60 s of load, the primary killed twice
    .venv/bin/python bench/ha.py --short    # 25 s, killed once (the suite runs this)

Everything on loopback (bench/hapg.py, pg_auto_failover from Debian, installed if missing):
a monitor and three nodes, a primary, a synchronous standby and an asynchronous replica
that is never promoted. The app connects with a libpq multi-host URL and
target_session_attrs=read-write, so two gunicorn instances (behind HAProxy, as in
bench/cluster.py) and two `db_worker`s reach whichever node is primary, without a restart.
The seeding, the apps, workers and receiver, the load and the invariants both drills check
are bench/drill.py's; this file adds the formation, the read router's phases and the kills.
The mixed integrator load of `make cluster-test` (bench/locustfile.py) runs while this
script kills -9 the primary (its postmaster and its pg_autoctl: the host dies), waits for
the standby to be promoted and the first write to pass, then restarts the lost node's
pg_autoctl, which rejoins as a standby; and once more (--short: once).

Invariants, checked and printed: every batch answered 200 is in the database with its
drops and its ledger entry; no batch twice per Idempotency-Key; wallets equal their ledger
and never negative; every event delivered; no 5xx but the documented 503. Figures: each
failover's time (kill to the first write through the multi-host URL) and its rejoin, the
503s answered, replica lag p50/p99 of each standby, throughput. Exit 0 when every invariant
holds. Nothing is left running, on success, failure or Ctrl-C. docs/scaling.md.

Before the faults (not with --short), the read router (core/replica.py) is weighed: the same
load twice, the integrators and, beside every two of them, a recipient opening tracking
links (bench/locustfile.py's Recipient), the apps first on the primary alone, then with
DATABASE_REPLICA_URL naming the standbys (target_session_attrs=prefer-standby); each prints
its requests/s and p99, and the share of the database's transactions the standbys served.
The faults then run with the router on, integrators only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bulk import DB_NAME, HOST, BenchError  # noqa: E402
from bench.drill import (  # noqa: E402
    APP_SETTINGS,
    HAPROXY,
    Drill,
    Phase,
    check_invariants,
    figures,
    install_missing,
    run_locust,
)
from bench.hapg import PACKAGES as PG_AUTO_FAILOVER  # noqa: E402
from bench.hapg import Formation  # noqa: E402

STANDBY_STATES = ("secondary",)
PRIMARY_STATES = ("primary", "wait_primary", "single")


class HaCluster(Drill):
    """The drill's apps and workers on a pg_auto_failover formation: no PgBouncer (a pooler
    pinned to one node would not follow the primary) and no Redis."""

    def __init__(self, cleanup: contextlib.ExitStack, short: bool) -> None:
        self.short = short
        install_missing({"haproxy": HAPROXY, **PG_AUTO_FAILOVER})
        self.workdir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="ha-")))
        self.formation = Formation()
        cleanup.callback(self.formation.stop)  # registered first, so it runs last
        self._start_formation()
        with psycopg.connect(self.formation.url("postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {DB_NAME}")
        self.env = self._environment()
        self.db = self.connect()
        cleanup.callback(lambda: self.db.close())
        print("migrating and seeding through the primary ...", flush=True)
        # Static files only for the recipients' pages of the read-scale phases (not --short).
        self.serve(cleanup, collect_static=not short)
        print(
            f"formation up in {self.setup_seconds:.1f} s: {self.formation.url(DB_NAME)}; apps "
            f":{self.apps[0].port} :{self.apps[1].port}, HAProxy :{self.balancer.port}, "
            f"{len(self.workers)} workers, receiver {self.receiver.url()}",
            flush=True,
        )

    def _start_formation(self) -> None:
        """The monitor, a primary, its synchronous standby and an asynchronous replica."""
        print("starting the monitor and three nodes ...", flush=True)
        started = time.monotonic()
        self.formation.start_monitor()
        primary = self.formation.add_node()
        self.formation.wait_state(primary, ("single",))
        standbys = [self.formation.add_node(), self.formation.add_node(sync=False)]
        for node in standbys:
            self.formation.wait_state(node, STANDBY_STATES)
        self.formation.wait_state(primary, ("primary",))
        for node in self.formation.nodes:
            self.formation.tune(node)
        self.setup_seconds = time.monotonic() - started

    def _environment(self) -> dict[str, str]:
        return {
            **os.environ,
            # Every node listed; libpq tries them in turn and keeps the one taking writes.
            "DATABASE_URL": self.formation.url(DB_NAME, connect_timeout="2"),
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "false",
            "ALLOWED_HOSTS": HOST,
            "SECURE_SSL_REDIRECT": "false",
            **APP_SETTINGS,
            # Every recipient of the read-scale phases calls from 127.0.0.1.
            "RATE_LIMIT_TRACKING_PAGE": "100000/minute",
            "STATIC_ROOT": str(self.workdir / "static"),
        }

    def connect(self, dbname: str = DB_NAME) -> psycopg.Connection:
        return psycopg.connect(self.formation.url(dbname, connect_timeout="2"), autocommit=True)

    def reconnect(self) -> None:
        """The checks' own connection, to the primary of now."""
        with contextlib.suppress(psycopg.Error):
            self.db.close()
        self.db = self.connect()


# --------------------------------------------------------------------------- read scale


def transactions_by_node(cluster: HaCluster) -> dict[int, int]:
    """Committed and rolled-back transactions in the app's database, by node port."""
    counts = {}
    for node in cluster.formation.nodes:
        with psycopg.connect(cluster.formation.node_dsn(node, DB_NAME), autocommit=True) as conn:
            counts[node.port] = conn.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                [DB_NAME],
            ).fetchone()[0]
    return counts


def primary_port(cluster: HaCluster) -> int:
    return cluster.db.execute("SELECT current_setting('port')::int").fetchone()[0]


def serve_with_replicas(cluster: HaCluster, on: bool) -> None:
    """Restart the app instances with or without the read router's replica URL."""
    if on:
        cluster.env["DATABASE_REPLICA_URL"] = cluster.formation.url(
            DB_NAME, target_session_attrs="prefer-standby", connect_timeout="2"
        )
    else:
        cluster.env.pop("DATABASE_REPLICA_URL", None)
    for app in cluster.apps:
        app.stop()
        app.start()


def weigh_read_scale(cluster: HaCluster, seconds: int, users: int) -> tuple[list[Phase], list]:
    """The load on the primary alone, then with the standbys reading: the phases and lines."""
    phases, lines = [], []
    for on in (False, True):
        serve_with_replicas(cluster, on)
        label = "reads on the standbys" if on else "primary only"
        phase = Phase(f"read scale, {label}", seconds, 2)
        before = transactions_by_node(cluster)
        host = f"http://{HOST}:{cluster.balancer.port}"
        run_locust(phase, cluster, host, users + users // 2, ("Integrator", "Recipient"))
        after = transactions_by_node(cluster)
        done = {port: after[port] - before[port] for port in after}
        on_standbys = sum(n for port, n in done.items() if port != primary_port(cluster))
        total = {row["Name"]: row for row in phase.stats}.get("Aggregated", {})
        lines.append(
            f"{label}: {float(total.get('Requests/s', 0)):.1f} requests/s, p50 "
            f"{total.get('50%')} ms, p99 {total.get('99%')} ms; standbys served {on_standbys} "
            f"of {sum(done.values())} transactions ({on_standbys / max(sum(done.values()), 1):.0%})"
        )
        phases.append(phase)
    return phases, lines


# --------------------------------------------------------------------------- faults


class Failovers:
    """Kills the primary at the given moments of the load and measures each failover."""

    def __init__(self, cluster: HaCluster, seconds: float, fractions: list[float]) -> None:
        self.cluster, self.seconds, self.fractions = cluster, seconds, fractions
        self.log: list[str] = []
        self.runs: list[dict] = []
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Failovers:
        self.started = time.time()
        self.thread.start()
        return self

    def note(self, text: str) -> None:
        self.log.append(f"{time.time() - self.started:6.1f} s  {text}")
        print(f"  fault: {self.log[-1]}", flush=True)

    def _run(self) -> None:
        try:
            for fraction in self.fractions:
                time.sleep(max(0.0, self.started + fraction * self.seconds - time.time()))
                self.runs.append(self.kill_primary())
        except Exception as exc:  # reported as a failed invariant, not lost in a thread
            self.error = f"{type(exc).__name__}: {exc}"
            self.note(f"failover run stopped: {self.error}")

    def kill_primary(self) -> dict:
        formation = self.cluster.formation
        formation.wait_settled()
        victim = formation.primary()
        if victim is None:
            raise BenchError(f"no primary to kill: {formation.states()}")
        self.note(f"kill -9 the primary {victim.name} (postmaster {victim.postmaster_pid()})")
        killed = time.monotonic()
        formation.kill(victim)
        written, port = first_write(self.cluster, timeout=120)
        promoted = next(node for node in formation.nodes if node.port == port)
        self.note(f"first write after {written - killed:.1f} s, on {promoted.name}")
        formation.start_node(victim)
        # Catching up after pg_rewind takes the WAL of the load meanwhile: on two busy cores,
        # minutes.
        formation.wait_state(victim, STANDBY_STATES, timeout=300)
        rejoined = time.monotonic()
        self.note(f"{victim.name} rejoined as a standby ({rejoined - killed:.1f} s after the kill)")
        return {
            "killed": victim.name,
            "promoted": promoted.name,
            "failover_s": written - killed,
            "rejoin_s": rejoined - killed,
        }


def first_write(cluster: HaCluster, timeout: float) -> tuple[float, int]:
    """When a write first commits through the apps' multi-host URL (a probe table in the
    `postgres` database, not the app's), and the port of the node that took it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(psycopg.Error), cluster.connect("postgres") as db:
            db.execute("CREATE TABLE IF NOT EXISTS ha_probe (at timestamptz)")
            db.execute("INSERT INTO ha_probe VALUES (now())")
            return time.monotonic(), db.execute("SELECT inet_server_port()").fetchone()[0]
        time.sleep(0.1)
    raise BenchError(f"no write passed {timeout:.0f} s after the kill")


class LagSampler:
    """pg_stat_replication on the primary of the moment, twice a second: each standby's
    replay lag (seconds; none reported means caught up) and its distance in bytes."""

    def __init__(self, cluster: HaCluster) -> None:
        self.cluster = cluster
        self.samples: dict[str, list[tuple[float, int]]] = {"quorum": [], "async": []}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopping.wait(0.5):
            with contextlib.suppress(psycopg.Error):
                with self.cluster.connect("postgres") as db:
                    rows = db.execute(
                        """SELECT sync_state, coalesce(extract(epoch FROM replay_lag), 0),
                                  pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)
                           FROM pg_stat_replication"""
                    ).fetchall()
                for state, lag, distance in rows:
                    kind = "async" if state == "async" else "quorum"
                    self.samples[kind].append((float(lag), int(distance or 0)))

    def summary(self) -> list[str]:
        lines = []
        for kind, label in (("quorum", "synchronous standby"), ("async", "asynchronous replica")):
            samples = self.samples[kind]
            if len(samples) < 2:
                lines.append(f"  {label}: {len(samples)} samples")
                continue
            lags = statistics.quantiles([s[0] for s in samples], n=100)
            distances = statistics.quantiles([s[1] for s in samples], n=100)
            lines.append(
                f"  {label}: replay lag p50 {lags[49] * 1000:.0f} ms, p99 {lags[98] * 1000:.0f}"
                f" ms; behind by p50 {distances[49] / 1024:.0f} KiB, p99"
                f" {distances[98] / 1024:.0f} KiB ({len(samples)} samples)"
            )
        return lines


# --------------------------------------------------------------------------- checks


def check_ha(cluster: HaCluster, phase: Phase, failovers: Failovers) -> list[tuple[str, bool, str]]:
    """What a failover must keep, beyond bench/cluster.py's invariants."""
    batch_ids = sorted({b for ids in phase.records["keys"].values() for b in ids})
    rows = cluster.db.execute(
        """SELECT b.id::text, b.accepted,
                  (SELECT count(*) FROM billing_ledgerentry l WHERE l.batch_id = b.id)
           FROM orders_batch b WHERE b.id = ANY(%s::uuid[])""",
        (batch_ids,),
    ).fetchall()
    unbilled = [row[0] for row in rows if row[1] > 0 and row[2] == 0]
    results = [
        (
            "every batch answered 200 is stored, with its ledger entry",
            len(rows) == len(batch_ids) and not unbilled,
            f"{len(batch_ids)} batch ids answered 200, {len(rows)} in the database after the "
            f"failovers, {len(unbilled)} with accepted drops and no ledger entry",
        )
    ]
    states = cluster.formation.states()
    primaries = [name for name, (reported, _) in states.items() if reported in PRIMARY_STATES]
    results.append(
        (
            f"{len(failovers.fractions)} failover(s), the lost nodes back as standbys",
            failovers.error is None
            and len(failovers.runs) == len(failovers.fractions)
            and len(primaries) == 1,
            f"{len(failovers.runs)} done; one primary at the end: {primaries}; states {states}"
            + (f"; error: {failovers.error}" if failovers.error else ""),
        )
    )
    return results


def report(
    cluster: HaCluster, phase: Phase, failovers: Failovers, lag: LagSampler, scale: list[str]
) -> None:
    print("\n=== figures ===")
    print(f"formation (monitor + 3 nodes) up in {cluster.setup_seconds:.1f} s")
    if scale:
        print("the read router, same load on a fresh formation:")
        print("\n".join(f"  {line}" for line in scale))
    print("\n".join(figures(phase, cluster)))
    codes: Counter[int] = Counter()
    for name, n in phase.records["statuses"].items():
        codes[int(name.rsplit(" ", 1)[1])] += n
    for run in failovers.runs:
        print(
            f"failover: {run['killed']} killed, {run['promoted']} promoted; first write after "
            f"{run['failover_s']:.1f} s; {run['killed']} back as a standby after "
            f"{run['rejoin_s']:.1f} s"
        )
    print(
        f"requests refused during the switches: {codes[503]} answered 503 (retried with the "
        f"same key), {codes[0]} connections dropped, of {sum(codes.values())} answers"
    )
    print("replica lag under the load:")
    print("\n".join(lag.summary()))
    print("=== faults ===")
    print("\n".join(failovers.log))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="25 s, the primary killed once")
    parser.add_argument("--seconds", type=int, default=60, help="the loaded phase")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--scale-seconds", type=int, default=30, help="each read-scale phase")
    args = parser.parse_args(argv)
    seconds = 25 if args.short else args.seconds
    fractions = [0.3] if args.short else [0.2, 0.6]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with contextlib.ExitStack() as cleanup:
        cluster = HaCluster(cleanup, short=args.short)
        scale_phases, scale = [], []
        if not args.short:
            scale_phases, scale = weigh_read_scale(cluster, args.scale_seconds, args.users)
            print("\n".join(f"  read scale: {line}" for line in scale), flush=True)
        lag = LagSampler(cluster)
        lag.thread.start()
        cleanup.callback(lag.stopping.set)
        phase = Phase("two instances, primary killed", seconds, 2)
        failovers = Failovers(cluster, seconds, fractions).start()
        run_locust(phase, cluster, f"http://{HOST}:{cluster.balancer.port}", args.users)
        failovers.thread.join(timeout=720)
        lag.stopping.set()
        cluster.reconnect()
        print("load done", flush=True)
        cluster.wait_delivered(120)
        results = check_invariants(cluster, [*scale_phases, phase])
        results += check_ha(cluster, phase, failovers)
        report(cluster, phase, failovers, lag, scale)
        print("=== invariants ===")
        for name, ok, detail in results:
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        print(f"(whole run {time.monotonic() - started:.0f} s)")
        return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nHA RUN FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
