"""The planner's problem, read from the database (dispatch/planner.py): the couriers who may
be offered more, the stops still to do of their runs, and the waiting orders, as the
solver's places, vehicles and jobs (dispatch/solver.py).

- A courier is a vehicle starting where they are now, with their vehicle type's
  `max_load_kg` (in grams), a run ending within RUN_HORIZON_MINUTES and their shift's end;
  an open route (a run ends at its last stop). A courier with nothing to do may take one
  order however long it is, and an order longer than the horizon by itself may end a run
  past it (within the shift): else such an order would never be offered.
- A drop is a job: picked up at its order's pickup, dropped at its place (a drop going back,
  RETURNING or FAILED to return, at the pickup). A drop already picked up is on board:
  loaded at the courier's start. Its window, in seconds from now, is the drop's; a drop
  without one is due by the promise the ETA model made for it (`due_by`), so that the
  solver spreads orders over couriers instead of piling them on the one nearest the shops
  (the least riding alone would: an open run costs nothing for growing long).
- Every stop takes HANDLING_MINUTES, an order's pickup once (its first parcel's; the
  courier takes all its parcels at once); riding times come from dispatch/travel.py at
  COURIER_SPEED_KMH.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from uuid import UUID

import numpy as np
from django.conf import settings

from core.rows import Shape
from dispatch.insertion import insert_order
from dispatch.solver import Job, Problem, Stop, Vehicle
from dispatch.travel import travel_times
from fleet.models import VehicleType
from orders.models import Drop, DropStatus
from orders.runs import DROP, PICKUP, run_drops, stops_of, to_do
from orders.statuses import NOT_PICKED_UP, ON_THE_WAY

# A waiting order's drop, as the planner reads it.
WAITING_DROP = Shape(
    "WaitingDrop",
    drop_id="pk",
    order_id="order_id",
    lat="lat",
    long="long",
    weight_kg="parcel_weight_kg",
    window_start="window_start",
    window_end="window_end",
    stop_sequence="stop_sequence",
    route_km="route_km",
    order_created_at="order__created_at",
    pickup_scheduled_at="order__pickup_scheduled_at",
)
# How long past the ETA model's drop-off time (docs/contract.md §14) a drop without a
# window is due: the solver's lateness starts there. Long enough that drops with windows come
# first when couriers are short (docs/decisions.md).
DUE_SLACK = timedelta(minutes=120)
# Among how many of the couriers nearest its pickup a waiting order is placed in the fleet
# search's start (start_of): the search moves it on from there.
START_AMONG = 8

GRAMS = Decimal(1000)


@dataclass
class Fleet:
    """The couriers, their runs and the waiting orders, as places, vehicles and jobs."""

    now: datetime
    service: int  # seconds at every stop
    places: list = field(default_factory=list)
    matrix: np.ndarray | None = None
    vehicles: dict[int, Vehicle] = field(default_factory=dict)
    kind_of_courier: dict[int, str] = field(default_factory=dict)
    # Seconds to each courier's shift's end (None: no end): what bounds an idle courier's one
    # order, which RUN_HORIZON_MINUTES does not.
    shift_left: dict[int, int | None] = field(default_factory=dict)
    courier_of_key: dict[str, int] = field(default_factory=dict)
    committed: dict[int, list[Job]] = field(default_factory=dict)
    # The same work as the shared problem holds it: held to its courier (below).
    held: dict[int, list[Job]] = field(default_factory=dict)
    run_stops: dict[int, list] = field(default_factory=dict)  # to do, in today's order
    waiting_jobs: dict[UUID, list[Job]] = field(default_factory=dict)
    kind_of_order: dict[UUID, str] = field(default_factory=dict)
    pickup_place: dict[UUID, int] = field(default_factory=dict)
    cod_orders: set[UUID] = field(default_factory=set)
    waiting_order_of_job: dict[str, UUID] = field(default_factory=dict)
    order_of_job: dict[str, UUID] = field(default_factory=dict)

    def place(self, lat: float, long: float) -> int:
        self.places.append((lat, long))
        return len(self.places) - 1

    def window(self, start: datetime | None, end: datetime | None) -> tuple[int, int] | None:
        """A drop's window in seconds from now (a past end: now)."""
        if start is None and end is None:
            return None
        if start is not None and end is None:
            end = start + timedelta(days=1)
        early = 0 if start is None else max(int((start - self.now).total_seconds()), 0)
        late = 10**9 if end is None else max(int((end - self.now).total_seconds()), 0)
        return (min(early, late), late)

    def all_jobs(self) -> list[Job]:
        committed = [job for jobs in self.committed.values() for job in jobs]
        return committed + [job for jobs in self.waiting_jobs.values() for job in jobs]

    def couriers_of_kind(self, kind: str) -> list[int]:
        return [c for c, courier_kind in self.kind_of_courier.items() if courier_kind == kind]

    def problems(self) -> dict[str, Problem]:
        """One problem per vehicle type with waiting orders and couriers."""
        problems = {}
        for kind in sorted(set(self.kind_of_order.values())):
            couriers = self.couriers_of_kind(kind)
            if not couriers:
                continue
            jobs = [job for c in couriers for job in self.held[c]]
            orders = [o for o, order_kind in self.kind_of_order.items() if order_kind == kind]
            for order_id in orders:
                jobs += self.waiting_jobs[order_id]
            vehicles = [self.vehicles[c] for c in couriers]
            start = start_of(self, couriers, orders)
            problems[kind] = Problem(
                self.places, {"default": self.matrix}, vehicles, jobs, start=start
            )
        return problems

    def holds(self, vehicle: Vehicle, jobs: list[Job], stops: list[Stop]) -> bool:
        """Whether these stops carry every job, each picked up before its drop, never over
        the vehicle's load, ending within its shift."""
        by_key = {job.key: job for job in jobs}
        load = sum(job.load for job in jobs if job.pickup is None)
        picked = {job.key for job in jobs if job.pickup is None}
        dropped = set()
        for stop in stops:
            job = by_key.get(stop.job)
            if job is None:
                return False
            if stop.kind == PICKUP:
                load += job.load
                picked.add(job.key)
            elif job.key not in picked:
                return False
            else:
                load -= job.load
                dropped.add(job.key)
            if load > vehicle.capacity:
                return False
        if dropped != set(by_key):
            return False
        last = stops[-1].arrival + self.service if stops else 0
        return vehicle.until is None or last <= vehicle.until

    def due_in(self, order_id) -> int:
        """Seconds from now to the earliest end of a waiting order's drops' windows (a drop
        without one: when it is due, `due_by`)."""
        return min(job.window[1] for job in self.waiting_jobs[order_id])

    def own_seconds(self, order_id) -> int:
        """Riding and handling seconds of a waiting order by itself: its pickup, then its
        drops in stop order."""
        here = self.pickup_place[order_id]
        total = self.service
        for job in self.waiting_jobs[order_id]:
            total += int(self.matrix[here, job.drop]) + self.service
            here = job.drop
        return total

    def run_seconds(self, courier_id: int) -> int:
        """Riding and handling seconds through the courier's run as it stands."""
        here, total = self.vehicles[courier_id].start, 0
        for place in self.run_places(courier_id):
            total += int(self.matrix[here, place]) + self.service
            here = place
        return total

    def run_places(self, courier_id: int) -> list[int]:
        by_drop = {job.key: job for job in self.committed[courier_id]}
        places = []
        for stop in self.run_stops[courier_id]:
            if stop.kind == PICKUP:
                places.append(self.pickup_place[stop.order_id])
            else:
                places.append(by_drop[str(stop.drop_id)].drop)
        return places

    def offer_stops(self, stops: list[Stop]) -> list[dict]:
        """The solver's stops as an offer holds them: an order's pickup once (its first)."""
        picked: set = set()
        held = []
        for stop in stops:
            order_id = str(self.order_of_job[stop.job])
            if stop.kind == PICKUP:
                if order_id not in picked:
                    picked.add(order_id)
                    held.append({"kind": PICKUP, "pass_order_id": order_id, "drop_id": None})
            else:
                held.append({"kind": DROP, "pass_order_id": order_id, "drop_id": stop.job})
        return held


