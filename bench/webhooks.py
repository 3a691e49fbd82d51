"""Webhook figures: end-to-end lag from a move to its delivery, and delivery throughput.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/webhooks.py [--quick] [--moves N] [--pace S] [--burst N]

As a user would run the service: a throwaway PostgreSQL cluster, ``manage.py migrate``,
``seed_demo`` and ``provision_business`` (bench/bulk.py's set-up, imported from there),
gunicorn serving ``config.wsgi``, and two ``manage.py db_worker`` processes started as
docs/deployment.md starts them (default 1 s poll interval, the periodic jobs' scheduler on).
A loopback receiver (tests/webhook_receiver.py) verifies every delivery's Standard Webhooks
signature. The endpoint is created with ``POST /api/v1/webhook-endpoints`` and subscribes to
``order.status_changed`` only; every process runs with WEBHOOK_ALLOW_PRIVATE_URLS=true.

1. **Lag**: single-drop moves (``POST /api/v1/sandbox/orders/advance``, PENDING → ASSIGNED,
   one event each) at a steady pace; for each, the time from the move's answer to the
   receiver's receipt of its delivery. Median, p95 (target < 2 s) and max.
2. **Throughput**: one call advancing ``--burst`` drops (one event each), then the time
   until the receiver has every distinct ``webhook-id``; deliveries per second.

Nothing is left running: workers, gunicorn, the receiver and the cluster are stopped on
success, failure, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
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
    Client,
    Gunicorn,
    coordinate_batch,
    machine,
    manage,
    post_batch,
    seed,
    start_database,
)
from tests.webhook_receiver import Received, SilentServer, WebhookReceiver  # noqa: E402

ADVANCE_PATH = "/api/v1/sandbox/orders/advance"
ENDPOINTS_PATH = "/api/v1/webhook-endpoints"
EVENT_TYPE = "order.status_changed"
WORKERS = 2
WARMUP_MOVES = 5  # delivered before the clock starts: connections opened, code imported
LAG_TARGET_S = 2.0  # the delivery bar: lag p95 under 2 s on an idle system
STOP_SECONDS = 20  # a worker's graceful stop (SIGTERM) waits for its running task


# --------------------------------------------------------------------------- workers


class Worker:
    """One `manage.py db_worker` as docs/deployment.md runs it, logging to a file.

    Like tests/workers.py's, without Django in this process: the scheduler is on (each
    worker runs it; the sweep runs every minute) and the poll interval is the default.
    """

    def __init__(self, env: dict[str, str], log_path: Path, index: int) -> None:
        self.log_path = log_path
        self.worker_id = f"bench-{index}-{secrets.token_hex(4)}"
        self.env = {**env, "LOG_LEVEL": "INFO"}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "db_worker",
                    "--worker-id",
                    self.worker_id,
                    "--no-reload",
                    "--no-startup-delay",
                ],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # stopped by us (SIGTERM), not by the terminal's Ctrl-C
            )

    def wait_started(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive:
                raise BenchError(f"db_worker {self.worker_id} exited at start:\n{self.log_tail()}")
            if "Starting worker" in self.log_text():
                return
            time.sleep(0.05)
        raise BenchError(f"db_worker {self.worker_id} did not start in {timeout:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:]) or "(no log)"


def wait_until_idle(db: psycopg.Connection, timeout: float = 30) -> None:
    """Until no task is due or running: the jobs the schedulers enqueue at start are done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = db.execute(
            "SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status = 'RUNNING'"
            " OR (status = 'READY' AND (run_after <= now() OR run_after >= '9999-01-01'))"
        ).fetchone()[0]
        if not busy:
            return
        time.sleep(0.1)
    raise BenchError(f"the workers were still busy after {timeout:.0f} s")


# --------------------------------------------------------------------------- receiving


