"""The planning problem and the one call to the solver (docs/dispatch.md "The solver").

Pure: no database, no settings. The planner (and bench/solomon.py) builds a Problem, and
solve() hands it to PyVRP and reads the routes back as runs of stops.

How a Problem becomes PyVRP's ProblemData:

- every place is a PyVRP location (x = long, y = lat); several jobs and vehicles may share
  one, since PyVRP's clients, shipment steps and depots each point at a location;
- a vehicle's start (and its end, when it has one) is a depot at that place; an open route
  (``end=None``) ends at one extra location, "anywhere", 0 seconds from and to every
  place, so the run ends where its last stop is;
- each vehicle is a VehicleType riding the matrix of its profile, ``until`` its
  ``tw_late``; vehicles alike in everything (start, end, capacity, profile, shift, bound
  jobs) share one type with ``num_available`` of them: PyVRP searches many identical
  types slower (the Solomon bench's average gap was 0.98% with a type per vehicle, 0.51%
  with one type for alike vehicles, both full runs on a busy machine);
- a job with ``pickup=None`` is a Client delivering its load (loaded at the vehicle's
  start: on board already, or at the depot); a job with a pickup is a Shipment from the
  pickup to the drop carrying its load; its window is on the drop;
- every job is required: a window is never a reason to leave a job out;
- PyVRP has no "same vehicle" rule, so a group stays whole this way: a job bound to a
  vehicle (``Job.vehicle``, and with it every job of its group) gets its own copy of its
  places, which every other vehicle's profile puts out of reach (``MAX_VALUE``); when a
  group of several unbound jobs could split, half the time is searched freely; if a group
  came out split, every group of several jobs is bound to the vehicle carrying most of it,
  and the search goes on from that solution for the other half.

How ``late`` is read. PyVRP's time windows are hard with a penalty: a route that reaches a
stop after its window "warps" back to the window's end (``time_warp``), so PyVRP's
schedule after a late stop is earlier than a courier can be. So solve() takes only the
order of the stops from PyVRP and rides it again on the riding-time matrix: the vehicle
leaves its start at 0 (now); ``arrival`` = the previous stop's service end + the ride;
service starts at max(arrival, window start) and lasts the step's service seconds;
``late`` = max(0, arrival − window end), 0 without a window. Leaving at once never arrives
later than leaving after, so when PyVRP's plan has no time warp every ``late`` is 0; when a
window cannot be met, the lateness it causes further down the run is counted too.
``Plan.overtime`` is how far past ``until`` the run ends (at its end place, or at its
last stop's service end on an open route).
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

import numpy as np
import pyvrp
from pyvrp.constants import MAX_VALUE
from pyvrp.exceptions import PenaltyBoundWarning
from pyvrp.stop import MaxRuntime, MultipleCriteria, NoImprovement

Place = tuple[float, float]  # (lat, long)


@dataclass(frozen=True, slots=True)
class Vehicle:
    key: str  # the courier's id (or "v3" in the bench)
    start: int  # index into Problem.places
    end: int | None = None  # None: the run ends at its last stop (open route)
    capacity: int = 10**9  # load units (grams in production)
    profile: str = "default"  # which matrix of Problem.matrices it rides
    until: int | None = None  # the shift's end, seconds from now (None: no end)


@dataclass(frozen=True, slots=True)
class Job:
    """One parcel."""

    key: str  # the drop's id
    group: str  # its order: a group's jobs belong on one vehicle
    drop: int  # index into places
    pickup: int | None = None  # None: loaded at the vehicle's start (on board already;
    # in the Solomon bench: at the depot)
    load: int = 0
    window: tuple[int, int] | None = None  # drop time window, seconds from now
    pickup_service: int = 0
    drop_service: int = 0
    vehicle: str | None = None  # Vehicle.key that must carry it (on board, or accepted);
    # None: any. Binding one job of a group binds the whole group.
    pickup_window: tuple[int, int] | None = None  # the pickup's time window, seconds from
    # now: (0, 0) at a vehicle's own start holds the job to that vehicle cheaply (no other
    # is there at once), where binding it would cost a matrix per vehicle.


@dataclass(frozen=True, slots=True)
class Problem:
    places: list[Place]  # used for the solver's neighbourhoods (coordinates) only
    matrices: dict[str, np.ndarray]  # profile -> int64 seconds (riding time), square
    vehicles: list[Vehicle]
    jobs: list[Job]
    # What the objective minimises, per profile; None: the riding seconds themselves.
    distances: dict[str, np.ndarray] | None = None
    # Where the search starts: each vehicle's steps in riding order, as (kind, Job.key) with
    # kind "pickup" or "drop", every job once; None: from no routes at all. A start close to
    # the answer spares the search's first descent, which places every job (seconds over a
    # fleet's hundreds of jobs, whatever the time limit: PyVRP stops between descents).
    start: dict[str, list[tuple[str, str]]] | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    kind: str  # "pickup" | "drop"
    job: str  # Job.key
    group: str
    place: int
    arrival: int  # seconds from now (service starts at max(arrival, window start))
    late: int  # seconds past the window's end (0 when met or no window)


@dataclass(frozen=True, slots=True)
class Plan:
    runs: dict[str, list[Stop]]  # vehicle key -> its stops in riding order (only vehicles used)
    cost: int  # the objective (sum of distances) of the plan
    late_seconds: int
    feasible: bool  # PyVRP's own verdict
    overtime: int = 0  # seconds the runs end past their vehicles' `until`, summed


def solve(
    problem: Problem,
    *,
    seconds: float,
    seed: int = 0,
    stall: int | None = None,
    whole_groups: bool = True,
) -> Plan:
    """The plan PyVRP finds in `seconds`: every job on a run, pickups before their drops,
    loads within capacity, windows met wherever they can be, each group on one vehicle,
    least total distance. With `stall`, the search ends sooner once that many iterations in
    a row found no better plan (a small problem is solved long before its time is up).

    `whole_groups=False` lets the plan split a group, for a caller that places each group
    itself (the planner gives an order to the courier carrying most of it): binding groups
    costs a matrix per vehicle (below), which on a fleet of 60 took a third of the time."""
    _check(problem)
    if not problem.jobs:
        return Plan(runs={}, cost=0, late_seconds=0, feasible=True)
    compact, used = _compact(problem)
    plan = _solve(compact, seconds=seconds, seed=seed, stall=stall, whole_groups=whole_groups)
    if len(used) == len(problem.places):
        return plan
    runs = {
        key: [replace(stop, place=used[stop.place]) for stop in stops]
        for key, stops in plan.runs.items()
    }
    return replace(plan, runs=runs)


def _compact(problem: Problem) -> tuple[Problem, list[int]]:
    """The problem over the places its vehicles and jobs use, and each place's index in the
    problem given: one courier's run uses a dozen of the fleet's hundreds of places, and the
    model's matrices are places² (solve maps the stops back)."""
    vehicles, jobs = problem.vehicles, problem.jobs
    used = sorted(
        {v.start for v in vehicles}
        | {v.end for v in vehicles if v.end is not None}
        | {job.drop for job in jobs}
        | {job.pickup for job in jobs if job.pickup is not None}
    )
    if len(used) == len(problem.places):
        return problem, used
    new = {old: index for index, old in enumerate(used)}
    rows = np.ix_(used, used)
    return Problem(
        places=[problem.places[old] for old in used],
        matrices={profile: np.asarray(m)[rows] for profile, m in problem.matrices.items()},
        vehicles=[
            replace(v, start=new[v.start], end=None if v.end is None else new[v.end])
            for v in vehicles
        ],
        jobs=[
            replace(job, drop=new[job.drop], pickup=None if job.pickup is None else new[job.pickup])
            for job in jobs
        ],
        distances=None
        if problem.distances is None
        else {profile: np.asarray(m)[rows] for profile, m in problem.distances.items()},
        start=problem.start,
    ), used