def start_of(fleet: Fleet, couriers: list[int], order_ids: list) -> dict[str, list]:
    """Where the fleet's search starts (Problem.start): each courier's run as it is (held:
    every parcel taken at their start, then their stops in today's order), and each waiting
    order, the most urgent first, inserted where it adds least (dispatch/insertion.py) among
    the START_AMONG couriers nearest its pickup (docs/decisions.md, "The fleet's search
    starts from the runs as they are")."""
    runs = {
        c: [(("run", n), place) for n, place in enumerate(fleet.run_places(c))] for c in couriers
    }
    for order_id in sorted(order_ids, key=fleet.due_in):
        jobs, pickup = fleet.waiting_jobs[order_id], fleet.pickup_place[order_id]
        nearest = heapq.nsmallest(
            START_AMONG, couriers, key=lambda c: fleet.matrix[fleet.vehicles[c].start, pickup]
        )
        tried = [
            (insert_order(
                fleet.matrix, start=fleet.vehicles[c].start, run=runs[c],
                pickup=(("order", order_id), pickup),
                drops=[(("drop", job.key), job.drop) for job in jobs],
            ), c)
            for c in nearest
        ]  # fmt: skip
        best, courier = min(tried, key=lambda t: t[0].added_seconds)
        places = dict(runs[courier]) | {("order", order_id): pickup}
        places |= {("drop", job.key): job.drop for job in jobs}
        runs[courier] = [(token, places[token]) for token in best.stops]
    return {fleet.vehicles[c].key: _steps(fleet, c, [t for t, _ in runs[c]]) for c in couriers}


