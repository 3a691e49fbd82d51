"""The garbage collector's pauses inside a gunicorn worker serving 1000-drop batches.

    .venv/bin/python bench/gc_pauses.py [--batches N] [--case plain|committed|carried]

One worker on the bench's throwaway PostgreSQL, with the project's gunicorn.conf.py plus a
post_worker_init hook that times every collection (gc.callbacks) and appends it to a file;
N batches are sent one after the other. It prints, per generation, the collections, their
total and longest pause, and the collector's time per batch. A tool for deciding
(core/memory.py's figures in docs/decisions.md), like bench/profile_bulk.py.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bulk import (  # noqa: E402
    DB_NAME,
    Client,
    Gunicorn,
    carried_batch,
    committed_batch,
    coordinate_batch,
    post_batch,
    seed,
    start_database,
)

CASES = {"plain": coordinate_batch, "committed": committed_batch, "carried": carried_batch}

HOOK = """
def post_worker_init(worker):
    import gc, time
    out = open({path!r}, "a", buffering=1)
    started = []

    def timed(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            out.write(f"{{info['generation']}} {{time.perf_counter() - started.pop()}}\\n")

    gc.callbacks.append(timed)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--case", choices=sorted(CASES), default="carried")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as cleanup:
        workdir, cluster, env = start_database(cleanup)
        db = cleanup.enter_context(psycopg.connect(cluster.url(DB_NAME), autocommit=True))
        tenant = seed(env, db)
        pauses = workdir / "pauses.txt"
        config = workdir / "gunicorn.conf.py"
        project = (ROOT / "gunicorn.conf.py").read_text()
        config.write_text(project + HOOK.format(path=str(pauses)))
        server = Gunicorn(env, 1, workdir / "gunicorn.log", config=config)
        cleanup.callback(server.stop)
        server.start()
        pauses.write_text("")  # start-up's collections are not the batches'
        client = Client(server.port, tenant.key)
        template = CASES[args.case](1000)
        seconds = [post_batch(client, "batch", template)[0].seconds for _ in range(args.batches)]
        by_generation: dict[int, list[float]] = defaultdict(list)
        for line in pauses.read_text().splitlines():
            generation, pause = line.split()
            by_generation[int(generation)].append(float(pause) * 1000)
        print(f"{args.batches} batches of 1000 {args.case} drops, one gunicorn worker:")
        print(f"  batch median {statistics.median(seconds) * 1000:.1f} ms")
        for generation in (0, 1, 2):
            times = by_generation.get(generation, [])
            longest = max(times, default=0.0)
            print(
                f"  generation {generation}: {len(times)} collections, {sum(times):.1f} ms in"
                f" all, longest {longest:.1f} ms"
            )
        total = sum(sum(times) for times in by_generation.values())
        print(f"  the collector's time per batch: {total / args.batches:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
