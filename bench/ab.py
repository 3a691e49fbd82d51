"""Is a change faster? The working tree against a git revision, served side by side.

    .venv/bin/python bench/ab.py [--against REV] [--rounds N] [--preload DROPS]

This machine's speed drifts by tens of percent within minutes, so two runs of
bench/bulk.py minutes apart cannot tell a 5% gain from noise. Here both versions run at
the same moments: REV (default HEAD) is checked out in a temporary git worktree, each
version gets its own database in one throwaway PostgreSQL and its own gunicorn (the same
settings as bench/bulk.py), and every round sends the same request to both, in turns
(A then B, then B then A), so drift and order cancel. It prints, per case, both medians
and the median of the paired differences with a bootstrap 90% interval: a lever is
worth keeping when the interval is clear of zero.

A tool for deciding, like bench/profile_bulk.py; bench/bulk.py is the measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bulk import (  # noqa: E402
    BULK_PATH,
    DB_NAME,
    TRACKING_PATH,
    BenchError,
    Client,
    Gunicorn,
    Template,
    carried_batch,
    check_batch,
    committed_batch,
    coordinate_batch,
    post_batch,
    seed,
    start_database,
)


@dataclass
class Side:
    name: str
    client: Client
    tracking_bodies: dict[int, bytes] = field(default_factory=dict)  # by identifiers sent


def worktree(cleanup: contextlib.ExitStack, revision: str) -> Path:
    """REV checked out (detached) in a temporary worktree, removed at the end."""
    folder = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="ab-"))) / "tree"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(folder), revision],
        cwd=ROOT,
        check=True,
    )
    cleanup.callback(
        subprocess.run,
        ["git", "worktree", "remove", "--force", str(folder)],
        cwd=ROOT,
        check=False,
    )
    return folder


def bootstrap_interval(differences: list[float], draws: int = 2000) -> tuple[float, float]:
    rng = random.Random(18)
    medians = sorted(
        statistics.median(rng.choices(differences, k=len(differences))) for _ in range(draws)
    )
    return medians[int(draws * 0.05)], medians[int(draws * 0.95)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--preload", type=int, default=20_000, help="drops written first")
    parser.add_argument(
        "--cases",
        default="bulk1000,track1000",
        help="bulk1, bulk1000, bulk5000, committed1000, carried1000, track1000, and the small"
        " calls of bench/small_calls.py: account, track1, track20, orders20",
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as cleanup:
        theirs = worktree(cleanup, args.against)
        workdir, cluster, env = start_database(cleanup)
        with psycopg.connect(cluster.url("postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {DB_NAME}_b")
        sides: list[Side] = []
        for name, root, database in (
            (args.against, theirs, DB_NAME),
            ("working tree", ROOT, f"{DB_NAME}_b"),
        ):
            side_env = {**env, "DATABASE_URL": cluster.url(database)}
            db = cleanup.enter_context(psycopg.connect(cluster.url(database), autocommit=True))
            tenant = seed(side_env, db, root=root)
            server = Gunicorn(side_env, 2, workdir / f"gunicorn-{len(sides)}.log", root=root)
            cleanup.callback(server.stop)
            server.start()
            side = Side(name, Client(server.port, tenant.key))
            big = coordinate_batch(5000)
            for _ in range(args.preload // 5000):
                post_batch(side.client, "preload", big)
            first = side.client.post(BULK_PATH, coordinate_batch(1000).fresh(), str(uuid.uuid4()))
            data = check_batch("a batch to track", first, 1000)
            ids = [o["client_order_id"] for o in data["orders"]]
            side.tracking_bodies = {
                n: orjson.dumps({"identifiers": ids[:n]}) for n in (1, 20, len(ids))
            }
            db.execute("ANALYZE")
            sides.append(side)
        print(f"A = {sides[0].name}, B = {sides[1].name}; {args.rounds} rounds", flush=True)

        def bulk(template: Template) -> Callable[[Side], float]:
            return lambda side: post_batch(side.client, "bulk", template)[0].seconds

        def track(count: int) -> Callable[[Side], float]:
            def one(side: Side) -> float:
                response = side.client.post(TRACKING_PATH, side.tracking_bodies[count])
                if response.status != 200:
                    raise BenchError(f"tracking answered {response.status}")
                return response.seconds

            return one

        def get(path: str) -> Callable[[Side], float]:
            def one(side: Side) -> float:
                response = side.client.get(path)
                if response.status != 200:
                    raise BenchError(f"{path} answered {response.status}")
                return response.seconds

            return one

        cases: dict[str, Callable[[Side], float]] = {
            "bulk1": bulk(coordinate_batch(1)),
            "bulk1000": bulk(coordinate_batch(1000)),
            "bulk5000": bulk(coordinate_batch(5000)),
            "committed1000": bulk(committed_batch(1000)),
            "carried1000": bulk(carried_batch(1000)),
            "track1000": track(1000),
            "account": get("/api/v1/account"),
            "track1": track(1),
            "track20": track(20),
            "orders20": get("/api/v1/orders?limit=20"),
        }
        for case in args.cases.split(","):
            one = cases[case]
            for side in sides:  # warm-up
                one(side), one(side)
            times: dict[str, list[float]] = {side.name: [] for side in sides}
            for i in range(args.rounds):
                for side in sides if i % 2 == 0 else reversed(sides):
                    times[side.name].append(one(side))
            a, b = (times[side.name] for side in sides)
            differences = [(y - x) * 1000 for x, y in zip(a, b, strict=True)]
            low, high = bootstrap_interval(differences)
            print(
                f"{case}: A median {statistics.median(a) * 1000:.2f} ms,"
                f" B median {statistics.median(b) * 1000:.2f} ms;"
                f" B - A median {statistics.median(differences):+.2f} ms"
                f" (90% interval {low:+.2f} .. {high:+.2f})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