def _solve(
    problem: Problem, *, seconds: float, seed: int, stall: int | None, whole_groups: bool
) -> Plan:
    bound = _bound(problem)
    model = _Model(problem, bound)
    start = model.solution(problem.start) if problem.start is not None else None
    if not whole_groups or not _may_split(problem, bound):
        return model.plan(_search(model, seconds=seconds, seed=seed, stall=stall, start=start))
    # PyVRP has no "same vehicle" rule: half the time unbound; if it split a group, every
    # group of several jobs is bound to the vehicle carrying most of it (so none can split
    # in the second half), and the search goes on from there.
    first = _search(model, seconds=seconds / 2, seed=seed, stall=stall, start=start)
    holders, split = model.holders(first)
    if not split:
        return model.plan(first)
    bound |= {job.key: holders[job.group] for job in problem.jobs if job.group in holders}
    first_model, model = model, _Model(problem, bound)
    return model.plan(
        _search(
            model,
            seconds=seconds / 2,
            seed=seed,
            stall=stall,
            start=model.warm(first, first_model),
        )
    )


def _search(
    model: _Model,
    *,
    seconds: float,
    seed: int,
    stall: int | None = None,
    start: pyvrp.Solution | None = None,
) -> pyvrp.Solution:
    stop = MaxRuntime(seconds)
    if stall is not None:
        stop = MultipleCriteria([stop, NoImprovement(stall)])
    with warnings.catch_warnings():
        # A window no run can meet keeps PyVRP's time-warp penalty at its ceiling, and it
        # warns. Here that is a planned lateness (read into Stop.late), not a fault.
        warnings.simplefilter("ignore", PenaltyBoundWarning)
        result = pyvrp.solve(
            model.data,
            stop=stop,
            seed=seed,
            collect_stats=False,
            display=False,
            initial_solution=start,
        )
    return result.best


