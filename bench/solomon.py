"""The planner's solver on the 56 Solomon VRPTW instances, against their best-known distances.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/solomon.py [--seconds S] [--only C101,R201] [--limit N]

Each instance (bench/solomon/, README.md there) becomes the same Problem the planner builds
(dispatch/solver.py): its vehicles start and end at the depot, as many as it has, with its
capacity and the depot's closing time as their shift's end; each customer a Job on board
from the depot (pickup=None) with its demand, window (ready, due) and service time.
Distances are Euclidean and riding time equals distance, both scaled by SCALE and rounded
to whole numbers (PyVRP computes in integers): a leg is then within 0.0005 of its length,
so a route of 125 legs is within 0.07 of it, under 0.01% of any instance's distance. The
same call as production, ``solve(problem, seconds=S)`` (default 5), then the found routes'
total distance is measured again unscaled, in floating point, for the gap
(found − best known) / best known.

Prints one line per instance, then the average and the worst gap and the time taken.
Exits 1 when the average gap is over 1% (docs/contract.md §21's bar) or a plan is
infeasible.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dispatch.solver import Job, Plan, Problem, Vehicle, solve  # noqa: E402

INSTANCES = Path(__file__).resolve().parent / "solomon"
SCALE = 1000
AVERAGE_GAP_BAR = 1.0  # percent


@dataclass(frozen=True)
class Instance:
    name: str
    points: np.ndarray  # (x, y) per customer number, the depot (0) first
    problem: Problem
    best_known: float


@dataclass(frozen=True)
class Outcome:
    name: str
    found: float
    best_known: float
    feasible: bool

    @property
    def gap(self) -> float:
        return (self.found - self.best_known) / self.best_known * 100


def read_instance(name: str) -> Instance:
    lines = (INSTANCES / f"{name}.txt").read_text().splitlines()
    vehicles, capacity = map(int, lines[4].split())
    rows = [list(map(float, line.split())) for line in lines[9:] if line.strip()]
    table = np.asarray(rows)
    points = table[:, 1:3]
    scaled = np.rint(
        np.hypot(*(points[:, None, :] - points[None, :, :]).transpose(2, 0, 1)) * SCALE
    ).astype(np.int64)
    depot_closes = int(table[0, 5] * SCALE)
    problem = Problem(
        places=[(float(y), float(x)) for x, y in points],
        matrices={"default": scaled},
        vehicles=[
            Vehicle(f"v{n}", start=0, end=0, capacity=capacity, until=depot_closes)
            for n in range(vehicles)
        ],
        jobs=[
            Job(
                key=str(int(number)),
                group=str(int(number)),
                drop=place,
                load=int(demand),
                window=(int(ready * SCALE), int(due * SCALE)),
                drop_service=int(service * SCALE),
            )
            for place, (number, _x, _y, demand, ready, due, service) in enumerate(rows)
            if place > 0
        ],
    )
    best = json.loads((INSTANCES / "best_known.json").read_text())[name]
    return Instance(name, points, problem, best["best_known_distance"])


def distance_of(instance: Instance, plan: Plan) -> float:
    """The plan's routes measured unscaled: depot, its stops, depot."""
    total = 0.0
    for stops in plan.runs.values():
        path = [0, *(stop.place for stop in stops), 0]
        for here, there in pairwise(path):
            total += math.dist(instance.points[here], instance.points[there])
    return total


def run(name: str, *, seconds: float) -> Outcome:
    instance = read_instance(name)
    plan = solve(instance.problem, seconds=seconds)
    planned = sum(len(stops) for stops in plan.runs.values())
    if planned != len(instance.problem.jobs):
        raise SystemExit(f"{name}: {planned} of {len(instance.problem.jobs)} customers planned")
    return Outcome(name, distance_of(instance, plan), instance.best_known, plan.feasible)


def names() -> list[str]:
    return sorted(json.loads((INSTANCES / "best_known.json").read_text()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="solver time per instance")
    parser.add_argument("--only", help="comma-separated instance names, e.g. C101,R201")
    parser.add_argument("--limit", type=int, help="the first N instances only")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else names()
    if unknown := set(chosen) - set(names()):
        parser.error(f"unknown instances: {', '.join(sorted(unknown))}")
    chosen = chosen[: args.limit] if args.limit else chosen
    print(f"Solomon VRPTW, {len(chosen)} instances, {args.seconds:g} s each (dispatch.solver)")
    print(f"{'instance':<9} {'found':>9} {'best known':>10} {'gap %':>7}  feasible")
    started, outcomes = time.perf_counter(), []
    for name in chosen:
        outcome = run(name, seconds=args.seconds)
        outcomes.append(outcome)
        print(
            f"{name:<9} {outcome.found:>9.2f} {outcome.best_known:>10.2f} "
            f"{outcome.gap:>7.2f}  {'yes' if outcome.feasible else 'NO'}",
            flush=True,
        )
    average = sum(outcome.gap for outcome in outcomes) / len(outcomes)
    worst = max(outcomes, key=lambda outcome: outcome.gap)
    infeasible = [outcome.name for outcome in outcomes if not outcome.feasible]
    print(f"average gap {average:.2f}% (bar: {AVERAGE_GAP_BAR:g}%)")
    print(f"worst gap {worst.gap:.2f}% ({worst.name})")
    print(f"infeasible: {', '.join(infeasible) or 'none'}")
    print(f"time {time.perf_counter() - started:.0f} s")
    return 1 if average > AVERAGE_GAP_BAR or infeasible else 0


if __name__ == "__main__":
    sys.exit(main())
