"""End-to-end figures for POST /api/v1/orders/bulk, measured against a database floor.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/bulk.py [--quick] [--runs N] [--duration S] [--workers W]

Everything runs as a user would run it: a throwaway PostgreSQL cluster, the real
``manage.py`` commands to migrate and seed, and gunicorn serving ``config.wsgi``.
Requests go over HTTP with keep-alive from this process; bodies are serialised before
the clock starts, so the figures are the server's time plus the loopback round trip.

The *floor* is what the database alone needs for the rows a 1000-drop batch writes
(raw COPY in one transaction), measured in the same run on the same database, so the
ratio "1000-drop batch / floor" says how much the application adds on this machine.

Nothing is left behind: gunicorn and the cluster are stopped in every case.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.metadata
import os
import platform
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from tests.pgcluster import PostgresCluster  # noqa: E402

HOST = "127.0.0.1"
DB_NAME = "bench"
ENVIRONMENT = "sandbox"  # the bench tenant's sandbox key and wallet
BULK_PATH = "/api/v1/orders/bulk"
TRACKING_PATH = "/api/v1/orders/tracking"
ORDERS_PATH = "/api/v1/orders"

# Inside the demo "Phnom Penh" polygon (lon 104.80–105.00, lat 11.45–11.70).
SHOP = {"lat": 11.5564, "long": 104.9282}
HOME = {"lat": 11.5696, "long": 104.9210}
PHONE = "+85512345678"
RECIPIENT_PHONE = "+85512345679"
PLACE_COUNT = 50  # distinct addresses for the address-only case
PLACE_CITY = "Phnom Penh"

# Bodies are serialised once with this marker in every id, then made unique per request
# with one bytes.replace(): cheap enough to keep the client out of the measurement.
TAG = b"@TAG@"


class BenchError(RuntimeError):
    """Something prevents a trustworthy figure; abort loudly with the evidence."""


# --------------------------------------------------------------------------- set-up


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def manage(env: dict[str, str], *args: str, root: Path = ROOT) -> str:
    """Run a management command with the bench environment; its stdout, or fail loudly."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# Run inside `manage.py shell -c`: make the demo area open all day (so the bench works at
# any hour) and add the gazetteer places that the address-only case geocodes.
SEED_SNIPPET = f"""
from datetime import time
from geo.models import OpeningHours, Place
widened = OpeningHours.objects.filter(area__name="Phnom Penh").update(
    opens=time(0), closes=time(23, 59, 59, 999999)
)
assert widened == 7, f"expected 7 opening-hours rows, widened {{widened}}"
Place.objects.bulk_create([
    Place(name=f"Bench Place {{i:02d}}", city="{PLACE_CITY}",
          lat=11.50 + (i % 10) * 0.015, long=104.85 + (i // 10) * 0.025)
    for i in range({PLACE_COUNT})
])
print("seeded")
"""


@dataclass(frozen=True, slots=True)
class Tenant:
    business_id: str
    key: str
    wallet_id: int


def seed(env: dict[str, str], db: psycopg.Connection, root: Path = ROOT) -> Tenant:
    """Migrate and seed the database of `env` with the code checked out at `root`."""
    manage(env, "migrate", "--noinput", "-v0", root=root)
    manage(env, "seed_demo", root=root)
    out = manage(
        env,
        "provision_business",
        "--name",
        "Bench",
        "--email",
        "bench@example.com",
        "--sandbox-balance",
        "100000000",
        "--json",
        root=root,
    )
    provisioned = orjson.loads(out.strip().splitlines()[-1])
    manage(env, "shell", "-c", SEED_SNIPPET, root=root)
    row = db.execute(
        "SELECT id FROM billing_wallet WHERE business_id = %s AND environment = %s",
        (provisioned["business_id"], ENVIRONMENT),
    ).fetchone()
    if row is None:
        raise BenchError("the provisioned business has no sandbox wallet")
    return Tenant(provisioned["business_id"], provisioned["sandbox_key"], row[0])


