"""Couriers' positions under load: N online couriers each posting one point every
15 s to POST /api/v1/courier/location, held through gunicorn on PostgreSQL, p99 < 50 ms.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/couriers.py [--quick] [--couriers N] [--duration S] [--warmup S]
                                       [--period S] [--senders N] [--workers W] [--trail-hours H]

The set-up is bench/bulk.py's (a throwaway PostgreSQL cluster, ``manage.py migrate``, gunicorn
with 2 sync workers serving ``config.wsgi``, DEBUG off). The couriers are rows inserted in
bulk, each with one bearer token whose digest is stored as ``POST /courier/session`` stores
it: the bench measures the location path, not sign-in (a password hash costs ~0.3 s).

The load is open-loop: each courier posts at a random phase and then every ``--period``
seconds, whatever the answers' latency, so a slow server shows up as latency, never as a
lower rate. A request's latency runs from the moment it was due, so a request that waited
for a free sender thread counts its wait too. The first ``--warmup`` seconds (one period
by default: every courier has a latest position by then, the steady state) are sent but
not measured. Afterwards the database must hold one latest position per courier that
posted, at the last point it sent, and exactly one trail point per accepted request.

Nothing is left running: gunicorn and the cluster are stopped on success, failure, Ctrl-C
or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import os
import queue
import random
import resource
import secrets
import signal
import string
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from bench.bulk import (  # noqa: E402
    DB_NAME,
    HOST,
    BenchError,
    Gunicorn,
    machine,
    manage,
    start_database,
)

LOCATION_PATH = "/api/v1/courier/location"
P99_TARGET_MS = 50.0  # the bar for 2,000 couriers posting every 15 s
# Around Phnom Penh (the demo area); each courier starts somewhere in it and drifts.
CENTRE = (11.5564, 104.9282)
_ALPHABET = string.ascii_letters + string.digits
# A courier token as couriers.services.issue_token makes it, and the digest it stores (this
# process has no Django, so the two lines are repeated; a mismatch would make every post 401).
TOKEN_PREFIX = "crr_"


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Settings:
    couriers: int
    period: float  # seconds between one courier's posts
    warmup: float  # sent, not measured
    duration: float  # measured
    senders: int  # client threads, each with its own connection
    workers: int  # gunicorn's
    trail_hours: float  # trail points stored before the load, as a running service holds
    load_before: tuple[float, float, float]

    @property
    def rate(self) -> float:
        return self.couriers / self.period


# --------------------------------------------------------------------------- set-up


def seed_couriers(db: psycopg.Connection, n: int) -> dict[int, str]:
    """n online couriers, each with one token; their tokens by courier id.

    The password is Django's "unusable" form: these couriers cannot sign in, and need not,
    since each holds the token a sign-in would have given. The digests are stored as
    couriers.services.issue_token stores them."""
    ids = [
        row[0]
        for row in db.execute(
            "INSERT INTO orders_driver (name, phone, is_sandbox_test_driver, active, password,"
            " online, online_changed_at)"
            " SELECT 'Courier ' || i, '+8551' || lpad(i::text, 7, '0'), false, true,"
            " '!bench' || i, true, now() FROM generate_series(1, %s) AS i RETURNING id",
            (n,),
        ).fetchall()
    ]
    tokens = {i: TOKEN_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(40)) for i in ids}
    with (
        db.cursor() as cur,
        cur.copy("COPY couriers_couriertoken (courier_id, digest, created_at) FROM STDIN") as copy,
    ):
        now = datetime.now(UTC)
        for courier_id, token in tokens.items():
            copy.write_row((courier_id, digest_of(token), now))
    return tokens


def preload_trail(db: psycopg.Connection, hours: float, period: float) -> int:
    """The trail a running service holds: `hours` of points every `period` s per courier,
    ending before now, each courier's latest position at its last one. How many points."""
    if hours <= 0:
        return 0
    print(f"storing {hours:g} h of trail before the load ...", flush=True)
    steps = int(hours * 3600 / period)
    db.execute(
        "INSERT INTO couriers_courierpoint (courier_id, lat, long, at, accuracy)"
        " SELECT d.id, 11.50 + random() * 0.1, 104.85 + random() * 0.1,"
        " now() - make_interval(secs => %s * s) - interval '1 minute', 10"
        " FROM orders_driver d, generate_series(1, %s) AS s",
        (period, steps),
    )
    db.execute(
        "INSERT INTO couriers_courierposition (courier_id, lat, long, at, accuracy)"
        " SELECT DISTINCT ON (courier_id) courier_id, lat, long, at, accuracy"
        " FROM couriers_courierpoint ORDER BY courier_id, at DESC"
    )
    db.execute("VACUUM ANALYZE couriers_courierpoint")
    db.execute("VACUUM ANALYZE couriers_courierposition")
    return db.execute("SELECT count(*) FROM couriers_courierpoint").fetchone()[0]


