"""The fixed cost of a small call: each call against the framework floor,
through gunicorn on PostgreSQL, and where its time goes.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/small_calls.py [--rounds 600] [--profile-calls 100]

The floor is a bare Django view served by the same gunicorn and middleware
(bench/floor/urls.py: no authentication, one indexed SELECT of one row). Each round calls
the floor, then one case, then the floor, then the next case, on one keep-alive
connection: every case is measured beside a floor of the same moment, so the machine's
load moves both alike. The business has a past first (10,000 drops, `--history`) and the
database its statistics (ANALYZE), as a live account's would. Printed: each case's median
and p90, its ratio to the floor's median, the small-call targets (PASS/FAIL; the exit
status is 1 if one misses), and a breakdown of each case from an in-process profile (the
same code under Django's test client, cProfile's own time grouped by where it is spent:
auth, throttle, parse, decide and write, build the answer, SQL, render, middleware, the
framework).

Nothing is left running: gunicorn and the cluster are stopped on success, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

from bench.bulk import Client, Gunicorn, seed, start_database  # noqa: E402

FLOOR = "/bench/floor"
HOME = (11.5696, 104.9210)
TRACKED = [f"T-{i}" for i in range(20)]
# The drops the business has sent before the calls: a few days of a small shop's deliveries.
HISTORY = 10_000


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    method: str
    path: str
    body: object = None  # a callable making a fresh body, for writes
    target: float | None = None  # the most this call may cost, as a ratio to the floor


def batch_of(n: int) -> bytes:
    tag = uuid.uuid4().hex[:10]
    drops = [
        {
            "client_order_id": f"S-{tag}-{i}",
            "dropoff": {
                "name": "Recipient", "phone": "+85512345679",
                "lat": HOME[0] + i % 50 * 1e-4, "long": HOME[1] + i // 50 * 1e-4,
            },
        }
        for i in range(n)
    ]  # fmt: skip
    pickup = {"name": "Shop", "phone": "+85512345678", "lat": 11.5564, "long": 104.9282}
    return orjson.dumps(
        {"client_batch_id": f"B-{tag}", "orders": [{"pickup": pickup, "dropoff": drops}]}
    )


CASES = [
    Case("GET /account", "GET", "/api/v1/account", target=1.5),
    Case(
        "tracking 1 id", "POST", "/api/v1/orders/tracking",
        lambda: orjson.dumps({"identifiers": TRACKED[:1]}), target=2.0,
    ),
    Case(
        "tracking 20 ids", "POST", "/api/v1/orders/tracking",
        lambda: orjson.dumps({"identifiers": TRACKED}),
    ),
    Case("bulk of 1 drop", "POST", "/api/v1/orders/bulk", lambda: batch_of(1), target=3.0),
    Case("bulk of 20 drops", "POST", "/api/v1/orders/bulk", lambda: batch_of(20)),
    Case("GET /orders?limit=20", "GET", "/api/v1/orders?limit=20", target=3.0),
    Case("quote of 1 drop", "POST", "/api/v1/orders/quote", lambda: batch_of(1)),
]  # fmt: skip


def call(client: Client, case: Case) -> float:
    if case.method == "GET":
        response = client.get(case.path)
    else:
        key = str(uuid.uuid4()) if case.path.endswith("/bulk") else None
        response = client.post(case.path, case.body(), idempotency_key=key)
    if response.status != 200:
        raise RuntimeError(f"{case.name}: {response.status} {response.body[:300]!r}")
    return response.seconds


def measure(client: Client, rounds: int, warmup: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {case.name: [] for case in CASES}
    times["floor"] = []
    for round_ in range(warmup + rounds):
        for case in CASES:
            floor = client.get(FLOOR).seconds
            seconds = call(client, case)
            if round_ >= warmup:
                times["floor"].append(floor)
                times[case.name].append(seconds)
    return times


# Where a function's own time goes, by the file it is in (the first that matches).
PLACES = [
    ("SQL", ("psycopg", "django/db/backends", "core/reads", "core/writes")),
    ("auth", ("accounts/auth", "accounts/keys", "rest_framework/authentication")),
    ("throttle", ("core/throttling", "accounts/ratelimit", "core/ratelimit")),
    ("parse", ("core/api.py", "orders/inputs", "tracking/inputs", "rest_framework/parsers")),
    ("decide and write", ("orders/", "billing/", "geo/", "events/")),
    ("build the answer", ("tracking/", "core/formats", "core/rows", "orders/results")),
    ("render", ("orjson", "rest_framework/renderers", "rest_framework/response")),
    ("middleware", ("core/middleware", "django/middleware", "whitenoise", "django/contrib")),
    ("the framework", ("rest_framework/", "django/")),
]


def place_of(filename: str) -> str:
    if filename == "~":  # a built-in: waits on the socket, C code (JSON, hashing)
        return "C and I/O waits"
    for place, parts in PLACES:
        if any(part in filename for part in parts):
            return place
    return "other"


def breakdown(key: str, calls: int) -> None:
    """Each case under cProfile in this process (Django's test client, same database)."""
    import cProfile
    import pstats

    from django.test import Client as DjangoClient

    client = DjangoClient()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    print(f"\nwhere the time goes (in-process, cProfile's own time, {calls} calls each):")
    for case in CASES:
        for _ in range(5):  # imports, compiled statements and caches warm, as in a server
            _in_process(client, case, headers)
        profile = cProfile.Profile()
        for _ in range(calls):
            if case.method == "GET":
                profile.runcall(client.get, case.path, **headers)
            else:
                extra = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
                profile.runcall(
                    client.post, case.path, case.body(), content_type="application/json",
                    **headers, **extra,
                )  # fmt: skip
        totals: dict[str, float] = {}
        for (filename, _, _), (_, _, own, _, _) in pstats.Stats(profile).stats.items():
            place = place_of(filename)
            totals[place] = totals.get(place, 0.0) + own
        whole = sum(totals.values())
        parts = ", ".join(
            f"{place} {seconds / whole:.0%}"
            for place, seconds in sorted(totals.items(), key=lambda item: -item[1])
            if seconds / whole >= 0.02
        )
        print(f"  {case.name:22} {whole / calls * 1000:6.2f} ms/call: {parts}")


def _in_process(client, case: Case, headers: dict) -> None:
    if case.method == "GET":
        client.get(case.path, **headers)
    else:
        extra = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
        client.post(case.path, case.body(), content_type="application/json", **headers, **extra)


def report(times: dict[str, list[float]]) -> bool:
    floor = statistics.median(times["floor"])
    print(f"\nfloor (bare view, one indexed SELECT): median {floor * 1000:.2f} ms")
    print(f"  {'call':22} {'median':>9} {'p90':>9} {'ratio':>7}  target")
    ok = True
    for case in CASES:
        values = sorted(times[case.name])
        median = statistics.median(values)
        p90 = values[int(len(values) * 0.9)]
        ratio = median / floor
        verdict = ""
        if case.target is not None:
            passed = ratio <= case.target
            ok &= passed
            verdict = f"<= {case.target:.1f}x {'PASS' if passed else 'FAIL'}"
        print(
            f"  {case.name:22} {median * 1000:7.2f}ms {p90 * 1000:7.2f}ms {ratio:6.2f}x  {verdict}"
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--profile-calls", type=int, default=100)
    parser.add_argument(
        "--history", type=int, default=HISTORY,
        help="drops the business has before the calls (sent as batches of 1000)",
    )  # fmt: skip
    parser.add_argument(
        "--cod-entries", type=int, default=0,
        help="COD entries the business has before the calls (a year of cash on delivery)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as cleanup:
        workdir, _, env = start_database(cleanup, ALLOWED_HOSTS="127.0.0.1,testserver")
        import psycopg

        db = cleanup.enter_context(psycopg.connect(env["DATABASE_URL"], autocommit=True))
        tenant = seed(env, db)
        if args.cod_entries:
            cod_history(db, tenant.business_id, args.cod_entries)
        served = Gunicorn(
            {**env, "DJANGO_SETTINGS_MODULE": "bench.floor.settings"}, 1, workdir / "gunicorn.log"
        )
        cleanup.callback(served.stop)
        served.start()
        client = Client(served.port, tenant.key)
        cleanup.callback(client.close)
        setup = client.post(
            "/api/v1/orders/bulk", tracked_batch(), idempotency_key=str(uuid.uuid4())
        )
        if setup.status != 200:
            raise RuntimeError(f"the tracked batch: {setup.status} {setup.body[:300]!r}")
        send_history(client, args.history)
        # What autovacuum gives a live database: without it the planner prices every table
        # as the empty one it was at migrate, and picks plans no live account would get.
        db.execute("ANALYZE")
        load = os.getloadavg()[0]
        started = time.monotonic()
        times = measure(client, args.rounds, args.warmup)
        print(
            f"{args.rounds} rounds in {time.monotonic() - started:.0f} s, gunicorn 1 worker, "
            f"load average before {load:.2f} on {os.cpu_count()} cores"
        )
        ok = report(times)
        os.environ.update({**env, "DJANGO_SETTINGS_MODULE": "config.settings"})
        import django

        django.setup()
        breakdown(tenant.key, args.profile_calls)
        from django.db import connection

        connection.close()
    print("PASS" if ok else "FAIL: a call is above its target ratio")
    return 0 if ok else 1


def send_history(client: Client, drops: int) -> None:
    """The business's past: `drops` drops sent through the API before the calls."""
    for start in range(0, drops, 1000):
        sent = client.post(
            "/api/v1/orders/bulk", batch_of(min(1000, drops - start)),
            idempotency_key=str(uuid.uuid4()),
        )  # fmt: skip
        if sent.status != 200 or orjson.loads(sent.body)["data"]["counts"]["rejected"]:
            raise RuntimeError(f"the history: {sent.status} {sent.body[:300]!r}")
    print(f"the business has {drops:,} drops behind it; statistics gathered (ANALYZE)")


def cod_history(db, business_id: str, entries: int) -> None:
    """A sandbox COD account with `entries` payouts behind it, written straight in SQL (as
    far as GET /account can tell, a business's history); owed stays 0."""
    account = db.execute(
        "INSERT INTO billing_codaccount (business_id, environment, owed, collected_total,"
        " remitted_total, credited_total, updated_at) VALUES (%s, 'sandbox', 0, %s, %s, 0,"
        " now()) RETURNING id",
        (business_id, entries, entries),
    ).fetchone()[0]
    db.execute(
        "INSERT INTO billing_codentry (account_id, kind, amount, owed_after, reference, note,"
        " created_at) SELECT %s, 'REMITTED', -1.00, 0, 'bench', '', now()"
        " FROM generate_series(1, %s)",
        (account, entries),
    )
    db.execute("ANALYZE billing_codentry")
    print(f"the business has {entries:,} COD entries", flush=True)


def tracked_batch() -> bytes:
    pickup = {"name": "Shop", "phone": "+85512345678", "lat": 11.5564, "long": 104.9282}
    drops = [
        {"client_order_id": name, "dropoff": {"name": "Recipient", "phone": "+85512345679",
                                              "lat": HOME[0], "long": HOME[1]}}
        for name in TRACKED
    ]  # fmt: skip
    return orjson.dumps(
        {"client_batch_id": "B-tracked", "orders": [{"pickup": pickup, "dropoff": drops}]}
    )


if __name__ == "__main__":
    sys.exit(main())