def _steps(fleet: Fleet, courier_id: int, tokens: list) -> list[tuple[str, str]]:
    """A courier's start as the solver's steps: their held parcels' pickups, then each token
    (a stop of their run, a waiting order's pickup, one of its drops) in riding order."""
    held = fleet.held[courier_id]
    steps = [("pickup", job.key) for job in held]
    run_keys = [
        f"pickup:{stop.order_id}" if stop.kind == PICKUP else str(stop.drop_id)
        for stop in fleet.run_stops[courier_id]
    ]
    for kind, value in tokens:
        if kind == "run":
            steps.append(("drop", run_keys[value]))
        elif kind == "order":
            steps += [("pickup", job.key) for job in fleet.waiting_jobs[value]]
        else:
            steps.append(("drop", value))
    return steps


def read_fleet(waiting: list, couriers: list, *, now: datetime) -> Fleet:
    """The problem of these Waiting orders and CANDIDATE couriers (dispatch.dispatcher)."""
    fleet = Fleet(now=now, service=settings.HANDLING_MINUTES * 60)
    capacity = {
        code: int(kg * GRAMS) for code, kg in VehicleType.objects.values_list("code", "max_load_kg")
    }
    for courier in couriers:
        _add_courier(fleet, courier, capacity.get(courier.vehicle, 10**9))
    for courier_id, drops in run_drops([c.courier_id for c in couriers]).items():
        _add_run(fleet, courier_id, drops)
    _add_waiting(fleet, waiting)
    fleet.matrix = travel_times().seconds(fleet.places, speed_kmh=settings.COURIER_SPEED_KMH)
    return fleet


def _add_courier(fleet: Fleet, courier, capacity: int) -> None:
    """A courier as a vehicle: from where they are, their vehicle's load, a run that ends
    within RUN_HORIZON_MINUTES and their shift."""
    until = settings.RUN_HORIZON_MINUTES * 60
    shift_left = None
    if courier.shift_ends_at is not None:
        shift_left = max(int((courier.shift_ends_at - fleet.now).total_seconds()), 0)
        until = min(until, shift_left)
    key = str(courier.courier_id)
    fleet.shift_left[courier.courier_id] = shift_left
    fleet.vehicles[courier.courier_id] = Vehicle(
        key, fleet.place(courier.lat, courier.long), capacity=capacity, until=until
    )
    fleet.courier_of_key[key] = courier.courier_id
    fleet.kind_of_courier[courier.courier_id] = courier.vehicle


def due_by(drop) -> datetime:
    """When a drop without a window is due (a RUN_DROP or WAITING_DROP row): the ETA model's
    drop-off time from its order's pickup time (DISPATCH_MINUTES, the ride to it at
    COURIER_SPEED_KMH, HANDLING_MINUTES per stop up to it), plus DUE_SLACK."""
    since = drop.pickup_scheduled_at or drop.order_created_at
    ride = timedelta(hours=(drop.route_km or 0.0) / settings.COURIER_SPEED_KMH)
    handling = timedelta(minutes=settings.HANDLING_MINUTES * (1 + (drop.stop_sequence or 1)))
    return since + timedelta(minutes=settings.DISPATCH_MINUTES) + ride + handling + DUE_SLACK