def _bound(problem: Problem) -> dict[str, str]:
    """Job key -> the vehicle that must carry it: every job of a group with a bound job."""
    group_vehicle = {job.group: job.vehicle for job in problem.jobs if job.vehicle is not None}
    return {job.key: group_vehicle[job.group] for job in problem.jobs if job.group in group_vehicle}


def _may_split(problem: Problem, bound: dict[str, str]) -> bool:
    """Whether a group could end on two vehicles: more than one vehicle, and a group of
    several jobs not bound already."""
    if len(problem.vehicles) < 2:
        return False
    groups = [job.group for job in problem.jobs if job.key not in bound]
    return len(set(groups)) < len(groups)


def _check(problem: Problem) -> None:
    """ValueError naming what is inconsistent: the caller built the problem wrong."""
    size = len(problem.places)
    for name, matrices in (("matrices", problem.matrices), ("distances", problem.distances)):
        for profile, matrix in (matrices or {}).items():
            if np.shape(matrix) != (size, size):
                raise ValueError(f"{name}[{profile!r}] is not {size} × {size}, one per place.")
    if problem.distances is not None and set(problem.distances) != set(problem.matrices):
        raise ValueError("distances must have the same profiles as matrices.")
    if problem.jobs and not problem.vehicles:
        raise ValueError("There are jobs and no vehicle.")
    for vehicle in problem.vehicles:
        if vehicle.profile not in problem.matrices:
            raise ValueError(f"Vehicle {vehicle.key} rides an unknown profile {vehicle.profile!r}.")
        for place in (vehicle.start, vehicle.end):
            if place is not None and not 0 <= place < size:
                raise ValueError(f"Vehicle {vehicle.key} names place {place}: there are {size}.")
    for job in problem.jobs:
        for place in (job.pickup, job.drop):
            if place is not None and not 0 <= place < size:
                raise ValueError(f"Job {job.key} names place {place}: there are {size}.")
        if job.window is not None and job.window[0] > job.window[1]:
            raise ValueError(f"Job {job.key}'s window ends before it starts.")
    keys = {vehicle.key for vehicle in problem.vehicles}
    carriers: dict[str, str] = {}
    for job in problem.jobs:
        if job.vehicle is None:
            continue
        if job.vehicle not in keys:
            raise ValueError(f"Job {job.key} is bound to an unknown vehicle {job.vehicle!r}.")
        if carriers.setdefault(job.group, job.vehicle) != job.vehicle:
            raise ValueError(f"Group {job.group} is bound to two vehicles.")
    if problem.start is not None:
        _check_start(problem, keys)


