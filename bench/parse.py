"""The shape check of POST /orders/bulk alone, in µs per drop: what the hot path spends
parsing a body before any rule of a drop is judged.

    .venv/bin/python bench/parse.py [--drops N] [--runs R] [--against MODULE]

It parses bench/bulk.py's bodies (plain, committed: a window and notes on every drop,
carried: a parcel and COD on every drop) with `orders.inputs.parse_batch`, and, with
`--against`, with another module's `parse_batch` for a side-by-side figure, the two taking
turns; e.g. an earlier parser: `git show REV:orders/inputs.py > /tmp/old/old_inputs.py`,
then `PYTHONPATH=/tmp/old .venv/bin/python bench/parse.py --against old_inputs`. The one
read of the active vehicle types per batch is answered from memory: it is a query, not
parsing. No database is needed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")

import django  # noqa: E402

django.setup()

from bench.bulk import carried_batch, committed_batch, coordinate_batch  # noqa: E402
from fleet.models import VehicleType  # noqa: E402

VEHICLES = [VehicleType(code="motorbike", active=True), VehicleType(code="van", active=True)]
BODIES = {"plain": coordinate_batch, "committed": committed_batch, "carried": carried_batch}


def per_drop(modules: list, body: bytes, drops: int, runs: int) -> list[float]:
    """The median µs per drop of `runs` parses by each module, each of a freshly loaded
    body; the modules take turns, so a busy moment of the machine falls on all alike."""
    times: list[list[float]] = [[] for _ in modules]
    for module in modules:
        module.active_vehicle_types = lambda: VEHICLES
    for _ in range(runs):
        for module, kept in zip(modules, times, strict=True):
            parsed = orjson.loads(body)
            start = time.perf_counter()
            module.parse_batch(parsed)
            kept.append(time.perf_counter() - start)
    return [statistics.median(kept) / drops * 1e6 for kept in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drops", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=51)
    parser.add_argument("--against", help="another module with parse_batch, e.g. a copy")
    args = parser.parse_args()
    modules = {"orders.inputs": importlib.import_module("orders.inputs")}
    if args.against:
        modules[args.against] = importlib.import_module(args.against)
    print(f"{args.drops} drops, median of {args.runs} parses, µs per drop")
    for case, make in BODIES.items():
        body = make(args.drops).raw.replace(b"@TAG@", b"x")
        figures = "  ".join(
            f"{name}: {figure:6.2f}"
            for name, figure in zip(
                modules, per_drop(list(modules.values()), body, args.drops, args.runs), strict=True
            )
        )
        print(f"  {case:<10} {figures}")


if __name__ == "__main__":
    main()