def _window_of(fleet: Fleet, drop) -> tuple[int, int] | None:
    if drop.window_end is None and drop.window_start is None:
        return fleet.window(None, due_by(drop))
    return fleet.window(drop.window_start, drop.window_end)


def _add_run(fleet: Fleet, courier_id: int, drops: list) -> None:
    """The courier's run: its stops to do, and a job per drop still to carry."""
    stops = to_do(stops_of(drops))
    fleet.run_stops[courier_id] = stops
    jobs = []
    for drop in drops:
        if drop.order_id not in fleet.pickup_place:
            fleet.pickup_place[drop.order_id] = fleet.place(drop.pickup_lat, drop.pickup_long)
    picking: set = set()  # the orders whose pickup is counted already
    for stop in stops:
        if stop.kind != DROP:
            continue
        drop = next(d for d in drops if d.drop_id == stop.drop_id)
        waits = drop.status in NOT_PICKED_UP
        ahead = drop.status in ON_THE_WAY  # a drop going back has no window to meet
        job = Job(
            str(drop.drop_id), str(drop.order_id), fleet.place(stop.lat, stop.long),
            pickup=fleet.pickup_place[drop.order_id] if waits else None,
            load=int(drop.weight_kg * GRAMS),
            window=_window_of(fleet, drop) if ahead else None,
            pickup_service=0 if drop.order_id in picking else fleet.service,
            drop_service=fleet.service,
        )  # fmt: skip
        if waits:
            picking.add(drop.order_id)
        fleet.order_of_job[job.key] = drop.order_id
        jobs.append(job)
    fleet.committed[courier_id] = jobs
    fleet.held[courier_id] = held_to(fleet, courier_id, jobs, stops)


def held_to(fleet: Fleet, courier_id: int, jobs: list[Job], stops: list) -> list[Job]:
    """The courier's run as the shared problem holds it, so that no other courier can take
    it there (the solver would hand it to whoever is cheapest, and misjudge who is free):
    every parcel "picked up" at the courier's own start at once (a pickup window of 0 s that
    only they can meet), and a visit to each pickup still to do. The run's true order is
    the courier's own solve's (dispatch/planner.sequence_run)."""
    start = fleet.vehicles[courier_id].start
    now = (0, 0)
    held = [replace(job, pickup=start, pickup_window=now, pickup_service=0) for job in jobs]
    for stop in stops:
        if stop.kind == PICKUP:
            held.append(
                Job(
                    f"pickup:{stop.order_id}",
                    str(stop.order_id),
                    drop=fleet.pickup_place[stop.order_id],
                    pickup=start,
                    pickup_window=now,
                    drop_service=fleet.service,
                )  # fmt: skip
            )
    return held


def _add_waiting(fleet: Fleet, waiting: list) -> None:
    """The waiting orders' pending drops, as jobs picked up at their order's pickup."""
    by_id = {w.order_id: w for w in waiting}
    rows = Drop.objects.filter(order_id__in=list(by_id), status=DropStatus.PENDING).order_by(
        "order_id", "stop_sequence", "pk"
    )
    for drop in WAITING_DROP.rows(rows.values_list(*WAITING_DROP.expressions)):
        order = by_id[drop.order_id]
        if drop.order_id not in fleet.waiting_jobs:
            fleet.waiting_jobs[drop.order_id] = []
            fleet.kind_of_order[drop.order_id] = order.vehicle
            fleet.pickup_place[drop.order_id] = fleet.place(order.lat, order.long)
            if order.cod:
                fleet.cod_orders.add(drop.order_id)
        first = not fleet.waiting_jobs[drop.order_id]
        job = Job(
            str(drop.drop_id), str(drop.order_id), fleet.place(drop.lat, drop.long),
            pickup=fleet.pickup_place[drop.order_id], load=int(drop.weight_kg * GRAMS),
            window=_window_of(fleet, drop),
            pickup_service=fleet.service if first else 0, drop_service=fleet.service,
        )  # fmt: skip
        fleet.waiting_jobs[drop.order_id].append(job)
        fleet.waiting_order_of_job[job.key] = drop.order_id
        fleet.order_of_job[job.key] = drop.order_id
