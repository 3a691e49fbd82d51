"""The planner (docs/contract.md §21, docs/dispatch.md "Runs"): which waiting orders join
which courier's run, and the order of every stop not yet done.

One planning run (a periodic job, every PLAN_SECONDS, on whichever worker takes the slot;
several may run at once) does, whatever the number of orders:

1. expires the open offers whose time is up, closes the orders with nothing left to carry;
2. takes the waiting live orders with `FOR UPDATE SKIP LOCKED` (dispatch/dispatcher.py's
   queue: a second planner takes others, a mover's lock keeps an order for the next run),
   flags the overdue ones and numbers the drops of those not yet sequenced;
3. takes the couriers who may be offered more: online, active, real, a position under
   DISPATCH_POSITION_MINUTES old near the pickups, no open offer; their runs as they are;
4. solves, per vehicle type, one problem of those couriers (each from where they are, their
   vehicle's load, their shift's end) with the stops still to do of their runs and the
   waiting orders' pickups and drops (dispatch/solver.py, PLAN_TIME_LIMIT_SECONDS);
5. gives each waiting order whole to the courier whose plan holds most of its drops; an
   order that courier may not have (offered to them before, or cash to collect over their
   cash limit) goes where it costs least among those who may (dispatch/insertion.py);
6. orders each such courier's new run with the solver (their own stops and the additions
   only: what a courier accepted stays theirs, a picked-up parcel never moves), keeps the
   additions only if the load on board, the run's horizon (RUN_HORIZON_MINUTES) and the
   shift's end hold; an order of a run that would not hold is tried with the next couriers
   it would add least to; and offers them: one offer per courier, with the new stop order
   and the minutes it adds.
The constraints of dispatch.models stand behind every step.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from billing.custody import couriers_over_cash_limit
from core.ids import uuid7
from dispatch.dispatcher import (
    Run,
    close_orders_with_nothing_to_carry,
    expire_offers,
    lock_candidates,
    take_waiting,
    tried_pairs,
    waiting_of,
)
from dispatch.fleet_problem import Fleet, read_fleet
from dispatch.insertion import insert_order
from dispatch.models import Offer, OfferStatus
from dispatch.solver import Job, Plan, Problem, solve

# The seconds the solver has to order one courier's run (a few stops).
SEQUENCE_SECONDS = 0.05
# A planning run's search ends before PLAN_TIME_LIMIT_SECONDS once this many iterations in a
# row found no better plan: the few orders of a quiet moment are planned in a fraction of
# the limit, a rush uses all of it.
PLAN_STALL_ITERATIONS = 300
# The share of PLAN_TIME_LIMIT_SECONDS the fleet's search has; the rest is for sequencing
# each courier's run with its additions (always done, however late) and for retrying the
# orders a run could not take, the most urgent first (see _placed).
SEARCH_SHARE = 0.6
# How many other couriers an order whose run would not hold is tried with, in one run; and
# the share of PLAN_TIME_LIMIT_SECONDS the retries have at least, even past the limit, so
# that an order the search keeps giving to a run that cannot hold it is placed in the end.
RETRIES = 3
RETRY_SHARE = 0.25


@dataclass
class PlanRun(Run):
    """What one planning run did: the dispatcher's counts (its `offers` one lead per courier
    offered), and the time spent solving."""

    seconds: float = 0.0


def plan_runs(*, now: datetime | None = None, limit: int = 2000) -> PlanRun:
    """One planning run (see the module's docstring)."""
    now = now or timezone.now()
    run = PlanRun(expired=expire_offers(now), closed=close_orders_with_nothing_to_carry())
    with transaction.atomic():
        orders, run.flagged = take_waiting(now, limit)
        run.waiting = len(orders)
        if not orders:
            return run
        waiting = waiting_of(orders)
        couriers = lock_candidates(waiting, now, with_runs=True)
        run.candidates = len(couriers)
        if not couriers:
            return run
        fleet = read_fleet(waiting, couriers, now=now)
        started = time.monotonic()
        placed = plan_additions(fleet, tried=tried_pairs(orders))
        offers = offers_of(fleet, placed, now)
        run.seconds = time.monotonic() - started
        Offer.objects.bulk_create(offers)
        run.offers = [offer for offer in offers if offer.lead]
    return run


def plan_additions(fleet: Fleet, *, tried: set) -> dict[int, Sequenced]:
    """The waiting orders each courier's run gains, with the run they make: by courier id."""
    with_cod = any(fleet.cod_orders)
    over = couriers_over_cash_limit(list(fleet.vehicles)) if with_cod else set()
    allowed = Allowed(tried, over)
    chosen: dict[int, list] = defaultdict(list)
    seconds = settings.PLAN_TIME_LIMIT_SECONDS
    deadline = time.monotonic() + seconds
    for kind, problem in fleet.problems().items():
        share = SEARCH_SHARE * len(problem.jobs) / max(len(fleet.all_jobs()), 1)
        # Each order goes to the courier whose plan carries most of its drops (_holders),
        # and each courier's run is sequenced whole (sequence_run): the search may split one.
        plan = solve(
            problem,
            seconds=max(seconds * share, 0.2),
            stall=PLAN_STALL_ITERATIONS,
            whole_groups=False,
        )
        for order_id, courier_id in _holders(plan, fleet, kind).items():
            if allowed(fleet, order_id, courier_id):
                chosen[courier_id].append(order_id)
            else:  # the solver's choice may not have it: where it adds least among who may
                ranked = ranked_couriers(fleet, order_id, allowed)
                if ranked:
                    chosen[ranked[0]].append(order_id)
    return _placed(fleet, chosen, allowed, deadline)


@dataclass(frozen=True, slots=True)
class Sequenced:
    """A courier's run with its additions: the orders added, the run's stops as an offer
    holds them, and the seconds the additions add."""

    order_ids: list
    stops: list[dict]
    extra_seconds: int


@dataclass(frozen=True, slots=True)
class Allowed:
    """Whether a courier may be offered an order: never one offered to them before, nor one
    with cash to collect while they hold more than COURIER_CASH_LIMIT."""

    tried: set
    over: set

    def __call__(self, fleet: Fleet, order_id, courier_id: int) -> bool:
        if (order_id, courier_id) in self.tried:
            return False
        return not (order_id in fleet.cod_orders and courier_id in self.over)


def _placed(
    fleet: Fleet, chosen: dict[int, list], allowed: Allowed, deadline: float
) -> dict[int, Sequenced]:
    """Each courier's additions sequenced into their run; the orders of a run that would not
    hold (its load, its horizon or shift) are tried one by one, the most urgent first, with
    the couriers they would add least to, at most RETRIES each, then alone with a courier who
    has nothing to do, until the deadline (the time limit), or RETRY_SHARE of it at least:
    the rest wait for the next run.
    What the search chose is always sequenced, however late: a run that only searched would
    offer nothing, and the orders waiting would grow its next search."""
    placed: dict[int, Sequenced] = {}
    homeless = []
    for courier_id, order_ids in chosen.items():
        sequenced = sequence_run(fleet, courier_id, order_ids)
        if sequenced is None:
            homeless += order_ids
        else:
            placed[courier_id] = sequenced
    retries_end = max(deadline, time.monotonic() + settings.PLAN_TIME_LIMIT_SECONDS * RETRY_SHARE)
    for order_id in sorted(homeless, key=fleet.due_in):  # the most urgent first
        if time.monotonic() > retries_end:
            break
        ranked = ranked_couriers(fleet, order_id, allowed)
        if not _added_to_a_run(fleet, placed, order_id, ranked[:RETRIES]):
            idle = [c for c in ranked if c not in placed and not fleet.committed[c]]
            _added_to_a_run(fleet, placed, order_id, idle[:RETRIES], alone=True)
    return placed


def _added_to_a_run(
    fleet: Fleet, placed: dict[int, Sequenced], order_id, couriers: list[int], *, alone=False
) -> bool:
    """The order added to the first of these couriers' runs (with what they are offered
    already) that holds with it (`alone`: idle couriers, see sequence_run)."""
    for courier_id in couriers:
        order_ids = [*(placed[courier_id].order_ids if courier_id in placed else ()), order_id]
        sequenced = sequence_run(fleet, courier_id, order_ids, alone=alone)
        if sequenced is not None:
            placed[courier_id] = sequenced
            return True
    return False


def _holders(plan: Plan, fleet: Fleet, kind: str) -> dict:
    """Each waiting order of this vehicle type, to the courier whose plan holds most of its
    drops."""
    counts: dict = defaultdict(Counter)
    for vehicle_key, stops in plan.runs.items():
        for stop in stops:
            order_id = fleet.waiting_order_of_job.get(stop.job)
            if order_id is not None and stop.kind == "drop":
                counts[order_id][fleet.courier_of_key[vehicle_key]] += 1
    return {order_id: count.most_common(1)[0][0] for order_id, count in counts.items()}


def ranked_couriers(fleet: Fleet, order_id, allowed: Allowed) -> list[int]:
    """The couriers of the order's vehicle type who may have it, by the riding time it would
    add to their run (inserted where it adds least: dispatch/insertion.py)."""
    costs = []
    for courier_id in fleet.couriers_of_kind(fleet.kind_of_order[order_id]):
        if not allowed(fleet, order_id, courier_id):
            continue
        run = list(enumerate(fleet.run_places(courier_id)))  # its stops to do, in order
        added = insert_order(
            fleet.matrix,
            start=fleet.vehicles[courier_id].start,
            run=run,
            pickup=("pickup", fleet.pickup_place[order_id]),
            drops=[(job.key, job.drop) for job in fleet.waiting_jobs[order_id]],
        ).added_seconds
        costs.append((added, courier_id))
    return [courier_id for _, courier_id in sorted(costs)]


def offers_of(fleet: Fleet, placed: dict[int, Sequenced], now: datetime) -> list[Offer]:
    """One offer per courier with additions: a row per order, the lead's first."""
    expires = now + timedelta(seconds=settings.OFFER_SECONDS)
    offers: list[Offer] = []
    for courier_id, sequenced in placed.items():
        bundle = uuid7()
        for n, order_id in enumerate(sequenced.order_ids):
            lead = n == 0
            offers.append(
                Offer(
                    id=bundle if lead else uuid7(),
                    bundle=bundle,
                    lead=lead,
                    order_id=order_id,
                    courier_id=courier_id,
                    status=OfferStatus.OFFERED,
                    created_at=now,
                    expires_at=expires,
                    stops=sequenced.stops if lead else None,
                    extra_seconds=sequenced.extra_seconds if lead else None,
                )
            )
    return offers


def sequence_run(
    fleet: Fleet, courier_id: int, order_ids: list, *, alone: bool = False
) -> Sequenced | None:
    """The courier's run with these orders in it, ordered by the solver: its stops as an
    offer holds them and the seconds it adds; None when the load on board, the run's horizon
    or the shift's end would not hold. The horizon is not asked of an idle courier's one
    order (`alone`), nor of a run gaining an order longer than the horizon by itself: only
    the shift bounds those."""
    vehicle = fleet.vehicles[courier_id]
    if alone or any(_past_the_horizon(fleet, order_id) for order_id in order_ids):
        vehicle = replace(vehicle, until=fleet.shift_left[courier_id])
    jobs: list[Job] = list(fleet.committed[courier_id])
    for order_id in order_ids:
        jobs += fleet.waiting_jobs[order_id]
    problem = Problem(fleet.places, {"default": fleet.matrix}, [vehicle], jobs)
    plan = solve(problem, seconds=SEQUENCE_SECONDS, stall=PLAN_STALL_ITERATIONS)
    stops = plan.runs.get(vehicle.key, [])
    if not fleet.holds(vehicle, jobs, stops):
        return None
    before = fleet.run_seconds(courier_id)
    after = stops[-1].arrival + jobs_service(jobs, stops[-1].job) if stops else 0
    return Sequenced(list(order_ids), fleet.offer_stops(stops), max(after - before, 0))


def _past_the_horizon(fleet: Fleet, order_id) -> bool:
    """Whether an order may end a run past RUN_HORIZON_MINUTES: it is longer than that by
    itself."""
    return fleet.own_seconds(order_id) > settings.RUN_HORIZON_MINUTES * 60


def jobs_service(jobs: list[Job], key: str) -> int:
    return next((job.drop_service for job in jobs if job.key == key), 0)