class Gunicorn:
    """gunicorn serving config.wsgi as `make run` does, on a free port, logging to a file;
    the code is the checkout at `root` (bench/ab.py serves two)."""

    def __init__(
        self,
        env: dict[str, str],
        workers: int,
        log_path: Path,
        root: Path = ROOT,
        config: Path | None = None,
    ) -> None:
        self.env, self.workers, self.log_path, self.root = env, workers, log_path, root
        self.config = config or root / "gunicorn.conf.py"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = Path(sys.executable).parent / "gunicorn"
        with self.log_path.open("ab") as log:  # a restart appends
            self.process = subprocess.Popen(
                [
                    str(binary),
                    "-c",
                    str(self.config),
                    "config.wsgi",
                    "--bind",
                    f"{HOST}:{self.port}",
                    "--workers",
                    str(self.workers),
                    # gunicorn's control socket defaults to one shared path in $HOME;
                    # the bench must not take it from a `make run` on the same machine.
                    "--no-control-socket",
                ],
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own process group: the master and its workers can be killed as one
                # (bench/cluster.py kills an instance the way a host dies).
                start_new_session=True,
            )
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 60) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"gunicorn exited early:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                conn = http.client.HTTPConnection(HOST, self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            time.sleep(0.1)
        raise BenchError(f"gunicorn did not answer /healthz in {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        # SIGTERM is gunicorn's graceful stop; the master reaps its workers.
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------------------- bodies


@dataclass(frozen=True, slots=True)
class Template:
    """A pre-serialised body whose ids all carry TAG; fresh() makes them unique."""

    raw: bytes
    drops: int
    # The drop columns this body fills beyond a bare drop's, with a value as stored: the
    # bare floor stores them too, since it stores every column a drop row of the call fills.
    columns: tuple[tuple[str, Any], ...] = ()

    def fresh(self) -> bytes:
        return self.raw.replace(TAG, uuid.uuid4().hex.encode())


def _batch(dropoff: list[dict[str, Any]]) -> Template:
    body = {
        "client_batch_id": f"bench-{TAG.decode()}",
        "orders": [{"pickup": {"name": "Bench shop", "phone": PHONE, **SHOP}, "dropoff": dropoff}],
    }
    return Template(orjson.dumps(body), len(dropoff))


def coordinate_batch(n: int) -> Template:
    """One pickup group with n coordinate drops, spread a little around HOME."""
    return _batch(
        [
            {
                "client_order_id": f"{TAG.decode()}-{i:05d}",
                "dropoff": {
                    "name": "Recipient",
                    "phone": RECIPIENT_PHONE,
                    "lat": round(HOME["lat"] + (i % 100) * 1e-4, 6),
                    "long": round(HOME["long"] + (i // 100) * 1e-4, 6),
                },
            }
            for i in range(n)
        ]
    )


def committed_batch(n: int) -> Template:
    """coordinate_batch with a drop-off window and notes on every drop: a window
    that can be kept, from an hour to three hours from now, so every drop is accepted."""
    now = datetime.now(UTC)
    window = {
        "start": (now + timedelta(hours=1)).isoformat(),
        "end": (now + timedelta(hours=3)).isoformat(),
    }
    body = orjson.loads(coordinate_batch(n).raw)
    for drop in body["orders"][0]["dropoff"]:
        drop["dropoff_window"] = window
        drop["notes"] = NOTES
    start, end = now + timedelta(hours=1), now + timedelta(hours=3)
    columns = (
        ("window_start", start), ("window_end", end), ("window_status", "on_track"),
        ("window_risk_at", end - timedelta(minutes=20)), ("notes", NOTES),
    )  # fmt: skip
    return Template(orjson.dumps(body), n, columns)


NOTES = "Gate code 42, call on arrival; the blue door beside the pharmacy."


def carried_batch(n: int) -> Template:
    """coordinate_batch with a parcel and cash on delivery on every drop, on a van:
    n half-kilo parcels stay within its load, so every drop is accepted."""
    body = orjson.loads(coordinate_batch(n).raw)
    body["orders"][0]["vehicle"] = "van"
    for drop in body["orders"][0]["dropoff"]:
        drop["parcel"] = {"size": "M", "weight_kg": 0.5, "description": "Shoes", "value": "40.00"}
        drop["cod"] = {"amount": "12.50"}
    columns = (
        ("parcel_size", "M"), ("parcel_weight_kg", Decimal("0.500")),
        ("parcel_description", "Shoes"), ("parcel_value", Decimal("40.00")),
        ("cod_amount", Decimal("12.50")), ("cod_fee", Decimal("0.25")),
    )  # fmt: skip
    return Template(orjson.dumps(body), n, columns)


def address_batch(n: int) -> Template:
    """One pickup group (with coordinates) and n address-only drops over PLACE_COUNT places."""
    return _batch(
        [
            {
                "client_order_id": f"{TAG.decode()}-{i:05d}",
                "dropoff": {
                    "name": "Recipient",
                    "phone": RECIPIENT_PHONE,
                    "address": {
                        "complete_address": f"Bench Place {i % PLACE_COUNT:02d}",
                        "city": PLACE_CITY,
                    },
                },
            }
            for i in range(n)
        ]
    )


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    seconds: float
    closed: bool  # the server asked to close the connection (no keep-alive)


class Client:
    """One API client: one keep-alive connection, reopened by http.client if the server closes."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=300)
        self.auth = f"Bearer {key}"

    def post(self, path: str, body: bytes, idempotency_key: str | None = None) -> Response:
        headers = {"Authorization": self.auth, "Content-Type": "application/json"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        start = time.perf_counter()
        self.conn.request("POST", path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        seconds = time.perf_counter() - start
        return Response(response.status, response.headers, data, seconds, response.will_close)

    def get(self, path: str) -> Response:
        start = time.perf_counter()
        self.conn.request("GET", path, headers={"Authorization": self.auth})
        response = self.conn.getresponse()
        data = response.read()
        seconds = time.perf_counter() - start
        return Response(response.status, response.headers, data, seconds, response.will_close)

    def close(self) -> None:
        self.conn.close()


def _fail(what: str, response: Response, why: str) -> BenchError:
    excerpt = response.body[:4000].decode(errors="replace")
    return BenchError(f"{what}: {why} (HTTP {response.status})\n{excerpt}")


def check_batch(what: str, response: Response, sent: int) -> dict[str, Any]:
    """Every drop must be accepted: a rejection would make the figure meaningless."""
    if response.status != 200:
        raise _fail(what, response, "expected 200")
    data = orjson.loads(response.body)["data"]
    counts = data["counts"]
    if counts["total"] != sent or counts["accepted"] != sent:
        rejected = [o for o in data["orders"] if o["status"] != "accepted"]
        reasons = Counter(o.get("failure_reason") for o in rejected)
        raise _fail(what, response, f"sent {sent}, counts {counts}, rejections {dict(reasons)}")
    return data


def post_batch(client: Client, what: str, template: Template) -> tuple[Response, dict[str, Any]]:
    response = client.post(BULK_PATH, template.fresh(), str(uuid.uuid4()))
    return response, check_batch(what, response, template.drops)


# --------------------------------------------------------------------------- figures


@dataclass(frozen=True, slots=True)
class Figure:
    case: str
    samples: list[float]  # seconds

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples) * 1000

    @property
    def p90_ms(self) -> float:
        if len(self.samples) < 2:
            return self.samples[0] * 1000
        return statistics.quantiles(self.samples, n=10, method="inclusive")[-1] * 1000


def measure(case: str, runs: int, warmups: int, one_run: Callable[[], float]) -> Figure:
    """Warm up (connections, caches, imports in both workers), then keep `runs` timings."""
    for _ in range(warmups):
        one_run()
    samples = [one_run() for _ in range(runs)]
    print(f"  {case}: median {statistics.median(samples) * 1000:.1f} ms", flush=True)
    return Figure(case, samples)


def floor_run(db: psycopg.Connection, tenant: Tenant, response_body: bytes, n: int) -> float:
    """What our own schema costs the database for a batch's rows, rolled back afterwards.

    The rows a batch writes now, into the real tables with all their indexes, the drops'
    owner check and the foreign keys (SET CONSTRAINTS ALL IMMEDIATE runs the deferred ones,
    as a commit would): the batch row (a response of the real size), one order, n drops
    COPYed, one ledger debit for the batch and the wallet update. Rows are encoded before
    the clock starts: this is the database's work only. Beside the bare floor it shows how
    much of the gap is the schema (indexes, checks) and how much the application.
    """
    now = datetime.now(UTC)
    tag = uuid.uuid4().hex
    batch_id, order_id = uuid.uuid4(), uuid.uuid4()
    wallet = db.execute("SELECT balance FROM billing_wallet WHERE id = %s", (tenant.wallet_id,))
    balance = wallet.fetchone()[0]
    price = Decimal("2.80")
    drops = "".join(
        f"{drop_id}\t{order_id}\t{batch_id}\t{tenant.business_id}\t{ENVIRONMENT}"
        f"\tfloor-{tag}-{i:05d}\t\\N\tRecipient\t{RECIPIENT_PHONE}\t{HOME['lat']!r}"
        f"\t{HOME['long']!r}\t\\N\tf\tPENDING\t{price}\tUSD\t{now.isoformat()}"
        f"\t{now.isoformat()}\t\\N\t\\N\t\\N\n"
        for i, drop_id in enumerate(uuid.uuid4() for _ in range(n))
    ).encode()

    start = time.perf_counter()
    with db.transaction(force_rollback=True), db.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute(
            "INSERT INTO orders_batch (id, business_id, environment, client_batch_id, fingerprint,"
            " status, total, accepted, rejected, response, created_at)"
            " VALUES (%s, %s, %s, %s, %s, 'COMPLETED', %s, %s, 0, %s, %s)",
            (batch_id, tenant.business_id, ENVIRONMENT, f"floor-{tag}", "0" * 64, n, n,
             response_body, now),
        )  # fmt: skip
        cur.execute(
            "INSERT INTO orders_order (id, batch_id, business_id, environment, pickup_name,"
            " pickup_phone, pickup_lat, pickup_long, pickup_resolved, created_at)"
            " VALUES (%s, %s, %s, %s, 'Bench shop', %s, %s, %s, false, %s)",
            (order_id, batch_id, tenant.business_id, ENVIRONMENT, PHONE, SHOP["lat"],
             SHOP["long"], now),
        )  # fmt: skip
        with cur.copy(
            "COPY orders_drop (id, order_id, batch_id, business_id, environment, client_order_id,"
            " external_waybill, recipient_name, recipient_phone, lat, long, address, resolved,"
            " status, price, currency, created_at, updated_at, dropoff_pin,"
            " sandbox_scenario, scenario_next_at) FROM STDIN"
        ) as copy:
            copy.write(drops)
        cur.execute(
            "INSERT INTO billing_ledgerentry (wallet_id, kind, amount, balance_after, batch_id,"
            " note, created_at) VALUES (%s, 'ORDER_DEBIT', %s, %s, %s, %s, %s)",
            (tenant.wallet_id, -price * n, balance - price * n, batch_id, f"{n} drops", now),
        )
        cur.execute(
            "UPDATE billing_wallet SET balance = %s, updated_at = %s WHERE id = %s",
            (balance - price * n, now, tenant.wallet_id),
        )
    return time.perf_counter() - start


# The bare floor's tables: the columns of the real ones and nothing else. CREATE TABLE AS
# copies no constraint at all (no key, no index, no foreign key, not even NOT NULL).
BARE_TABLES = {
    "bare_drop": "orders_drop",
    "bare_ledger": "billing_ledgerentry",
    "bare_batch": "orders_batch",
}


def create_bare_tables(db: psycopg.Connection) -> None:
    for bare, real in BARE_TABLES.items():
        db.execute(f"CREATE TABLE {bare} AS SELECT * FROM {real} WITH NO DATA")
    # The cheapest way to store the response is part of the floor too: the same TOAST
    # compression as the real column (lz4, orders migration 0009), which CREATE TABLE AS
    # does not copy.
    method = db.execute(
        "SELECT attcompression FROM pg_attribute"
        " WHERE attrelid = 'orders_batch'::regclass AND attname = 'response'"
    ).fetchone()[0]
    if method == "l":
        db.execute("ALTER TABLE bare_batch ALTER COLUMN response SET COMPRESSION lz4")


def bare_floor_run(
    db: psycopg.Connection,
    tenant: Tenant,
    response_body: bytes,
    n: int,
    columns: tuple[tuple[str, Any], ...] = (),
) -> float:
    """The physical floor of the bulk bench's ratio: what storing a batch's rows costs the
    database alone.

    One transaction that COPYs n drop-sized rows (every column a drop row of the bulk call
    fills, same values) and n ledger-sized rows into tables with no constraint, inserts the
    batch row (its stored response of the real size), and commits. No validation, no HTTP,
    no index. `columns` are the drop columns a richer body fills too (a window and notes; a
    parcel and COD: Template.columns), stored with the same values. Rows are built as
    tuples before the clock starts; their COPY encoding is
    timed, as psycopg does it for the application too. The tables are emptied after the
    clock stops.
    """
    now = datetime.now(UTC)
    tag = uuid.uuid4().hex
    batch_id, order_id = uuid.uuid4(), uuid.uuid4()
    price, balance = Decimal("2.80"), Decimal("100000.00")
    drop_ids = [uuid.uuid4() for _ in range(n)]
    extra = [value for _, value in columns]
    drops = [
        (
            drop_id, order_id, batch_id, tenant.business_id, ENVIRONMENT, f"bare-{tag}-{i:05d}",
            None, "Recipient", RECIPIENT_PHONE, HOME["lat"], HOME["long"], None, False,
            "PENDING", price, "USD", now, now, None, None, None, *extra,
        )
        for i, drop_id in enumerate(drop_ids)
    ]  # fmt: skip
    ledger = [
        (i + 1, tenant.wallet_id, "ORDER_DEBIT", -price, balance - price * (i + 1), drop_id, None,
         "", now)
        for i, drop_id in enumerate(drop_ids)
    ]  # fmt: skip

    start = time.perf_counter()
    with db.transaction(), db.cursor() as cur:
        cur.execute(
            "INSERT INTO bare_batch (id, business_id, environment, client_batch_id, fingerprint,"
            " status, total, accepted, rejected, response, created_at)"
            " VALUES (%s, %s, %s, %s, %s, 'COMPLETED', %s, %s, 0, %s, %s)",
            (batch_id, tenant.business_id, ENVIRONMENT, f"bare-{tag}", "0" * 64, n, n,
             response_body, now),
        )  # fmt: skip
        with cur.copy(
            "COPY bare_drop (id, order_id, batch_id, business_id, environment, client_order_id,"
            " external_waybill, recipient_name, recipient_phone, lat, long, address, resolved,"
            " status, price, currency, created_at, updated_at, dropoff_pin,"
            f" sandbox_scenario, scenario_next_at{''.join(f', {c}' for c, _ in columns)})"
            " FROM STDIN"
        ) as copy:
            for row in drops:
                copy.write_row(row)
        with cur.copy(
            "COPY bare_ledger (id, wallet_id, kind, amount, balance_after, drop_id, actor_id,"
            " note, created_at) FROM STDIN"
        ) as copy:
            for row in ledger:
                copy.write_row(row)
    seconds = time.perf_counter() - start
    db.execute(f"TRUNCATE {', '.join(BARE_TABLES)}")
    return seconds


@dataclass(frozen=True, slots=True)
class Throughput:
    clients: int
    batch_size: int
    seconds: float
    batches: int
    accepted: int

    @property
    def per_second(self) -> float:
        return self.accepted / self.seconds


def throughput(
    port: int, key: str, clients: int, duration: float, template: Template
) -> Throughput:
    """`clients` threads, one connection each, sending batches back to back until the deadline.

    All clients use the same tenant, so their batches also contend for its account lock.
    """
    stop = threading.Event()
    accepted = [0] * clients
    batches = [0] * clients
    errors: list[BaseException] = []

    def work(index: int) -> None:
        client = Client(port, key)
        try:
            while not stop.is_set():
                post_batch(client, f"throughput client {index}", template)
                accepted[index] += template.drops
                batches[index] += 1
        except BaseException as exc:  # reported by the main thread, which re-raises it
            errors.append(exc)
            stop.set()
        finally:
            client.close()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(duration)
    stop.set()
    for thread in threads:  # each finishes its request in flight; that time counts too
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise errors[0]
    return Throughput(clients, template.drops, seconds, sum(batches), sum(accepted))


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True, slots=True)
class Settings:
    runs: int
    warmups: int
    big_runs: int  # 5000-drop batches take long; fewer runs
    duration: float
    workers: int
    clients: int
    load_before: tuple[float, float, float]  # the machine's load average before we started


def run_cases(port: int, tenant: Tenant, db: psycopg.Connection, cfg: Settings) -> None:
    client = Client(port, tenant.key)
    figures: list[Figure] = []
    keep_alive: list[bool] = []

    def bulk(template: Template, before: Callable[[], None] | None = None) -> Callable[[], float]:
        def one_run() -> float:
            if before is not None:
                before()
            response, _ = post_batch(client, f"bulk of {template.drops}", template)
            keep_alive.append(not response.closed)
            return response.seconds

        return one_run

    def beside_the_bare_floor(
        label: str, template: Template | None = None
    ) -> tuple[Figure, Figure]:
        """The bulk bench's ratio: a 1000-drop batch and the bare floor, one after the other, in
        alternation, so that both see the same moment of a noisy machine and the same
        database. The floor's batch row carries a stored answer of the real size."""
        template = template or coordinate_batch(1000)
        answer, _ = post_batch(client, "bulk of 1000 (the floor's answer size)", template)
        paired = bulk(template)
        columns = template.columns

        def floor() -> float:
            return bare_floor_run(db, tenant, answer.body, 1000, columns)

        for _ in range(cfg.warmups):
            paired(), floor()
        pairs = [(paired(), floor()) for _ in range(cfg.runs)]
        batch, bare = (
            Figure(label, [p[0] for p in pairs]),
            Figure("bare floor", [p[1] for p in pairs]),
        )
        print(
            f"  {label}: median {batch.median_ms:.1f} ms; bare floor beside it"
            f" {bare.median_ms:.1f} ms",
            flush=True,
        )
        return batch, bare

    create_bare_tables(db)
    pairs: dict[str, tuple[Figure, Figure]] = {}
    for n in (1, 100, 1000, 5000):
        runs = cfg.big_runs if n >= 5000 else cfg.runs
        label = f"bulk, {n} coordinate drop{'s' if n > 1 else ''}"
        if n == 1000:
            pairs["early"] = beside_the_bare_floor(label)
            figures.append(pairs["early"][0])
            # The same batch with a window and notes on every drop, beside a bare
            # floor that stores those columns too (until 2026-11-25 it stored a bare batch's
            # columns only: docs/performance.md gives both).
            pairs["commitments"] = beside_the_bare_floor(
                "bulk, 1000 coordinate drops with a window and notes", committed_batch(1000)
            )
            figures.append(pairs["commitments"][0])
            # A parcel and cash on delivery on every drop, on a van.
            pairs["parcels"] = beside_the_bare_floor(
                "bulk, 1000 coordinate drops with a parcel and COD", carried_batch(1000)
            )
            figures.append(pairs["parcels"][0])
            continue
        figures.append(measure(label, runs, cfg.warmups, bulk(coordinate_batch(n))))

    def forget_geocodes() -> None:
        db.execute("DELETE FROM geo_geocoderesult")

    addresses = address_batch(1000)
    figures.append(
        measure(
            f"bulk, 1000 address-only drops ({PLACE_COUNT} places), cold geocode cache",
            cfg.runs,
            cfg.warmups,
            bulk(addresses, before=forget_geocodes),
        )
    )
    figures.append(
        measure(
            f"bulk, 1000 address-only drops ({PLACE_COUNT} places), warm geocode cache",
            cfg.runs,
            cfg.warmups,
            bulk(addresses),
        )
    )

    # One more 1000-drop batch to track, replay, and size the floor's stored response.
    template = coordinate_batch(1000)
    body, key = template.fresh(), str(uuid.uuid4())
    first = client.post(BULK_PATH, body, key)
    data = check_batch("bulk of 1000 (to track and replay)", first, 1000)
    identifiers = [o["client_order_id"] for o in data["orders"]]

    tracking_body = orjson.dumps({"identifiers": identifiers})
    # The writes above loaded ~100k drops in seconds; refresh the planner's statistics as
    # autovacuum would on a live database, so reads are planned for the data they meet.
    db.execute("ANALYZE")

    def track() -> float:
        response = client.post(TRACKING_PATH, tracking_body)
        if response.status != 200:
            raise _fail("tracking 1000", response, "expected 200")
        found = orjson.loads(response.body)["data"]["orders"]
        missing = sum(1 for o in found if o["status"] == "NOT_FOUND")
        if len(found) != len(identifiers) or missing:
            raise _fail("tracking 1000", response, f"{len(found)} entries, {missing} not found")
        return response.seconds

    figures.append(measure("tracking, 1000 identifiers", cfg.runs, cfg.warmups, track))

    def list_page() -> float:
        # The newest page of an account that now holds ~100k drops (target: < 30 ms).
        response = client.get(f"{ORDERS_PATH}?limit=100")
        if response.status != 200:
            raise _fail("list one page of 100", response, "expected 200")
        data = orjson.loads(response.body)["data"]
        if len(data["orders"]) != 100 or not data["has_more"]:
            raise _fail("list one page of 100", response, f"{len(data['orders'])} entries")
        return response.seconds

    figures.append(
        measure("list one page of 100 (GET /orders?limit=100)", cfg.runs, cfg.warmups, list_page)
    )

    def replay() -> float:
        response = client.post(BULK_PATH, body, key)
        if response.status != 200 or response.headers.get("Idempotent-Replayed") != "true":
            raise _fail("replay of 1000", response, "expected 200 with Idempotent-Replayed: true")
        if response.body != first.body:
            raise _fail("replay of 1000", response, "the replay differs from the first answer")
        return response.seconds

    figures.append(measure("replay of a 1000-drop batch", cfg.runs, cfg.warmups, replay))
    client.close()

    drops = db.execute("SELECT count(*) FROM orders_drop").fetchone()[0]
    pairs["late"] = beside_the_bare_floor(f"bulk, 1000 coordinate drops, {drops:,} drops stored")
    # Last: its rolled-back rows leave dead index entries that later inserts would step over.
    floor = measure(
        "schema floor", cfg.runs, cfg.warmups, lambda: floor_run(db, tenant, first.body, 1000)
    )
    print(f"  throughput: {cfg.clients} clients for {cfg.duration:g} s ...", flush=True)
    flow = throughput(port, tenant.key, cfg.clients, cfg.duration, coordinate_batch(500))

    report(figures, floor, pairs, flow, cfg, db, all(keep_alive))


def machine(db: psycopg.Connection, load_before: tuple[float, float, float]) -> list[str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    server = db.execute("SHOW server_version").fetchone()[0]
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}" for name in ("Django", "gunicorn", "psycopg")
    )
    return [
        f"machine:    {len(os.sched_getaffinity(0))} CPUs (nproc), {model}",
        f"software:   Python {platform.python_version()}, PostgreSQL {server}, {versions}",
        # Other work on the machine skews every figure; the load before we start shows it.
        f"load:       average before the run {', '.join(f'{x:.2f}' for x in load_before)}"
        " (1/5/15 min); other work on these CPUs during the run inflates the figures",
    ]


def report(
    figures: list[Figure],
    floor: Figure,
    pairs: dict[str, tuple[Figure, Figure]],
    flow: Throughput,
    cfg: Settings,
    db: psycopg.Connection,
    keep_alive: bool,
) -> None:
    width = max(len(f.case) for f in figures)
    print()
    print(f"{'case':<{width}}  {'median ms':>9}  {'p90 ms':>8}  {'runs':>4}")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 8}  {'-' * 4}")
    for f in figures:
        print(f"{f.case:<{width}}  {f.median_ms:>9.1f}  {f.p90_ms:>8.1f}  {len(f.samples):>4}")
    print()
    print(
        f"schema floor: median {floor.median_ms:.1f} ms, p90 {floor.p90_ms:.1f} ms, rolled back:"
        " the rows a batch writes now (1000 drops COPYed, order, one ledger debit, wallet,"
        "\n            batch row with its response) into our tables, indexes and checks included"
    )
    ratios = {}
    for when, (batch, bare) in pairs.items():
        ratios[when] = batch.median_ms / bare.median_ms
        print(
            f"bare floor ({when}): median {bare.median_ms:.1f} ms, p90 {bare.p90_ms:.1f} ms,"
            f' {len(bare.samples)} runs, beside "{batch.case}" (median {batch.median_ms:.1f} ms)'
        )
    print(
        "            the bare floor: COPY of 1000 drop-sized and 1000 ledger-sized rows and the"
        " batch row (its\n            response of the real size) into tables with no constraint"
        " or index, one transaction, committed"
    )
    ratio = ratios["early"]
    print(
        f"RATIO:      1000-drop batch end to end / bare floor = {ratio:.2f}x early in the run"
        f" (the 1000-drop case); {ratios['late']:.2f}x late, on"
        " the table the whole run filled"
    )
    by_case = {f.case: f for f in figures}
    checks = [
        ("1000 drops / bare floor", ratio, 3.0, "x", "<="),
        ("the same, late", ratios["late"], 3.0, "x", "<="),
        ("with windows and notes", ratios["commitments"], 3.0, "x", "<="),
        ("with a parcel and COD", ratios["parcels"], 3.0, "x", "<="),
        ("5000 drops", by_case["bulk, 5000 coordinate drops"].median_ms, 300, " ms", "<="),
        ("tracking 1000 ids", by_case["tracking, 1000 identifiers"].median_ms, 25, " ms", "<="),
        ("throughput", flow.per_second, 10_000, " drops/s", ">="),
    ]
    print(
        "targets:    "
        + "; ".join(
            f"{name} {value:,.2f}{unit} (target {op} {target:,}{unit}:"
            f" {'PASS' if (value <= target if op == '<=' else value >= target) else 'FAIL'})"
            for name, value, target, unit, op in checks
        )
    )
    print(
        f"throughput: {flow.per_second:,.0f} accepted drops/s ({flow.clients} clients x"
        f" {flow.batch_size}-drop batches, one tenant, {flow.batches} batches,"
        f" {flow.accepted:,} drops in {flow.seconds:.1f} s)"
    )
    print(
        f"server:     gunicorn config.wsgi, {cfg.workers} sync workers, DEBUG off;"
        f" HTTP keep-alive {'kept' if keep_alive else 'not kept by the server (reconnects)'};"
        f" {cfg.warmups} untimed warm-up run(s) per case"
    )
    for line in machine(db, cfg.load_before):
        print(line)


def parse_args(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="timed runs per case (default 15; --quick 3)")
    parser.add_argument("--warmups", type=int, help="untimed runs per case (default 2; --quick 1)")
    parser.add_argument("--duration", type=float, help="throughput seconds (default 20; --quick 3)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    parser.add_argument("--clients", type=int, default=4, help="throughput clients (default 4)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 15)
    return Settings(
        runs=runs,
        warmups=args.warmups if args.warmups is not None else (1 if args.quick else 2),
        big_runs=max(2 if args.quick else 3, runs // 3),
        duration=args.duration or (3.0 if args.quick else 20.0),
        workers=args.workers,
        clients=args.clients,
        load_before=os.getloadavg(),
    )


def start_database(
    cleanup: contextlib.ExitStack, **settings: str
) -> tuple[Path, PostgresCluster, dict[str, str]]:
    """A work folder, a throwaway cluster with the bench database, and the app's environment.

    Everything is registered on `cleanup`; `settings` are added to the environment.
    """
    workdir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
    cluster = PostgresCluster()
    cleanup.callback(cluster.stop)  # registered first, so it runs last
    print("starting PostgreSQL, migrating and seeding ...", flush=True)
    cluster.start()
    with psycopg.connect(cluster.url("postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {DB_NAME}")
    env = {
        **os.environ,
        "DATABASE_URL": cluster.url(DB_NAME),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "ALLOWED_HOSTS": HOST,
        # Plain http on loopback, and one key sending as fast as it can: no redirect to
        # https, and rate limits far above what the bench sends (the throttle still runs).
        "SECURE_SSL_REDIRECT": "false",
        "RATE_LIMIT_DEFAULT": "1000000/minute",
        "RATE_LIMIT_BULK": "1000000/minute",
        **settings,
    }
    return workdir, cluster, env


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    # A plain SIGTERM would skip the clean-up below; make it an exception instead.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as cleanup:
        workdir, cluster, env = start_database(cleanup)
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        tenant = seed(env, db)

        server = Gunicorn(env, cfg.workers, workdir / "gunicorn.log")
        cleanup.callback(server.stop)
        server.start()
        print(
            f"gunicorn on {HOST}:{server.port} ({cfg.workers} workers); measuring"
            f" ({cfg.runs} runs, {cfg.big_runs} for 5000 drops, {cfg.warmups} warm-ups)",
            flush=True,
        )
        try:
            run_cases(server.port, tenant, db, cfg)
        except BaseException:
            print(f"--- gunicorn log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            raise
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