# --------------------------------------------------------------------------- load


@dataclass(frozen=True, slots=True)
class Job:
    due: float  # seconds after the start
    courier_id: int
    round: int  # the courier's how-manyth post

    @property
    def request_id(self) -> str:
        """Sent as X-Request-Id: the access log's line of this request carries it."""
        return f"bench-{self.courier_id}-{self.round}"


@dataclass(slots=True)
class Outcome:
    job: Job
    at: datetime  # the point's time, as sent
    status: int  # 0: no answer (the connection failed)
    stored: int
    latency: float  # seconds from due to the answer's last byte
    service: float  # seconds from sending to the answer's last byte
    detail: bytes = b""


def schedule(couriers: list[int], period: float, total: float, rng: random.Random) -> list[Job]:
    """Every courier's posts: a random phase, then one every `period` s, until `total` s."""
    jobs = []
    for courier_id in couriers:
        due, n = rng.uniform(0, period), 0
        while due < total:
            jobs.append(Job(due, courier_id, n))
            due, n = due + period, n + 1
    jobs.sort(key=lambda job: job.due)
    return jobs


@dataclass
class Load:
    """Sends the jobs on time from `senders` threads, one connection each."""

    port: int
    tokens: dict[int, str]
    jobs: list[Job]
    senders: int
    outcomes: list[Outcome] = field(default_factory=list)
    _queue: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    client_cpu: float = 0.0  # seconds of CPU this process spent sending

    def run(self) -> float:
        """Send everything; the start time (monotonic) every due is counted from."""
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        for job in self.jobs:
            self._queue.put(job)
        start = time.monotonic() + 0.5  # every thread is up and waiting by then
        threads = [
            threading.Thread(target=self._send_all, args=(start,), daemon=True)
            for _ in range(self.senders)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (
            cpu_after.ru_stime - cpu_before.ru_stime
        )
        return start

    def _send_all(self, start: float) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        rng = random.Random()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            delay = start + job.due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            outcome = self._send(conn, job, start, rng)
            if outcome.status == 0:
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
            with self._lock:
                self.outcomes.append(outcome)
        conn.close()

    def _send(
        self, conn: http.client.HTTPConnection, job: Job, start: float, rng: random.Random
    ) -> Outcome:
        # A courier drifts from its own starting point (seeded by its id) a little per post.
        place = random.Random(job.courier_id)
        lat = CENTRE[0] + place.uniform(-0.05, 0.05) + job.round * 1e-4
        long = CENTRE[1] + place.uniform(-0.05, 0.05) + rng.uniform(-1e-4, 1e-4)
        at = datetime.now(UTC)
        body = orjson.dumps(
            {
                "points": [
                    {"lat": lat, "long": long, "at": at.isoformat(), "accuracy": rng.randint(3, 30)}
                ]
            }
        )
        headers = {
            "Authorization": f"Bearer {self.tokens[job.courier_id]}",
            "Content-Type": "application/json",
            "X-Request-Id": job.request_id,
        }
        sent = time.monotonic()
        try:
            conn.request("POST", LOCATION_PATH, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            now = time.monotonic()
            return Outcome(job, at, 0, 0, now - start - job.due, now - sent, repr(exc).encode())
        now = time.monotonic()
        stored = orjson.loads(data)["data"]["stored"] if response.status == 200 else 0
        detail = b"" if response.status == 200 else data[:500]
        return Outcome(job, at, response.status, stored, now - start - job.due, now - sent, detail)


# --------------------------------------------------------------------------- figures


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank: the smallest value at or above p percent of the values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def spread(values: list[float]) -> str:
    ordered = sorted(v * 1000 for v in values)
    return (
        f"p50 {percentile(ordered, 50):.1f}, p90 {percentile(ordered, 90):.1f},"
        f" p99 {percentile(ordered, 99):.1f}, max {ordered[-1]:.1f} ms"
    )


def server_times(log: Path, measured: list[Outcome]) -> tuple[list[float], list[float]]:
    """The app's own time and its database time (seconds) for the measured requests, from
    gunicorn's log: the access log line each request ends with (core/middleware.py), found by
    the request id the bench sent. It leaves out gunicorn's accept and parse, and the COPY
    (the database timer sees statements through Django's cursor only)."""
    wanted = {o.job.request_id for o in measured}
    app, database = [], []
    for line in log.read_bytes().splitlines():
        if b'"api.access"' not in line:
            continue
        with contextlib.suppress(orjson.JSONDecodeError):
            entry = orjson.loads(line)
            if entry.get("request_id") in wanted:
                app.append(entry["duration_ms"] / 1000)
                database.append(entry["db_ms"] / 1000)
    return app, database


def check_database(db: psycopg.Connection, outcomes: list[Outcome], trail_before: int) -> list[str]:
    """What the answers said must be what is stored; the problems found, if any."""
    problems = []
    last: dict[int, datetime] = {}
    for o in outcomes:
        if (
            o.status == 200
            and o.stored
            and (o.job.courier_id not in last or o.at > last[o.job.courier_id])
        ):
            last[o.job.courier_id] = o.at
    positions = dict(
        db.execute(
            "SELECT courier_id, at FROM couriers_courierposition WHERE courier_id = ANY(%s)",
            (list(last),),
        ).fetchall()
    )
    if len(positions) != len(last):
        problems.append(f"{len(last)} couriers posted, {len(positions)} have a latest position")
    wrong = sum(1 for courier_id, at in last.items() if positions.get(courier_id) != at)
    if wrong:
        problems.append(f"{wrong} latest positions are not the last point their courier sent")
    accepted = sum(o.stored for o in outcomes)
    trail = db.execute("SELECT count(*) FROM couriers_courierpoint").fetchone()[0] - trail_before
    if trail != accepted:
        problems.append(f"the answers stored {accepted} points, the trail grew by {trail}")
    return problems


def report(
    load: Load, cfg: Settings, problems: list[str], db: psycopg.Connection, log: Path
) -> bool:
    """Print the figures; whether the p99 target was met."""
    outcomes = load.outcomes
    measured = [o for o in outcomes if o.job.due >= cfg.warmup]
    ok = [o for o in measured if o.status == 200]
    errors = [o for o in measured if o.status != 200]
    late = sum(1 for o in measured if o.latency - o.service > 0.005)
    latencies = sorted(o.latency * 1000 for o in ok)
    p99 = percentile(latencies, 99)
    passed = p99 < P99_TARGET_MS and not errors
    print()
    print(
        f"couriers:   {cfg.couriers} online, one point every {cfg.period:g} s each (target rate"
        f" {cfg.rate:.1f} requests/s); {cfg.warmup:g} s warm-up, then {cfg.duration:g} s measured"
    )
    print(
        f"rate:       {len(measured) / cfg.duration:.1f} requests/s achieved ({len(measured)}"
        f" requests in {cfg.duration:g} s; {len(outcomes)} sent in all)"
    )
    print(f"latency:    {spread([o.latency for o in ok])} (from the moment each was due)")
    print(f"service:    {spread([o.service for o in ok])} (from the moment each was sent)")
    app, database = server_times(log, ok)
    if app:
        print(
            f"in the app: {spread(app)} (its access log: middleware to response, {len(app)} lines)"
        )
        print(f"  database: {spread(database)} (statements through Django's cursor, no COPY)")
    print(f"late:       {late} requests started over 5 ms after they were due (no free sender)")
    print(f"errors:     {len(errors)}")
    for o in errors[:5]:
        print(f"            HTTP {o.status}: {o.detail[:300].decode(errors='replace')}")
    print(
        "database:   "
        + ("; ".join(problems) if problems else "OK (one latest position per courier that posted,"
           " at its last point; the trail grew by exactly the points the answers stored)")
    )  # fmt: skip
    print(
        f"target:     p99 {p99:.1f} ms (target < {P99_TARGET_MS:g} ms, no errors):"
        f" {'PASS' if passed else 'FAIL'}"
    )
    print(
        f"server:     gunicorn config.wsgi, {cfg.workers} sync workers, DEBUG off; the client"
        f" ({cfg.senders} sender threads) runs on the same CPUs and used"
        f" {load.client_cpu / (cfg.warmup + cfg.duration):.0%} of one"
    )
    for line in machine(db, cfg.load_before):
        print(line)
    print(f"load after: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min)")
    return passed


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--couriers", type=int, default=2000, help="online couriers (default 2000)")
    parser.add_argument("--period", type=float, default=15.0, help="seconds between posts (15)")
    parser.add_argument("--duration", type=float, help="measured seconds (default 60; --quick 10)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds first (default: a period)")
    parser.add_argument("--senders", type=int, default=32, help="client threads (default 32)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    parser.add_argument("--trail-hours", type=float, default=0, help="trail stored first (0)")
    parser.add_argument("--quick", action="store_true", help="a short run: 10 s measured")
    args = parser.parse_args(argv)
    return Settings(
        couriers=args.couriers,
        period=args.period,
        warmup=args.warmup if args.warmup is not None else args.period,
        duration=args.duration or (10.0 if args.quick else 60.0),
        senders=args.senders,
        workers=args.workers,
        trail_hours=args.trail_hours,
        load_before=os.getloadavg(),
    )


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    # A plain SIGTERM would skip the clean-up below; make it an exception instead.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as cleanup:
        workdir, cluster, env = start_database(cleanup)
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        manage(env, "migrate", "--noinput", "-v0")
        tokens = seed_couriers(db, cfg.couriers)
        preload_trail(db, cfg.trail_hours, cfg.period)
        trail_before = db.execute("SELECT count(*) FROM couriers_courierpoint").fetchone()[0]

        server = Gunicorn(env, cfg.workers, workdir / "gunicorn.log")
        cleanup.callback(server.stop)
        server.start()
        jobs = schedule(list(tokens), cfg.period, cfg.warmup + cfg.duration, random.Random(31))
        print(
            f"gunicorn on {HOST}:{server.port} ({cfg.workers} workers); {len(jobs)} posts from"
            f" {cfg.couriers} couriers over {cfg.warmup + cfg.duration:g} s"
            f" ({cfg.warmup:g} s unmeasured), {trail_before:,} trail points stored before",
            flush=True,
        )
        load = Load(server.port, tokens, jobs, cfg.senders)
        try:
            load.run()
        except BaseException:
            print(f"--- gunicorn log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            raise
        problems = check_database(db, load.outcomes, trail_before)
        report(load, cfg, problems, db, server.log_path)
        errors = [o for o in load.outcomes if o.status != 200]
        if problems or errors:
            raise BenchError(
                f"{len(errors)} failed requests, database: {'; '.join(problems) or 'OK'}"
                f"\n--- gunicorn log (tail) ---\n{server.log_tail()}"
            )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
