"""The solver's rules of a run (dispatch/solver.py, docs/contract.md §21): pure, no database.

Places sit on a line, 100 riding seconds apart per unit, so every order of stops has a
length worked out by hand; each test names the order a broken rule would give instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from dispatch.solver import Job, Plan, Problem, Vehicle, solve

SECONDS = 0.3


def line(*xs: float, per_unit: int = 100) -> tuple[list[tuple[float, float]], np.ndarray]:
    """Places at these points of a line, and the riding seconds between them."""
    points = np.asarray(xs, dtype=np.float64)
    riding = np.rint(np.abs(points[:, None] - points[None, :]) * per_unit).astype(np.int64)
    return [(0.0, x / 100) for x in xs], riding


def problem(places, riding, vehicles, jobs, **more) -> Problem:
    matrices = more.pop("matrices", None) or {"default": riding}
    return Problem(places=places, matrices=matrices, vehicles=vehicles, jobs=jobs, **more)


def visits(plan: Plan, vehicle: str) -> list[tuple[str, str]]:
    return [(stop.kind, stop.job) for stop in plan.runs[vehicle]]


def test_a_pickup_comes_before_its_drop():
    # The courier at 0; the parcel's drop at 1, its pickup at 5. Riding to the nearest
    # place first (the drop) would be 500 s; the pickup must come first: 0→5→1, 900 s.
    places, riding = line(0, 1, 5)
    plan = solve(
        problem(places, riding, [Vehicle("c", start=0)], [Job("d", "o", drop=1, pickup=2)]),
        seconds=SECONDS,
    )
    assert visits(plan, "c") == [("pickup", "d"), ("drop", "d")]
    assert [stop.arrival for stop in plan.runs["c"]] == [500, 900]
    assert plan.cost == 900 and plan.feasible


def test_the_load_on_board_never_passes_the_capacity():
    # Two parcels of 2 units on a courier carrying 2: picked up at 1 and 2, dropped at 3
    # and 4. The shortest ride (both pickups, then both drops: 400 s) would carry 4.
    places, riding = line(0, 1, 2, 3, 4)
    jobs = [Job("a", "oa", drop=3, pickup=1, load=2), Job("b", "ob", drop=4, pickup=2, load=2)]
    plan = solve(
        problem(places, riding, [Vehicle("c", start=0, capacity=2)], jobs), seconds=SECONDS
    )
    loads = {job.key: job.load for job in jobs}
    on_board, most = 0, 0
    for stop in plan.runs["c"]:
        on_board += loads[stop.job] if stop.kind == "pickup" else -loads[stop.job]
        most = max(most, on_board)
    assert most == 2
    assert visits(plan, "c") == [("pickup", "a"), ("drop", "a"), ("pickup", "b"), ("drop", "b")]
    assert plan.cost == 600 and plan.feasible


def test_a_parcel_on_board_counts_from_the_start():
    # On board from the start (no pickup): 3 units of a capacity of 4 leave room for a
    # parcel of 1, not 2, so the parcel of 2 is picked up after the 3 are dropped.
    places, riding = line(0, 1, 2, 3)
    jobs = [Job("aboard", "o1", drop=3, load=3), Job("new", "o2", drop=2, pickup=1, load=2)]
    plan = solve(
        problem(places, riding, [Vehicle("c", start=0, capacity=4)], jobs), seconds=SECONDS
    )
    assert visits(plan, "c") == [("drop", "aboard"), ("pickup", "new"), ("drop", "new")]


def test_a_window_is_met_by_a_longer_route_when_the_shorter_misses_it():
    # From 0: the drop at +1 then the one at -3 is 500 s, but reaches -3 at 500, after its
    # window's end (350). Going to -3 first (700 s) meets it.
    places, riding = line(0, 1, -3)
    jobs = [Job("near", "o1", drop=1), Job("far", "o2", drop=2, window=(0, 350))]
    plan = solve(problem(places, riding, [Vehicle("c", start=0)], jobs), seconds=SECONDS)
    assert visits(plan, "c") == [("drop", "far"), ("drop", "near")]
    assert [(stop.arrival, stop.late) for stop in plan.runs["c"]] == [(300, 0), (700, 0)]
    assert plan.cost == 700 and plan.late_seconds == 0 and plan.feasible


def test_a_window_is_waited_for_and_the_service_starts_at_its_start():
    places, riding = line(0, 1, 2)
    jobs = [
        Job("first", "o1", drop=1, window=(400, 1000), drop_service=60),
        Job("then", "o2", drop=2),
    ]
    plan = solve(problem(places, riding, [Vehicle("c", start=0)], jobs), seconds=SECONDS)
    # At 1 by 100, served from 400 to 460, at 2 by 560.
    assert [(stop.job, stop.arrival) for stop in plan.runs["c"]] == [("first", 100), ("then", 560)]


def test_a_window_that_cannot_be_met_keeps_its_job_late():
    # The drop is 300 s away and its window ends at 100: it is still planned, 200 s late,
    # and the drop after it is late by what that costs too.
    places, riding = line(0, 3, 4)
    jobs = [Job("late", "o1", drop=1, window=(0, 100)), Job("next", "o2", drop=2, window=(0, 350))]
    plan = solve(problem(places, riding, [Vehicle("c", start=0)], jobs), seconds=SECONDS)
    assert visits(plan, "c") == [("drop", "late"), ("drop", "next")]
    assert [(stop.arrival, stop.late) for stop in plan.runs["c"]] == [(300, 200), (400, 50)]
    assert plan.late_seconds == 250
    assert not plan.feasible


def test_an_open_route_ends_at_its_last_stop_and_a_closed_one_rides_to_its_end():
    # From 0, drops at -1 and +3. Open: -1 first, then +3 (500 s). Ending at -2: +3 first,
    # then -1, then -2 (800 s); -1 first would be 100 + 400 + 500 = 1,000 s.
    places, riding = line(0, -1, 3, -2)
    jobs = [Job("west", "o1", drop=1), Job("east", "o2", drop=2)]
    open_plan = solve(problem(places, riding, [Vehicle("c", start=0)], jobs), seconds=SECONDS)
    closed_plan = solve(
        problem(places, riding, [Vehicle("c", start=0, end=3)], jobs), seconds=SECONDS
    )
    assert visits(open_plan, "c") == [("drop", "west"), ("drop", "east")]
    assert open_plan.cost == 500
    assert visits(closed_plan, "c") == [("drop", "east"), ("drop", "west")]
    assert closed_plan.cost == 800


def test_a_shift_end_is_respected_when_it_can_be():
    # Courier A at 0, B at -2; drops at 1, 2, 3. Without a shift end A rides them all
    # (300 s). With A's shift ending at 250, A may keep only what it can finish by then.
    places, riding = line(0, -2, 1, 2, 3)
    jobs = [Job(f"j{x}", f"o{x}", drop=place) for x, place in ((1, 2), (2, 3), (3, 4))]
    free = solve(
        problem(places, riding, [Vehicle("a", start=0), Vehicle("b", start=1)], jobs),
        seconds=SECONDS,
    )
    assert set(free.runs) == {"a"} and free.cost == 300
    shift = solve(
        problem(places, riding, [Vehicle("a", start=0, until=250), Vehicle("b", start=1)], jobs),
        seconds=SECONDS,
    )
    a_run = shift.runs.get("a", [])
    assert all(stop.arrival <= 250 for stop in a_run)
    assert shift.feasible and shift.overtime == 0
    assert sum(len(run) for run in shift.runs.values()) == 3
    assert shift.cost == 500  # B rides all three (500 s); A and B sharing costs more


def test_each_vehicle_rides_its_own_profile():
    # A bicycle at 0 and a motorbike at 3; the drop at 1. On one shared matrix the bicycle
    # is nearer (100 s against 200 s); at ten times slower it is not (1,000 s).
    places, riding = line(0, 3, 1)
    vehicles = [Vehicle("bicycle", start=0, profile="slow"), Vehicle("motorbike", start=1)]
    matrices = {"default": riding, "slow": riding * 10}
    plan = solve(
        problem(places, riding, vehicles, [Job("d", "o", drop=2)], matrices=matrices),
        seconds=SECONDS,
    )
    assert set(plan.runs) == {"motorbike"}
    assert plan.runs["motorbike"][0].arrival == 200 and plan.cost == 200
    everyone_slow = solve(
        problem(
            places,
            riding,
            [Vehicle("bicycle", start=0, profile="slow"), Vehicle("motorbike", 1, profile="slow")],
            [Job("d", "o", drop=2)],
            matrices=matrices,
        ),
        seconds=SECONDS,
    )
    assert set(everyone_slow.runs) == {"bicycle"} and everyone_slow.cost == 1000


def test_the_objective_is_the_distances_when_given():
    # From 0, drops at +1 and -2. Riding seconds say +1 first (100 + 300 = 400 s against
    # 500 s); distances that make the way to +1 dear say -2 first. Arrivals ride the seconds.
    places, riding = line(0, 1, -2)
    distances = riding.copy()
    distances[0, 1] = distances[1, 0] = 10_000
    jobs = [Job("east", "o1", drop=1), Job("west", "o2", drop=2)]
    plan = solve(
        problem(places, riding, [Vehicle("c", start=0)], jobs, distances={"default": distances}),
        seconds=SECONDS,
    )
    assert visits(plan, "c") == [("drop", "west"), ("drop", "east")]
    assert [stop.arrival for stop in plan.runs["c"]] == [200, 500]
    assert plan.cost == 500


def test_jobs_may_share_a_place():
    # Three parcels of one order picked up at the shop (1) and dropped at one building (2),
    # a fourth on board for the same building, each drop handled in 60 s.
    places, riding = line(0, 1, 2)
    jobs = [Job(f"p{n}", "shop", drop=2, pickup=1, drop_service=60) for n in range(3)]
    jobs.append(Job("aboard", "earlier", drop=2, drop_service=60))
    plan = solve(problem(places, riding, [Vehicle("c", start=0)], jobs), seconds=SECONDS)
    run = plan.runs["c"]
    assert [stop.kind for stop in run] == ["pickup"] * 3 + ["drop"] * 4
    assert [stop.place for stop in run] == [1, 1, 1, 2, 2, 2, 2]
    assert sorted(stop.job for stop in run if stop.kind == "drop") == ["aboard", "p0", "p1", "p2"]
    assert [stop.arrival for stop in run] == [100, 100, 100, 200, 260, 320, 380]
    assert plan.cost == 200


def test_no_jobs_is_an_empty_plan():
    places, riding = line(0)
    plan = solve(problem(places, riding, [Vehicle("c", start=0)], []), seconds=SECONDS)
    assert plan == Plan(runs={}, cost=0, late_seconds=0, feasible=True)


def test_an_order_stays_whole_on_one_vehicle():
    # Couriers at 0 and 10; one order's two drops at 1 and 9. Each courier taking the drop
    # next to it is 200 s, but splits the order: one courier rides both, 900 s.
    places, riding = line(0, 10, 1, 9)
    jobs = [Job("west", "order", drop=2, pickup=None), Job("east", "order", drop=3)]
    plan = solve(
        problem(places, riding, [Vehicle("a", start=0), Vehicle("b", start=1)], jobs),
        seconds=SECONDS,
    )
    assert len(plan.runs) == 1
    (run,) = plan.runs.values()
    assert sorted(stop.job for stop in run) == ["east", "west"]
    assert plan.cost == 900


def test_a_parcel_bound_to_its_courier_stays_there_with_its_whole_order():
    # B (at 10) carries a parcel for 1, near A (at 0); its order has a second drop at 2,
    # not yet bound. Both stay on B (10→2→1, 900 s) though A is 800 s nearer; another
    # order's drop at -1 is A's.
    places, riding = line(0, 10, 1, 2, -1)
    jobs = [
        Job("aboard", "order", drop=2, vehicle="b"),
        Job("same-order", "order", drop=3),
        Job("other", "another", drop=4),
    ]
    plan = solve(
        problem(places, riding, [Vehicle("a", start=0), Vehicle("b", start=1)], jobs),
        seconds=SECONDS,
    )
    assert [(stop.job, stop.arrival) for stop in plan.runs["b"]] == [
        ("same-order", 800),
        ("aboard", 900),
    ]
    assert [stop.job for stop in plan.runs["a"]] == ["other"]
    assert plan.cost == 1000


def test_a_stalled_search_ends_before_its_time_with_the_same_plan():
    import time

    places, riding = line(0, 1, 2, 3)
    vehicles = [Vehicle("v", 0)]
    jobs = [Job(f"j{x}", f"g{x}", drop=x, pickup=0) for x in (1, 2, 3)]
    started = time.monotonic()
    quick = solve(problem(places, riding, vehicles, jobs), seconds=20, stall=50)
    assert time.monotonic() - started < 10  # well before the 20 s it was given
    assert visits(quick, "v")[-1] == ("drop", "j3")  # the far drop last: the best plan


def test_places_no_job_uses_are_left_out_and_stops_name_the_problems_own_places():
    # Ten places; the courier at 7 and one parcel from 2 to 9: the solver sees three places,
    # and the plan's stops name places 2 and 9 of the problem given, with its riding times.
    places, riding = line(*range(10))
    job = Job("d", "o", drop=9, pickup=2, drop_service=30)
    plan = solve(problem(places, riding, [Vehicle("c", start=7)], [job]), seconds=SECONDS)
    assert [(stop.kind, stop.place) for stop in plan.runs["c"]] == [("pickup", 2), ("drop", 9)]
    assert [stop.arrival for stop in plan.runs["c"]] == [500, 1200]
    assert plan.cost == 1200


def test_a_search_from_a_poor_start_finds_the_best_run_and_carries_every_job():
    # Two parcels picked up at 1 and dropped at 2 and 3; the start rides 1→3→2 back and
    # forth on the wrong vehicle's share of the work: the best is 0→1→2→3 (300 s) on "near".
    places, riding = line(0, 1, 2, 3, 10)
    jobs = [Job("a", "oa", drop=2, pickup=1), Job("b", "ob", drop=3, pickup=1)]
    vehicles = [Vehicle("near", start=0), Vehicle("far", start=4)]
    start = {"far": [("pickup", "b"), ("pickup", "a"), ("drop", "b"), ("drop", "a")]}
    plan = solve(problem(places, riding, vehicles, jobs, start=start), seconds=SECONDS)
    ridden = visits(plan, "near")
    assert set(ridden[:2]) == {("pickup", "a"), ("pickup", "b")}  # both at 1, either first
    assert ridden[2:] == [("drop", "a"), ("drop", "b")]
    assert "far" not in plan.runs and plan.cost == 300 and plan.feasible


@pytest.mark.parametrize(
    ("start", "why"),
    [
        ({"c": [("pickup", "a"), ("drop", "a")]}, "leaves jobs out"),
        (
            {"c": [("drop", "a"), ("pickup", "a"), ("pickup", "b"), ("drop", "b")]},
            "before its pickup",
        ),
        ({"c": [("pickup", "a"), ("pickup", "a"), ("drop", "a")]}, "more than once"),
        (
            {"x": [("pickup", "a"), ("drop", "a"), ("pickup", "b"), ("drop", "b")]},
            "unknown vehicle",
        ),
        (
            {"c": [("pickup", "a")], "d": [("drop", "a"), ("pickup", "b"), ("drop", "b")]},
            "before its pickup",
        ),
    ],
)
def test_a_start_that_is_not_a_plan_of_every_job_is_refused(start, why):
    places, riding = line(0, 1, 2)
    jobs = [Job("a", "oa", drop=2, pickup=1), Job("b", "ob", drop=2, pickup=1)]
    vehicles = [Vehicle("c", start=0), Vehicle("d", start=0)]
    with pytest.raises(ValueError, match=why):
        solve(problem(places, riding, vehicles, jobs, start=start), seconds=SECONDS)


def test_a_start_that_moves_a_job_bound_through_its_group_is_refused():
    # "a" is bound to "c", and with it "b", of the same order: "b" cannot start on "d".
    places, riding = line(0, 1, 2)
    jobs = [Job("a", "o", drop=2, pickup=1, vehicle="c"), Job("b", "o", drop=2, pickup=1)]
    vehicles = [Vehicle("c", start=0), Vehicle("d", start=0)]
    start = {"c": [("pickup", "a"), ("drop", "a")], "d": [("pickup", "b"), ("drop", "b")]}
    with pytest.raises(ValueError, match="not bound to"):
        solve(problem(places, riding, vehicles, jobs, start=start), seconds=SECONDS)