def _check_start(problem: Problem, keys: set[str]) -> None:
    """Problem.start names known vehicles, and every job once: its pickup (if it has one)
    before its drop, on the vehicle it is bound to (if it is)."""
    jobs = {job.key: job for job in problem.jobs}
    bound = _bound(problem)  # a bound job binds its whole group
    expected = {
        (k, job.key)
        for job in problem.jobs
        for k in ("pickup", "drop")
        if k == "drop" or job.pickup is not None
    }
    seen: set[tuple[str, str]] = set()
    for vehicle_key, steps in problem.start.items():
        if vehicle_key not in keys:
            raise ValueError(f"The start names an unknown vehicle {vehicle_key!r}.")
        picked: set[str] = set()  # on this vehicle
        for kind, key in steps:
            job = jobs.get(key)
            if (kind, key) not in expected or (kind, key) in seen:
                raise ValueError(
                    f"The start has step {kind} {key!r} more than once, or no such step."
                )
            if kind == "drop" and job.pickup is not None and key not in picked:
                raise ValueError(f"The start drops {key!r} before its pickup on that vehicle.")
            if bound.get(key, vehicle_key) != vehicle_key:
                raise ValueError(f"The start puts {key!r} on a vehicle it is not bound to.")
            seen.add((kind, key))
            if kind == "pickup":
                picked.add(key)
    if seen != expected:
        raise ValueError("The start leaves jobs out: every job's steps must be on a vehicle.")


