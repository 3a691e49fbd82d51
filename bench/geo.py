"""Point-in-area checks: how long the vectorised test of 1000 points takes (no database).

Run: .venv/bin/python bench/geo.py   (also part of `make bench`)
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "true")

import django  # noqa: E402

django.setup()

from geo.demo import PHNOM_PENH  # noqa: E402
from geo.geometry import geometry_from_geojson  # noqa: E402
from geo.services import Area, Coverage  # noqa: E402

MULTI = {  # two squares with a gap, to time a MultiPolygon too
    "type": "MultiPolygon",
    "coordinates": [
        [[[104.80, 11.45], [104.89, 11.45], [104.89, 11.70], [104.80, 11.70], [104.80, 11.45]]],
        [[[104.91, 11.45], [105.00, 11.45], [105.00, 11.70], [104.91, 11.70], [104.91, 11.45]]],
    ],
}


def median_ms(coverage: Coverage, lats: list[float], longs: list[float], runs: int = 200) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        coverage.locate(lats, longs)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    rng = random.Random(7)
    lats = [rng.uniform(11.3, 11.8) for _ in range(1000)]
    longs = [rng.uniform(104.7, 105.1) for _ in range(1000)]
    one = Coverage([Area(1, "Phnom Penh", geometry_from_geojson(PHNOM_PENH))])
    two = Coverage(
        [
            Area(1, "Phnom Penh", geometry_from_geojson(PHNOM_PENH)),
            Area(2, "Split", geometry_from_geojson(MULTI)),
        ]
    )
    inside = sum(1 for areas in one.locate(lats, longs) if areas)
    for label, coverage in (("1 area", one), ("2 areas, one a MultiPolygon", two)):
        took = median_ms(coverage, lats, longs)
        print(f"polygon check, 1000 points, {label}: median {took:.3f} ms")
    print(f"({inside} of the 1000 random points fall inside Phnom Penh)")


if __name__ == "__main__":
    main()
