"""Where a 1000-drop batch spends its time, in-process: a profile to decide what to change.

    .venv/bin/python bench/profile_bulk.py [--case plain|committed|carried] [--drops N] [--runs R]
                                           [--top K] [--sort KEY]

The same throwaway PostgreSQL, migration and seed as bench/bulk.py, then Django in this
process: each run goes through the whole WSGI stack (middleware, authentication, the rate
limit, parsing, the service, the response) with Django's test client, without gunicorn or
a socket. It prints the median wall time of R runs, then one run under cProfile (sorted by
`--sort`, default tottime) so Python and database waits can be told apart: psycopg's
`wait`/`execute` lines are time spent waiting on PostgreSQL.

A figure for deciding, not for reporting: bench/bulk.py is the measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bulk import (  # noqa: E402
    BULK_PATH,
    DB_NAME,
    HOST,
    bare_floor_run,
    carried_batch,
    check_batch,
    committed_batch,
    coordinate_batch,
    create_bare_tables,
    seed,
    start_database,
)

# Functions on the hot path whose own time (calls included) is summed per batch, without
# cProfile's per-call overhead: (module, attribute, label).
PHASES = (
    ("tracking.api", "json_body", "read and parse JSON"),
    ("tracking.api", "parse_batch", "check the shape"),
    ("orders.services", "write_batch", "write (all of it)"),
    ("orders.decisions", "Decider.__init__", "  decide the pickups"),
    ("orders.decisions", "Decider.next_drops", "  decide the drops (inside the COPY's stream)"),
    ("orders.services", "_write_drops", "  orders and drops: decided, built, stored at once"),
    ("orders.services", "charge", "    charge"),
    ("orders.services", "drop_row", "    rows"),
    ("orders.rows", "window_columns", "      window columns"),
    ("orders.rows", "carried", "      parcel columns"),
    ("orders.services", "answer_of", "    answers"),
    ("orders.services", "price_breakdown", "      price breakdown"),
    ("orders.decisions", "Decider._check_window", "    rule 7"),
    ("orders.services", "open_till", "  lock the account"),
    ("orders.services", "taken_ids", "  taken ids (one taken, or a drop short of balance)"),
    ("orders.services", "claim", "  claim key and batch"),
    ("orders.services", "load_coverage", "  coverage"),
    ("orders.services", "record_events", "  batch.created event"),
    ("billing.services", "append_entries", "  ledger and balance"),
    ("orders.services", "success_body", "  response body"),
    ("accounts.auth", "ApiKeyAuthentication.authenticate", "authenticate"),
    ("core.throttling", "ApiKeyRateThrottle.allow_request", "rate limit"),
    ("django.db.backends.base.base", "BaseDatabaseWrapper.commit", "commit"),
)


CASES = {"plain": coordinate_batch, "committed": committed_batch, "carried": carried_batch}


def time_phases() -> dict[str, list[float]]:
    import functools
    import importlib

    totals: dict[str, list[float]] = {}
    for module_name, attribute, label in PHASES:
        owner = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name)
        samples = totals.setdefault(label, [])

        def timed(*a, __original=original, __samples=samples, **k):
            started = time.perf_counter()
            try:
                return __original(*a, **k)
            finally:
                __samples.append(time.perf_counter() - started)

        setattr(owner, name, functools.wraps(original)(timed))
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drops", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument(
        "--case",
        choices=sorted(CASES),
        default="plain",
        help="plain drops, a window and notes on each, a parcel and COD on each",
    )
    parser.add_argument(
        "--preload", type=int, default=100_000, help="drops written first (as the bench has)"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as cleanup:
        _, cluster, env = start_database(cleanup)
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        tenant = seed(env, db)
        os.environ.update(env)
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        import django

        django.setup()
        from django.test import Client

        client = Client(HTTP_HOST=HOST, HTTP_AUTHORIZATION=f"Bearer {tenant.key}")
        template = CASES[args.case](args.drops)

        def one() -> float:
            body = template.fresh()
            started = time.perf_counter()
            response = client.post(
                BULK_PATH,
                body,
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
            )
            seconds = time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"HTTP {response.status_code}: {response.content[:2000]!r}")
            return seconds

        big = coordinate_batch(5000)
        for _ in range(args.preload // 5000):
            response = client.post(
                BULK_PATH,
                big.fresh(),
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
            )
            assert response.status_code == 200, response.content[:2000]
        db.execute("ANALYZE")
        for _ in range(3):
            one()
        # The garbage collector's share: each collection timed through gc.callbacks.
        import gc

        collected: list[float] = []
        started_gc: list[float] = []

        def on_gc(phase: str, info: dict) -> None:
            if phase == "start":
                started_gc.append(time.perf_counter())
            else:
                collected.append((time.perf_counter() - started_gc.pop(), info["generation"]))

        gc.callbacks.append(on_gc)
        for _ in range(5):
            one()
        gc.callbacks.remove(on_gc)
        by_generation = {g: sum(t for t, gen in collected if gen == g) for g in (0, 1, 2)}
        print(
            "garbage collection per batch: "
            + ", ".join(f"gen{g} {t / 5 * 1000:.2f} ms" for g, t in by_generation.items())
            + f" ({len(collected) / 5:.0f} collections)"
        )
        samples = [one() for _ in range(args.runs)]
        print(
            f"{args.drops} drops in-process: median {statistics.median(samples) * 1000:.1f} ms,"
            f" min {min(samples) * 1000:.1f} ms ({args.runs} runs)"
        )
        phases = time_phases()
        for _ in range(args.runs):
            one()
        for name, seconds in phases.items():
            per_batch = sum(seconds) / args.runs * 1000
            print(f"  {name}: {per_batch:.2f} ms per batch ({len(seconds)} calls)")
        create_bare_tables(db)
        answer = client.post(
            BULK_PATH,
            template.fresh(),
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        ).content
        columns = template.columns
        for _ in range(3):
            bare_floor_run(db, tenant, answer, args.drops, columns)
        floors = [bare_floor_run(db, tenant, answer, args.drops, columns) for _ in range(args.runs)]
        floor = statistics.median(floors)
        print(
            f"bare floor: median {floor * 1000:.1f} ms; in-process batch / bare floor ="
            f" {statistics.median(samples) / floor:.2f}x"
        )
        # Every statement of one batch, with its time (COPY included: core/writes.py logs it).
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            one()
        print(f"statements of one batch: {len(captured.captured_queries)}")
        for query in captured.captured_queries:
            print(f"  {float(query['time']) * 1000:6.2f} ms  {query['sql'][:110]}")
        profile = cProfile.Profile()
        body = template.fresh()
        profile.enable()
        response = client.post(
            BULK_PATH, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())
        )
        profile.disable()

        class Shim:  # check_batch reads what bench/bulk.Response carries
            status = response.status_code
            body = response.content

        check_batch("profiled run", Shim, args.drops)  # type: ignore[arg-type]
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats(args.sort).print_stats(args.top)
        # Who waited on PostgreSQL, and how long: the database's share, statement by statement.
        stats.print_callers(r"psycopg/connection.py:\d+\(wait\)")
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