class _Model:
    """The ProblemData of one Problem, and the index maps to read PyVRP's routes back.

    PyVRP's locations ("sites" here) are the places, then "anywhere" when a route is open,
    then a copy of the place of each step of a bound job: only its vehicle's profile can
    reach the copy (every other vehicle's distance to it is MAX_VALUE). A profile is a
    matrix of Problem.matrices as ridden by one vehicle with bound jobs, or by all the rest.
    """

    def __init__(self, problem: Problem, bound: dict[str, str]) -> None:
        self.problem, self.bound = problem, bound
        places = len(problem.places)
        self.open_routes = any(vehicle.end is None for vehicle in problem.vehicles)
        self.anywhere = places  # where open routes end: 0 s from and to everything
        self.sites = list(range(places + self.open_routes))
        self.site_of: dict[tuple[str, str], int] = {}  # (job key, "pickup"|"drop") -> site
        self.owner: dict[int, str] = {}  # site of a bound step -> its vehicle
        for job in problem.jobs:
            for kind, place in (("pickup", job.pickup), ("drop", job.drop)):
                if place is not None and job.key in bound:
                    self.site_of[job.key, kind] = len(self.sites)
                    self.owner[len(self.sites)] = bound[job.key]
                    self.sites.append(place)
        self.clients = [job for job in problem.jobs if job.pickup is None]
        self.shipments = [job for job in problem.jobs if job.pickup is not None]
        ends = {vehicle.end for vehicle in problem.vehicles if vehicle.end is not None}
        self.depot_places = sorted({vehicle.start for vehicle in problem.vehicles} | ends)
        if self.open_routes:
            self.depot_places.append(self.anywhere)
        self.depot_of = {place: index for index, place in enumerate(self.depot_places)}
        owners = set(bound.values())
        self.profiles = sorted(
            {(v.profile, v.key if v.key in owners else "") for v in problem.vehicles}
        )
        # Vehicles alike in every respect are one VehicleType (num_available > 1): PyVRP
        # searches faster over few types, and which of them rides which run is all one.
        alike: dict[tuple, list[Vehicle]] = {}
        for vehicle in problem.vehicles:
            alike.setdefault(self._signature(vehicle), []).append(vehicle)
        self.types = list(alike.values())
        self.type_of = {v.key: index for index, same in enumerate(self.types) for v in same}
        self.data = pyvrp.ProblemData(
            locations=self._locations(),
            clients=[self._client(job) for job in self.clients],
            depots=[pyvrp.Depot(location=place) for place in self.depot_places],
            vehicle_types=[self._vehicle_type(same) for same in self.types],
            distance_matrices=[self._matrix(p, self._distances(p[0])) for p in self.profiles],
            duration_matrices=[self._matrix(p, problem.matrices[p[0]]) for p in self.profiles],
            shipments=[self._shipment(job) for job in self.shipments],
        )

    def _locations(self) -> list[pyvrp.Location]:
        places = self.problem.places
        return [
            pyvrp.Location(x=0.0, y=0.0, name="anywhere")
            if site == self.anywhere
            else pyvrp.Location(x=places[site][1], y=places[site][0])
            for site in self.sites
        ]

    def _distances(self, profile: str) -> np.ndarray:
        distances = self.problem.distances
        return self.problem.matrices[profile] if distances is None else distances[profile]

    def _matrix(self, profile: tuple[str, str], matrix: np.ndarray) -> np.ndarray:
        """The places' matrix over the sites ("anywhere" a row and column of zeros), each
        bound step out of reach of every vehicle but its own."""
        padded = np.pad(np.asarray(matrix, dtype=np.int64), ((0, 1), (0, 1)))
        sites = np.asarray(self.sites)
        sites[sites == self.anywhere] = len(padded) - 1
        out = padded[np.ix_(sites, sites)]
        others = [site for site, owner in self.owner.items() if owner != profile[1]]
        out[others, :] = MAX_VALUE
        out[:, others] = MAX_VALUE
        np.fill_diagonal(out, 0)
        return out

    def vehicles(self, solution: pyvrp.Solution) -> list[tuple[Vehicle, pyvrp.Route]]:
        """Each route with the vehicle riding it: a type's routes take its vehicles in turn."""
        free = [list(same) for same in self.types]
        return [(free[route.vehicle_type()].pop(0), route) for route in solution.routes()]

    def solution(self, runs: dict[str, list[tuple[str, str]]]) -> pyvrp.Solution:
        """Problem.start as PyVRP's solution: a route per vehicle with steps."""
        index = {job.key: ("client", n) for n, job in enumerate(self.clients)}
        index |= {job.key: ("shipment", n) for n, job in enumerate(self.shipments)}
        routes = []
        for vehicle_key, steps in runs.items():
            activities = []
            for kind, key in steps:
                what, n = index[key]
                if what == "client":
                    activities.append(pyvrp.Activity(pyvrp.ActivityType.CLIENT, n))
                elif kind == "pickup":
                    activities.append(pyvrp.Activity(pyvrp.ActivityType.PICKUP, n))
                else:
                    activities.append(pyvrp.Activity(pyvrp.ActivityType.DELIVERY, n))
            if activities:
                routes.append(pyvrp.Route(self.data, activities, self.type_of[vehicle_key]))
        return pyvrp.Solution(self.data, routes)

    def warm(self, solution: pyvrp.Solution, model: _Model) -> pyvrp.Solution:
        """The other model's solution of the same problem, as a start for this one."""
        routes = [
            pyvrp.Route(
                self.data,
                [pyvrp.Activity(a.type, a.idx) for a in route if not a.is_depot()],
                self.type_of[vehicle.key],
            )
            for vehicle, route in model.vehicles(solution)
        ]
        return pyvrp.Solution(self.data, routes)

    def holders(self, solution: pyvrp.Solution) -> tuple[dict[str, str], bool]:
        """Each group of several jobs -> the vehicle carrying most of them; and whether any
        group is on two vehicles or more."""
        carried: dict[str, Counter[str]] = defaultdict(Counter)
        for vehicle, route in self.vehicles(solution):
            for activity in route:
                if not activity.is_depot() and not activity.is_pickup():
                    carried[self._step(activity)[1].group][vehicle.key] += 1
        several = {group: counts for group, counts in carried.items() if counts.total() > 1}
        return (
            {group: counts.most_common(1)[0][0] for group, counts in several.items()},
            any(len(counts) > 1 for counts in several.values()),
        )

    def _client(self, job: Job) -> pyvrp.Client:
        return pyvrp.Client(
            location=self._site(job, "drop"),
            delivery=[job.load],
            pickup=[0],
            service_duration=job.drop_service,
            required=True,
            name=job.key,
            **_window(job),
        )

    def _shipment(self, job: Job) -> pyvrp.Shipment:
        return pyvrp.Shipment(
            pickup_location=self._site(job, "pickup"),
            delivery_location=self._site(job, "drop"),
            pickup_service_duration=job.pickup_service,
            delivery_service_duration=job.drop_service,
            amount=[job.load],
            required=True,
            name=job.key,
            **{f"delivery_{bound}": value for bound, value in _window(job).items()},
            **{f"pickup_{bound}": value for bound, value in _pickup_window(job).items()},
        )

    def _site(self, job: Job, kind: str) -> int:
        """Where PyVRP finds this step: the place itself, or the bound job's own copy."""
        place = job.drop if kind == "drop" else job.pickup
        return self.site_of.get((job.key, kind), place)

    def _signature(self, vehicle: Vehicle) -> tuple:
        owner = vehicle.key if vehicle.key in set(self.bound.values()) else ""
        return (vehicle.start, vehicle.end, vehicle.capacity, vehicle.profile, owner, vehicle.until)

    def _vehicle_type(self, same: list[Vehicle]) -> pyvrp.VehicleType:
        start, end, capacity, profile, owner, until = self._signature(same[0])
        shift = {} if until is None else {"tw_late": max(until, 0)}
        return pyvrp.VehicleType(
            num_available=len(same),
            capacity=[capacity],
            start_depot=self.depot_of[start],
            end_depot=self.depot_of[self.anywhere if end is None else end],
            profile=self.profiles.index((profile, owner)),
            name=",".join(vehicle.key for vehicle in same),
            **shift,
        )

    def plan(self, solution: pyvrp.Solution) -> Plan:
        runs: dict[str, list[Stop]] = {}
        overtime = 0
        for vehicle, route in self.vehicles(solution):
            steps = [self._step(activity) for activity in route if not activity.is_depot()]
            if steps:
                runs[vehicle.key], ends_at = self._ride(vehicle, steps)
                if vehicle.until is not None:
                    overtime += max(ends_at - vehicle.until, 0)
        return Plan(
            runs=runs,
            cost=int(solution.distance()),
            late_seconds=sum(stop.late for stops in runs.values() for stop in stops),
            feasible=solution.is_feasible(),
            overtime=overtime,
        )

    def _step(self, activity: pyvrp.Activity) -> tuple[str, Job]:
        """PyVRP's activity as (kind, job): a client's idx counts clients, a pickup's or a
        delivery's counts shipments."""
        if activity.is_client():
            return "drop", self.clients[activity.idx]
        if activity.is_pickup():
            return "pickup", self.shipments[activity.idx]
        return "drop", self.shipments[activity.idx]

    def _ride(self, vehicle: Vehicle, steps: list[tuple[str, Job]]) -> tuple[list[Stop], int]:
        """The stops as the courier rides them from now, without PyVRP's time warp (see the
        module's docstring), and when the run ends."""
        riding = self.problem.matrices[vehicle.profile]
        now, at, stops = 0, vehicle.start, []
        for kind, job in steps:
            place = job.drop if kind == "drop" else job.pickup
            arrival = now + int(riding[at, place])
            early, late_by = (None, None) if kind == "pickup" or job.window is None else job.window
            late = 0 if late_by is None else max(arrival - late_by, 0)
            service = job.drop_service if kind == "drop" else job.pickup_service
            now = max(arrival, early or 0) + service
            stops.append(Stop(kind, job.key, job.group, place, arrival, late))
            at = place
        if vehicle.end is not None:
            now += int(riding[at, vehicle.end])
        return stops, now


def _pickup_window(job: Job) -> dict[str, int]:
    if job.pickup_window is None:
        return {}
    return {"tw_early": max(job.pickup_window[0], 0), "tw_late": max(job.pickup_window[1], 0)}


def _window(job: Job) -> dict[str, int]:
    """The drop's window as PyVRP's tw_early/tw_late (a past one as [0, 0]: due now)."""
    if job.window is None:
        return {}
    return {"tw_early": max(job.window[0], 0), "tw_late": max(job.window[1], 0)}