def first_arrivals(receiver: WebhookReceiver) -> dict[str, Received]:
    """Each distinct webhook-id's first delivery (delivery is at least once)."""
    with receiver._lock:  # noqa: SLF001 (the receiver's own lock; `received` grows under it)
        received = list(receiver.received)
    first: dict[str, Received] = {}
    for r in received:
        first.setdefault(r.id, r)
    return first


def wait_for_ids(receiver: WebhookReceiver, count: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while len(first_arrivals(receiver)) < count:
        if time.monotonic() >= deadline:
            got = len(first_arrivals(receiver))
            raise BenchError(f"{what}: {got} of {count} deliveries arrived in {timeout:.0f} s")
        time.sleep(0.02)


# --------------------------------------------------------------------------- moves


def advance(client: Client, identifiers: list[str], what: str) -> tuple[float, float]:
    """Move the drops one step (PENDING → ASSIGNED); (sent, returned) on time.monotonic()."""
    body = orjson.dumps({"identifiers": identifiers})
    sent = time.monotonic()
    response = client.post(ADVANCE_PATH, body)
    returned = time.monotonic()
    if response.status != 200:
        raise BenchError(f"{what}: HTTP {response.status}\n{response.body[:2000].decode()}")
    orders = orjson.loads(response.body)["data"]["orders"]
    bad = [o for o in orders if o.get("error") or o["status"] != "ASSIGNED"]
    if len(orders) != len(identifiers) or bad:
        raise BenchError(f"{what}: {len(orders)} entries, {len(bad)} not moved: {bad[:3]}")
    return sent, returned


def create_drops(client: Client, n: int, what: str) -> list[str]:
    _, data = post_batch(client, what, coordinate_batch(n))
    return [o["client_order_id"] for o in data["orders"]]


def create_endpoint(client: Client, url: str) -> str:
    body = orjson.dumps({"url": url, "event_types": [EVENT_TYPE], "description": "bench"})
    response = client.post(ENDPOINTS_PATH, body)
    if response.status != 201:
        raise BenchError(f"creating the endpoint: HTTP {response.status}\n{response.body!r}")
    return orjson.loads(response.body)["data"]["secret"]


# --------------------------------------------------------------------------- figures


def p95(samples: list[float]) -> float:
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


@dataclass(frozen=True, slots=True)
class Lag:
    moves: int
    pace: float
    from_answer: list[float]  # receipt - the move's answer returned (s)
    from_event: list[float]  # receipt (wall clock) - the event's created_at (s)
    move_seconds: list[float]  # each move's own request time


@dataclass(frozen=True, slots=True)
class Burst:
    drops: int
    move_seconds: float  # the one advance call
    first_after: float  # its answer → first receipt
    last_after_sent: float  # its request sent → last distinct receipt
    last_after_answer: float  # its answer → last distinct receipt

    @property
    def per_second(self) -> float:
        return self.drops / self.last_after_sent


@dataclass(frozen=True, slots=True)
class Checks:
    received: int
    distinct: int
    verified: int
    answered_200: int
    deliveries: dict[str, tuple[int, int]]  # status -> (rows, attempts)
    send_tasks: dict[str, int]  # worker id -> send tasks it ran


@dataclass(frozen=True, slots=True)
class Drops:
    lag: list[str]  # WARMUP_MOVES + moves client_order_ids, PENDING
    burst: list[str]


def run(
    port: int,
    key: str,
    drops: Drops,
    receiver: WebhookReceiver,
    db: psycopg.Connection,
    cfg: Settings,
) -> tuple[Lag, Burst, Checks]:
    client = Client(port, key)
    try:
        wall_offset = time.time() - time.monotonic()

        # Lag: one move at a time, each request starting on the pace's clock.
        lag_ids = drops.lag
        for n, cid in enumerate(lag_ids[:WARMUP_MOVES]):
            advance(client, [cid], f"warm-up move {n}")
        wait_for_ids(receiver, WARMUP_MOVES, 30, "warm-up")
        wait_until_idle(db)
        print(f"  lag: {cfg.moves} single-drop moves, one every {cfg.pace:g} s ...", flush=True)
        answered: dict[str, float] = {}
        move_seconds: list[float] = []
        start = time.monotonic()
        for n, cid in enumerate(lag_ids[WARMUP_MOVES:]):
            with contextlib.suppress(ValueError):
                time.sleep(start + n * cfg.pace - time.monotonic())
            sent, returned = advance(client, [cid], f"move {n}")
            answered[cid] = returned
            move_seconds.append(returned - sent)
        wait_for_ids(receiver, WARMUP_MOVES + cfg.moves, 60, "lag")
        from_answer, from_event = [], []
        for r in first_arrivals(receiver).values():
            event = r.json
            cid = event["data"]["client_order_id"]
            if cid not in answered:
                continue  # a warm-up move
            from_answer.append(r.arrived - answered[cid])
            created = datetime.fromisoformat(event["created_at"].replace("Z", "+00:00"))
            from_event.append(r.arrived + wall_offset - created.timestamp())
        if len(from_answer) != cfg.moves:
            raise BenchError(f"lag: matched {len(from_answer)} deliveries to {cfg.moves} moves")
        lag = Lag(cfg.moves, cfg.pace, from_answer, from_event, move_seconds)
        wait_until_idle(db)

        # Throughput: one call moves every burst drop; then wait for all their deliveries.
        print(f"  throughput: one move of {cfg.burst} drops ...", flush=True)
        burst = burst_of(client, receiver, drops.burst, cfg.burst_timeout)

        time.sleep(0.5)  # a duplicate in flight would show now
        with receiver._lock:  # noqa: SLF001
            received = list(receiver.received)
        statuses = {
            status: (rows, attempts)
            for status, rows, attempts in db.execute(
                "SELECT status, count(*), sum(attempts) FROM events_delivery GROUP BY status"
            )
        }
        tasks = dict(
            db.execute(
                "SELECT worker_ids ->> -1, count(*) FROM django_tasks_database_dbtaskresult"
                " WHERE task_path LIKE %s GROUP BY 1 ORDER BY 1",
                ("%send_due_deliveries",),
            ).fetchall()
        )
        checks = Checks(
            received=len(received),
            distinct=len({r.id for r in received}),
            verified=sum(r.verified for r in received),
            answered_200=sum(r.answered == 200 for r in received),
            deliveries=statuses,
            send_tasks=tasks,
        )
        if checks.verified != checks.received or checks.answered_200 != checks.received:
            raise BenchError(f"some deliveries failed verification or were refused: {checks}")
        return lag, burst, checks
    finally:
        client.close()


def burst_of(client: Client, receiver: WebhookReceiver, ids: list[str], timeout: float) -> Burst:
    """One call moves every drop of `ids`; the figures once all their deliveries are in."""
    before = set(first_arrivals(receiver))
    sent, returned = advance(client, ids, f"burst of {len(ids)}")
    wait_for_ids(receiver, len(before) + len(ids), timeout, "burst")
    arrivals = {i: r for i, r in first_arrivals(receiver).items() if i not in before}
    cids = {r.json["data"]["client_order_id"] for r in arrivals.values()}
    if len(arrivals) != len(ids) or cids != set(ids):
        raise BenchError(
            f"burst: {len(arrivals)} new ids for {len(cids)} drops, {len(ids)} expected"
        )
    first = min(r.arrived for r in arrivals.values())
    last = max(r.arrived for r in arrivals.values())
    return Burst(len(ids), returned - sent, first - returned, last - sent, last - returned)


def lags_of(client: Client, receiver: WebhookReceiver, ids: list[str], pace: float) -> list[float]:
    """Single-drop moves every `pace` s; for each, its answer -> its delivery's receipt (s)."""
    answered: dict[str, float] = {}
    start = time.monotonic()
    for n, cid in enumerate(ids):
        with contextlib.suppress(ValueError):
            time.sleep(start + n * pace - time.monotonic())
        answered[cid] = advance(client, [cid], f"move {n}")[1]
    deadline = time.monotonic() + 60
    while True:
        got = {
            r.json["data"]["client_order_id"]: r.arrived
            for r in first_arrivals(receiver).values()
            if r.json["data"]["client_order_id"] in answered
        }
        if len(got) == len(ids):
            return [got[cid] - answered[cid] for cid in ids]
        if time.monotonic() >= deadline:
            raise BenchError(f"lag: {len(got)} of {len(ids)} deliveries arrived in 60 s")
        time.sleep(0.02)


def report(lag: Lag, burst: Burst, checks: Checks, cfg: Settings, db, elapsed: float) -> bool:
    ms = 1000
    p95_s = p95(lag.from_answer)
    passed = p95_s < LAG_TARGET_S
    median_ms = statistics.median(lag.from_answer) * ms
    verdict = f"< {LAG_TARGET_S * ms:.0f} ms  {'PASS' if passed else 'FAIL'}"
    from_event = f"{statistics.median(lag.from_event) * ms:.0f} / {p95(lag.from_event) * ms:.0f} ms"
    rows = [
        ("lag, move answered -> delivery received: median", f"{median_ms:.0f} ms", ""),
        ("lag, move answered -> delivery received: p95", f"{p95_s * ms:.0f} ms", verdict),
        ("lag, move answered -> delivery received: max", f"{max(lag.from_answer) * ms:.0f} ms", ""),
        ("lag, event created_at -> delivery received: median / p95", from_event, ""),
        (
            "single-drop move (the advance call itself): median",
            f"{statistics.median(lag.move_seconds) * ms:.1f} ms",
            "",
        ),
        (
            f"throughput, {burst.drops} events from one move: deliveries/s",
            f"{burst.per_second:,.0f}/s",
            "",
        ),
        (
            f"  the move of {burst.drops} drops (advance call)",
            f"{burst.move_seconds * ms:.0f} ms",
            "",
        ),
        ("  its answer -> first delivery", f"{burst.first_after * ms:.0f} ms", ""),
        ("  its request -> last delivery (the rate's time)", f"{burst.last_after_sent:.2f} s", ""),
        ("  its answer -> last delivery", f"{burst.last_after_answer:.2f} s", ""),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'figure':<{width}}  {'value':>12}  target")
    print(f"{'-' * width}  {'-' * 12}  {'-' * 18}")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>12}  {target}".rstrip())
    print()
    duplicates = checks.received - checks.distinct
    print(
        f"lag:        {lag.moves} moves (PENDING -> ASSIGNED, one drop each), one every"
        f" {lag.pace:g} s, after {WARMUP_MOVES} untimed warm-up moves"
    )
    print(
        f"checks:     {checks.received} requests received, {checks.distinct} distinct webhook-ids"
        f" ({duplicates} duplicate{'s' if duplicates != 1 else ''}), {checks.verified}"
        f" signatures verified (standardwebhooks), {checks.answered_200} answered 200"
    )
    deliveries = ", ".join(f"{s} {n} ({a} attempts)" for s, (n, a) in checks.deliveries.items())
    tasks = ", ".join(f"{w or '?'}: {n}" for w, n in checks.send_tasks.items())
    print(f"deliveries: {deliveries}")
    print(f"send tasks: {sum(checks.send_tasks.values())} run ({tasks})")
    print(
        f"workers:    {WORKERS} x manage.py db_worker (poll interval 1 s, scheduler on), one"
        " endpoint (one sender at a time per endpoint, events/delivery.py)\n"
        f"server:     gunicorn config.wsgi, {cfg.gunicorn_workers} sync workers, DEBUG off;"
        " receiver: threaded http.server on loopback (tests/webhook_receiver.py)"
    )
    for line in machine(db, cfg.load_before):
        print(line)
    print(f"bench time: {elapsed:.0f} s in all")
    return passed


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True, slots=True)
class Settings:
    moves: int
    pace: float
    burst: int
    burst_timeout: float
    gunicorn_workers: int
    load_before: tuple[float, float, float]
    hanging: bool = False


