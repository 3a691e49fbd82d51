"""Stop order: geo.routes.sequence_stops against the exact shortest route, and its
time per order. No database, no server.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/routes.py [--orders N] [--seed S]

N random orders (default 1,000) of 2 to 9 drops (uniform), pickup and drops uniform in the
demo service area (geo/demo.py), no windows. Each route's length is compared with the
exact optimum (Held-Karp, tests/geo/optimal_routes.py). The bars (docs/dispatch.md "Stop
order"): mean length within 3% of the optimum, the worst within 10%, under 2 ms per order
(mean). Exits 1 when a bar is missed.

Then, for information (no bar), the same orders with three drops in ten given a window
ending 10 to 90 minutes after the start (tight on purpose: many cannot all be kept): the
windows missed by sequence_stops and by the shortest order found when windows are
ignored, and the time per order.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")

import django  # noqa: E402

django.setup()  # for geo.demo's area only: the routes themselves need no Django

from geo.routes import Stop, sequence_stops  # noqa: E402
from tests.geo.optimal_routes import held_karp_km, random_orders, route_length_km  # noqa: E402

MEAN_RATIO_BAR, WORST_RATIO_BAR, MEAN_MS_BAR = 1.03, 1.10, 2.0
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SPEED_KMH, HANDLING_MINUTES = 25.0, 5.0  # config/settings.py's defaults


def ordered(pickup, drops: list[Stop]) -> list[int]:
    return sequence_stops(
        pickup, drops, start_at=START, speed_kmh=SPEED_KMH, handling_minutes=HANDLING_MINUTES
    )


def windows_missed(pickup, drops: list[Stop], order: list[int]) -> int:
    missed, minutes, here = 0, 0.0, pickup
    for position, index in enumerate(order):
        drop = drops[index]
        minutes += route_length_km(here, [drop], [0]) / SPEED_KMH * 60
        reached = START + timedelta(minutes=minutes + HANDLING_MINUTES * position)
        missed += drop.window_end is not None and reached > drop.window_end
        here = (drop.lat, drop.long)
    return missed


def with_windows(orders, seed: int) -> None:
    """The informational run with windows (module docstring)."""
    rng, times_ms, missed, missed_by_length, windows = random.Random(seed), [], 0, 0, 0
    for pickup, plain in orders:
        drops = [
            drop._replace(window_end=START + timedelta(minutes=rng.uniform(10, 90)))
            if rng.random() < 0.3
            else drop
            for drop in plain
        ]
        windows += sum(drop.window_end is not None for drop in drops)
        started = time.perf_counter()
        order = ordered(pickup, drops)
        times_ms.append((time.perf_counter() - started) * 1000)
        missed += windows_missed(pickup, drops, order)
        missed_by_length += windows_missed(pickup, drops, ordered(pickup, plain))
    p99_ms = statistics.quantiles(times_ms, n=100)[98]
    print(f"with windows (3 drops in 10, ending 10-90 min after the start): {windows} windows")
    print(f"  missed: {missed} (the shortest order, windows ignored: {missed_by_length})")
    print(f"  time per order:   mean {statistics.fmean(times_ms):.3f} ms, p99 {p99_ms:.3f} ms")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=1000, help="random orders (1,000)")
    parser.add_argument("--seed", type=int, default=32, help="the orders' random seed (32)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    orders = random_orders(args.seed, args.orders)
    ratios, times_ms = [], []
    for pickup, drops in orders:
        started = time.perf_counter()
        order = ordered(pickup, drops)
        times_ms.append((time.perf_counter() - started) * 1000)
        optimum = held_karp_km(pickup, drops)
        ratios.append(route_length_km(pickup, drops, order) / optimum if optimum else 1.0)
    mean_ratio, worst_ratio = statistics.fmean(ratios), max(ratios)
    mean_ms, p99_ms = statistics.fmean(times_ms), statistics.quantiles(times_ms, n=100)[98]
    optimal = sum(ratio < 1 + 1e-9 for ratio in ratios)
    print(f"stop order: {len(orders)} orders of 2-9 drops in the demo area, seed {args.seed}")
    print(f"  length / optimum: mean {mean_ratio:.4f}, worst {worst_ratio:.4f}")
    print(f"  optimal routes:   {optimal} of {len(orders)}")
    print(f"  time per order:   mean {mean_ms:.3f} ms, p99 {p99_ms:.3f} ms")
    bars = {
        f"mean within {MEAN_RATIO_BAR - 1:.0%}": mean_ratio <= MEAN_RATIO_BAR,
        f"worst within {WORST_RATIO_BAR - 1:.0%}": worst_ratio <= WORST_RATIO_BAR,
        f"under {MEAN_MS_BAR:g} ms per order": mean_ms < MEAN_MS_BAR,
    }
    for bar, passed in bars.items():
        print(f"  {'PASS' if passed else 'FAIL'}: {bar}")
    with_windows(orders, args.seed)
    return 0 if all(bars.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