def parse_args(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, help="timed moves (default 200; --quick 50)")
    parser.add_argument("--pace", type=float, default=0.1, help="s between moves (default 0.1)")
    parser.add_argument("--burst", type=int, help="drops in one move (default 2000; --quick 500)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument(
        "--hanging",
        action="store_true",
        help="ONE worker: the lag and the burst alone, then beside 50 hanging endpoints",
    )
    args = parser.parse_args(argv)
    burst = args.burst or (500 if args.quick else 2000)
    return Settings(
        moves=args.moves or (50 if args.quick else 200),
        pace=args.pace,
        burst=burst,
        burst_timeout=max(30.0, burst / 50),
        gunicorn_workers=2,
        load_before=os.getloadavg(),
        hanging=args.hanging,
    )


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    if cfg.hanging:
        return hanging_case(cfg)
    began = time.monotonic()
    # A plain SIGTERM would skip the clean-up below; make it an exception instead.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as cleanup:
        workdir, cluster, env = start_database(
            cleanup,
            # The receiver is on loopback, over plain http.
            WEBHOOK_ALLOW_PRIVATE_URLS="true",
            # The burst moves all its drops in one call.
            MAX_TRACKING_IDENTIFIERS=str(max(1000, cfg.burst)),
        )
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        tenant = seed(env, db)

        server = Gunicorn(env, cfg.gunicorn_workers, workdir / "gunicorn.log")
        cleanup.callback(server.stop)
        server.start()

        receiver = WebhookReceiver()
        cleanup.callback(receiver.stop)

        # Every drop exists before the endpoint does: only the moves' events are delivered.
        client = Client(server.port, tenant.key)
        try:
            drops = Drops(
                lag=create_drops(client, WARMUP_MOVES + cfg.moves, "lag drops"),
                burst=create_drops(client, cfg.burst, "burst drops"),
            )
            receiver.trust(create_endpoint(client, receiver.url("/hooks")))
        finally:
            client.close()
        db.execute("ANALYZE")

        workers = [Worker(env, workdir / f"worker-{i}.log", i) for i in range(WORKERS)]
        for worker in workers:
            cleanup.callback(worker.stop)
            worker.launch()
        for worker in workers:
            worker.wait_started()
        wait_until_idle(db)
        print(
            f"gunicorn on {HOST}:{server.port}, {WORKERS} db_workers, receiver on"
            f" {receiver.url('/hooks')}; measuring",
            flush=True,
        )
        try:
            lag, burst, checks = run(server.port, tenant.key, drops, receiver, db, cfg)
        except BaseException:
            for worker in workers:
                print(
                    f"--- {worker.worker_id} log (tail) ---\n{worker.log_tail()}", file=sys.stderr
                )
            print(f"--- gunicorn log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            raise
        report(lag, burst, checks, cfg, db, time.monotonic() - began)
    return 0


# --------------------------------------------------------------------------- one worker, hanging


HOSTILE_BUSINESSES = 10
HOSTILE_ENDPOINTS = 5  # each: 50 endpoints that accept connections and never answer
LAG_MOVES = 40
LAG_PACE = 0.25


def hostile_endpoints(env: dict[str, str], port: int, silent: SilentServer) -> list[tuple]:
    """Ten businesses with five endpoints each on the silent server: (client, endpoint id)."""
    endpoints = []
    for b in range(HOSTILE_BUSINESSES):
        out = manage(env, "provision_business", "--name", f"Hostile {b}", "--email",
                     f"hostile{b}@example.com", "--json")  # fmt: skip
        client = Client(port, orjson.loads(out.strip().splitlines()[-1])["sandbox_key"])
        for e in range(HOSTILE_ENDPOINTS):
            body = orjson.dumps({"url": silent.url(f"/hooks/{b}/{e}"), "event_types": ["*"]})
            response = client.post(ENDPOINTS_PATH, body)
            if response.status != 201:
                raise BenchError(f"a hostile endpoint: HTTP {response.status} {response.body!r}")
            endpoints.append((client, orjson.loads(response.body)["data"]["id"]))
    return endpoints


class Pester(threading.Thread):
    """Asks for a test event to every hostile endpoint, round after round, until stopped."""

    def __init__(self, endpoints: list[tuple]) -> None:
        super().__init__(daemon=True)
        self.endpoints, self.asked, self.stopped = endpoints, 0, threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            for client, endpoint_id in self.endpoints:
                try:
                    client.post(f"{ENDPOINTS_PATH}/{endpoint_id}/test", b"{}")
                except (OSError, http.client.HTTPException):
                    client.conn.close()  # a connection the server dropped: a new one next time
                    continue
                self.asked += 1
            self.stopped.wait(1.0)


def hanging_case(cfg: Settings) -> int:
    """One worker: single moves' lag and a burst's deliveries/s to a fast receiver, alone,
    then the same beside 50 endpoints of 10 businesses that accept and never answer, asked
    for test events all along (a retry schedule of 1 s, 2 s: they are probed nearly all the
    time, the worst for the others)."""
    with contextlib.ExitStack() as cleanup:
        workdir, cluster, env = start_database(
            cleanup,
            WEBHOOK_ALLOW_PRIVATE_URLS="true",
            WEBHOOK_RETRY_SCHEDULE="1,2",
            MAX_TRACKING_IDENTIFIERS=str(max(1000, cfg.burst)),
        )
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        tenant = seed(env, db)
        server = Gunicorn(env, cfg.gunicorn_workers, workdir / "gunicorn.log")
        cleanup.callback(server.stop)
        server.start()
        receiver, silent = WebhookReceiver(), SilentServer()
        cleanup.callback(receiver.stop)
        cleanup.callback(silent.stop)
        client = Client(server.port, tenant.key)
        cleanup.callback(client.close)
        ids = {}
        for case in ("alone", "beside"):
            ids[f"lag {case}"] = create_drops(client, LAG_MOVES, f"lag drops {case}")
            ids[f"burst {case}"] = create_drops(client, cfg.burst, f"burst drops {case}")
        receiver.trust(create_endpoint(client, receiver.url("/hooks")))
        hostile = hostile_endpoints(env, server.port, silent)
        worker = Worker(env, workdir / "worker.log", 0)
        cleanup.callback(worker.stop)
        worker.launch()
        worker.wait_started()
        wait_until_idle(db)
        figures = {}
        for case in ("alone", "beside"):
            pester = Pester(hostile)
            if case == "beside":
                pester.start()
                deadline = time.monotonic() + 30
                while len(silent.accepted) < len(hostile) and time.monotonic() < deadline:
                    time.sleep(0.05)
            print(f"  {case}: {LAG_MOVES} single moves, then one move of {cfg.burst} ...")
            lag = lags_of(client, receiver, ids[f"lag {case}"], LAG_PACE)
            burst = burst_of(client, receiver, ids[f"burst {case}"], max(120.0, cfg.burst / 5))
            pester.stopped.set()
            figures[case] = (lag, burst, len(silent.accepted), pester.asked)
        report_hanging(figures, cfg, db)
    return 0


def report_hanging(figures: dict, cfg: Settings, db) -> None:
    print(f"\none db_worker, one fast endpoint; {cfg.burst}-drop burst, {LAG_MOVES} single moves")
    print(f"{'case':<8} {'deliveries/s':>12} {'lag median':>11} {'p95':>7} {'max':>7}  hostile")
    for case, (lag, burst, accepted, asked) in figures.items():
        print(
            f"{case:<8} {burst.per_second:>12,.0f} {statistics.median(lag) * 1000:>9.0f} ms"
            f" {p95(lag) * 1000:>4.0f} ms {max(lag) * 1000:>4.0f} ms"
            f"  {accepted} connections held, {asked} test events asked"
        )
    for line in machine(db, cfg.load_before):
        print(line)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
