"""The simulated day, the measure of the planner (docs/dispatch.md "The simulated day"): one
day of shops, couriers and orders, replayed through the real API, planner and courier API on
PostgreSQL, planned in runs (DISPATCH_PLANNER "runs") and dispatched one order at a time to
the nearest courier ("nearest"), on the same day.

Run from the project root (``make bench`` does this)::

    .venv/bin/python bench/day.py [--couriers 60] [--shops 80] [--orders 1500] [--hours 10]
        [--seed 21] [--mode both|runs|nearest] [--plan-limit SECONDS] [--json PATH]

The set-up is bench/bulk.py's throwaway PostgreSQL, migrated and seeded (the demo area open
all day); the shops (live businesses with a big balance) and the couriers (motorbikes with a
password) are made once, and each mode runs on its own copy of that database (CREATE
DATABASE ... TEMPLATE), Django in-process. The clock (time_machine) moves in steps of
PLAN_SECONDS from 08:00 in Asia/Phnom_Penh of a fixed date. Each step:

1. every courier rides on to now along its route (haversine x ROAD_FACTOR at
   COURIER_SPEED_KMH, HANDLING_MINUTES at each stop), moving its drops through
   POST /courier/drops/<id>/move as it finishes a stop (at a drop, waiting for its window
   to open, as the route's stop says), and posts where it is;
2. the orders arriving by now are posted, one live batch per arrival (POST /orders/bulk);
3. the planner (plan_runs) or the baseline (dispatch_waiting) runs once, timed;
4. every courier offered something looks at GET /courier/offer and accepts, then reads its
   route (the app's offer poll, without the polls that would find nothing).

A courier posts where it is every REPORT_EVERY (30 s).

Orders arrive uniformly over --hours from 08:00; after the last one the day goes on until
every order is delivered, for at most 5 more hours (23:00 for the full day). Printed per
mode: km per delivered drop, total km, windows met, orders delivered, orders per
courier-hour, the planning run's time, offers made and accepted; then the comparison and the
targets' PASS or FAIL (exit 1 on a FAIL). Couriers do not hand cash in during the day, so
the bench lifts COURIER_CASH_LIMIT: the cash limit would otherwise decide who gets COD
orders late in the day, in both modes, and blur what the planner does.

Nothing is left running: the cluster is stopped on success, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import signal
import sys
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the project importable
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.bulk import DB_NAME, BenchError, manage, start_database  # noqa: E402

CENTRE = (11.5564, 104.9282)  # the demo area (Phnom Penh)
# The demo area's box (geo/demo.py), a little inside: a drop outside it would be rejected.
AREA = ((11.455, 104.805), (11.695, 104.995))
DAY = date(2030, 6, 4)  # a Tuesday, after anything the set-up writes at the real time
ZONE = ZoneInfo("Asia/Phnom_Penh")
OPENS = datetime(DAY.year, DAY.month, DAY.day, 8, tzinfo=ZONE)
AFTER_HOURS = timedelta(hours=5)  # the day goes on this long after the last arrival
# How often a courier's phone posts where it is (the courier app's interval).
REPORT_EVERY = timedelta(seconds=30)
KM_PER_DEGREE = 111.195
EARTH_KM = 6371.0088
PASSWORD = "bench-courier-password"
# The targets (docs/dispatch.md "The simulated day").
FEWER_KM_PERCENT = 25.0
WINDOWS_MET_PERCENT = 98.0
PLANNING_P95_SECONDS = 3.0
HOURS_SNIPPET = (
    "from datetime import time\nfrom geo.models import OpeningHours\n"
    "OpeningHours.objects.filter(area__name='Phnom Penh')"
    ".update(opens=time(0), closes=time(23, 59, 59, 999999))"
)


# --- The day: where the shops and couriers are, and the orders, from the seed alone -------


@dataclass(frozen=True, slots=True)
class Arrival:
    """One order arriving: its shop, its drops (lat, long), a window or not, COD or not."""

    at: datetime
    shop: int
    drops: tuple[tuple[float, float], ...]
    windowed: bool
    cod: str | None  # the amount each of its drops collects


@dataclass(frozen=True, slots=True)
class Day:
    shops: list[tuple[float, float]]
    starts: list[tuple[float, float]]  # each courier's place at 08:00
    arrivals: list[Arrival]


def around(rng: random.Random, place: tuple[float, float], km: float) -> tuple[float, float]:
    """A point uniformly at random within `km` of `place`, inside the demo area."""
    while True:
        reach, bearing = km * math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
        lat = place[0] + reach * math.cos(bearing) / KM_PER_DEGREE
        long = place[1] + reach * math.sin(bearing) / (KM_PER_DEGREE * math.cos(math.radians(lat)))
        if AREA[0][0] <= lat <= AREA[1][0] and AREA[0][1] <= long <= AREA[1][1]:
            return lat, long


def plan_day(*, couriers: int, shops: int, orders: int, hours: float, seed: int) -> Day:
    """The day's shops, couriers' starts and arrivals (by time): the same for a seed."""
    rng = random.Random(seed)
    shop_places = [around(rng, CENTRE, 6.0) for _ in range(shops)]
    starts = [around(rng, CENTRE, 5.0) for _ in range(couriers)]
    arrivals = []
    for _ in range(orders):
        at = OPENS + timedelta(seconds=rng.uniform(0, hours * 3600))
        shop = rng.randrange(shops)
        drops = tuple(around(rng, shop_places[shop], 4.0) for _ in range(rng.randint(1, 3)))
        windowed = rng.random() < 0.4
        cod = f"{rng.randint(2, 40)}.{rng.choice(('00', '50'))}" if rng.random() < 0.5 else None
        arrivals.append(Arrival(at, shop, drops, windowed, cod))
    return Day(shop_places, starts, sorted(arrivals, key=lambda a: a.at))


def road_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Haversine x ROAD_FACTOR: the planner's travel model (dispatch/travel.py)."""
    from django.conf import settings

    lat1, long1, lat2, long2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((long2 - long1) / 2) ** 2
    )
    return 2 * EARTH_KM * math.asin(math.sqrt(h)) * settings.ROAD_FACTOR


def load_of(day: Day, *, hours: float) -> str:
    """The work the day asks of its couriers, against their hours while orders arrive: the
    handling (HANDLING_MINUTES at every pickup and drop) and the riding of each order by
    itself (its pickup, then its drops in their shortest order: no ride to the pickup, no
    sharing), at COURIER_SPEED_KMH."""
    from django.conf import settings

    stops = sum(1 + len(arrival.drops) for arrival in day.arrivals)
    handling = stops * settings.HANDLING_MINUTES / 60
    km = 0.0
    for arrival in day.arrivals:
        shop = day.shops[arrival.shop]
        km += min(
            sum(road_km(a, b) for a, b in itertools.pairwise((shop, *order)))
            for order in itertools.permutations(arrival.drops)
        )
    riding = km / settings.COURIER_SPEED_KMH
    there = len(day.starts) * hours
    return (
        f"the day's load: {handling:.0f} h of handling ({stops} stops) + {riding:.0f} h riding "
        f"each order by itself ({km:.0f} km) = {handling + riding:.0f} courier-hours, against "
        f"{there:.0f} courier-hours while the orders arrive ({len(day.starts)} x {hours:g} h)"
    )


# --- The API, in-process: django.test.Client through middleware, authentication and DRF ---


def call(client, method: str, path: str, body: dict | None = None, **headers) -> dict:
    """The answer's `data`; a BenchError for anything but a 2xx (a 409 OFFER_GONE aside)."""
    send = getattr(client, method)
    if body is None:
        answer = send(path, **headers)
    else:
        answer = send(path, json.dumps(body), content_type="application/json", **headers)
    if answer.status_code == 409 and b"OFFER_GONE" in answer.content:
        return {}
    if not 200 <= answer.status_code < 300:
        raise BenchError(f"{method.upper()} {path}: {answer.status_code} {answer.content[:400]!r}")
    return answer.json()["data"]


def post_arrival(client, key: str, arrival: Arrival, shop: tuple[float, float], n: int) -> None:
    """One arrival as a live batch of one pickup group; refused whole if a drop is rejected."""
    window = None
    if arrival.windowed:
        start = arrival.at + timedelta(minutes=30)
        window = {"start": iso(start), "end": iso(start + timedelta(hours=2))}
    drops = []
    for d, (lat, long) in enumerate(arrival.drops):
        drop = {
            "client_order_id": f"DAY-{n}-{d}",
            "dropoff": {"name": "Recipient", "phone": "+85512345679", "lat": lat, "long": long},
        }
        if window:
            drop["dropoff_window"] = window
        if arrival.cod:
            drop["cod"] = {"amount": arrival.cod}
        drops.append(drop)
    pickup = {"name": f"Shop {arrival.shop}", "phone": "+85512345678", "lat": shop[0],
              "long": shop[1]}  # fmt: skip
    body = {"client_batch_id": f"DAY-{n}", "orders": [{"pickup": pickup, "dropoff": drops}]}
    data = call(
        client, "post", "/api/v1/orders/bulk", body,
        HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )  # fmt: skip
    if data["counts"]["rejected"]:
        rejected = [o for o in data["orders"] if o["status"] != "accepted"]
        raise BenchError(f"an order was rejected: {json.dumps(rejected)[:1000]}")


def iso(moment: datetime) -> str:
    return moment.isoformat()


def opens_at(stop: dict) -> datetime:
    """When a stop may be handled: a drop's window's start, else at once."""
    window = stop.get("dropoff_window")
    return datetime.fromisoformat(window["start"]) if window else datetime.min.replace(tzinfo=ZONE)


# --- A courier, riding its route through the courier API ----------------------------------


@dataclass
class Courier:
    client: object  # a django.test.Client carrying the courier's token
    courier_id: int
    place: tuple[float, float]
    at: datetime  # when the courier was at `place` (or finished the stop it handles)
    route: dict | None = None
    handling: dict | None = None  # the stop the courier is at, until `handling_until`
    handling_until: datetime | None = None
    km: float = 0.0
    offers_seen: int = 0
    offers_accepted: int = 0

    def read_route(self) -> None:
        self.route = call(self.client, "get", "/api/v1/courier/route")["route"]

    def next_stop(self) -> dict | None:
        """The first stop of the route still to do: a pickup with a parcel waiting, or a drop
        carried."""
        for stop in (self.route or {}).get("stops", []):
            if stop["kind"] == "pickup" and not stop["done"]:
                return stop
            if stop["kind"] == "drop" and stop["status"] == "PICKED_UP":
                return stop
        return None

    def ride_until(self, now: datetime) -> None:
        """Ride on and handle stops until `now`; stop where the clock finds the courier."""
        from django.conf import settings

        speed = settings.COURIER_SPEED_KMH
        while True:
            if self.handling is not None:
                if self.handling_until > now:
                    return
                self.finish(self.handling)
                self.at, self.handling = self.handling_until, None
            stop = self.next_stop()
            if stop is None:
                self.at = max(self.at, now)
                return
            target = (stop["lat"], stop["long"])
            km = road_km(self.place, target)
            arrives = self.at + timedelta(hours=km / speed)
            if arrives > now:  # on the way when the clock stops: part of the leg
                share = (now - self.at) / (arrives - self.at)
                self.km += km * share
                self.place = tuple(
                    p + (t - p) * share for p, t in zip(self.place, target, strict=True)
                )
                self.at = now
                return
            self.km += km
            self.place, self.at = target, arrives
            self.handling = stop
            begins = max(arrives, opens_at(stop))  # never handed over before its window
            self.handling_until = begins + timedelta(minutes=settings.HANDLING_MINUTES)

    def finish(self, stop: dict) -> None:
        """The moves of a stop: at a pickup each of the order's ASSIGNED drops PICKED_UP;
        at a drop DELIVERED, with the cash when it has some; then the route as it is now."""
        if stop["kind"] == "pickup":
            for drop in self.route["stops"]:
                if (
                    drop["kind"] == "drop"
                    and drop["pass_order_id"] == stop["pass_order_id"]
                    and drop["status"] == "ASSIGNED"
                ):
                    self.move(drop["drop_id"], {"to": "PICKED_UP"})
        else:
            body = {"to": "DELIVERED"}
            if stop["cod"]:
                body["cod_collected"] = True
            self.move(stop["drop_id"], body)
        self.read_route()

    def move(self, drop_id: str, body: dict) -> None:
        call(self.client, "post", f"/api/v1/courier/drops/{drop_id}/move", body)

    def report_place(self, now: datetime) -> None:
        point = {"lat": self.place[0], "long": self.place[1], "at": iso(now)}
        call(self.client, "post", "/api/v1/courier/location", {"points": [point]})

    def take_offer(self) -> None:
        """Every offer is accepted; the run changes with it, so the route is read again."""
        offer = call(self.client, "get", "/api/v1/courier/offer")["offer"]
        if offer is None:
            return
        self.offers_seen += 1
        if call(self.client, "post", f"/api/v1/courier/offers/{offer['offer_id']}/accept"):
            self.offers_accepted += 1
        self.read_route()


# --- Set-up: the database once, a copy per mode ------------------------------------------


def make_people(day: Day) -> list[str]:
    """The shops (live businesses, a big balance each: their keys) and the couriers
    (motorbikes with a password), in the database every mode copies."""
    from decimal import Decimal

    from console.provisioning import provision_business
    from couriers.services import provision_courier

    keys = [
        provision_business(
            name=f"Shop {i}", email=f"shop{i}@example.com", live_balance=Decimal("100000000")
        ).live_key
        for i in range(len(day.shops))
    ]
    for i in range(len(day.starts)):
        provision_courier(
            name=f"Courier {i}", phone=courier_phone(i), vehicle="motorbike", password=PASSWORD
        )
    return keys


def courier_phone(i: int) -> str:
    return f"+855129{i:05d}"


def use_database(admin_url: str, name: str) -> None:
    """A fresh copy of the seeded database, and Django's connection pointed at it."""
    from django.db import connection

    connection.close()
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {DB_NAME}")
    connection.settings_dict["NAME"] = name


def sign_in_couriers(day: Day) -> list[Courier]:
    """Every courier signs in, goes online and says where they are: at 08:00."""
    from django.test import Client

    couriers = []
    for i, place in enumerate(day.starts):
        client = Client()
        signed = call(
            client, "post", "/api/v1/courier/session",
            {"phone": courier_phone(i), "password": PASSWORD},
        )  # fmt: skip
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {signed['token']}"
        call(client, "post", "/api/v1/courier/status", {"online": True})
        courier = Courier(client, signed["courier_id"], place, OPENS)
        courier.report_place(OPENS)
        couriers.append(courier)
    return couriers


# --- One mode's day ------------------------------------------------------------------------


@dataclass
class Figures:
    mode: str
    couriers: int
    orders: int = 0
    orders_delivered: int = 0
    drops: int = 0
    drops_delivered: int = 0
    km: float = 0.0
    windowed: int = 0
    windows_met: int = 0
    last_delivery_hours: float = 0.0  # from 08:00
    # The wall-clock seconds of each call with waiting orders to plan (or dispatch); the
    # calls that found none (a few ms each) are only counted.
    planning: list[float] = field(default_factory=list)
    idle_runs: int = 0
    offers_made: int = 0
    offers_accepted: int = 0
    orders_per_courier: list[int] = field(default_factory=list)  # most first
    left_on: dict[str, int] = field(default_factory=dict)  # courier: orders not delivered
    ended_at: str = ""

    @property
    def km_per_drop(self) -> float:
        return self.km / self.drops_delivered if self.drops_delivered else math.inf

    @property
    def windows_met_percent(self) -> float:
        return 100.0 * self.windows_met / self.windowed if self.windowed else 100.0

    @property
    def orders_per_courier_hour(self) -> float:
        hours = self.couriers * self.last_delivery_hours
        return self.orders_delivered / hours if hours else 0.0

    def planning_quantile(self, q: float) -> float:
        times = sorted(self.planning)
        return times[min(len(times) - 1, int(q * len(times)))] if times else 0.0


def run_day(mode: str, day: Day, keys: list[str]) -> Figures:
    """The day in one mode, on the database Django points at now."""
    import time_machine
    from django.conf import settings
    from django.test import Client

    from dispatch.dispatcher import dispatch_waiting
    from dispatch.planner import plan_runs

    settings.DISPATCH_PLANNER = mode
    dispatch = plan_runs if mode == "runs" else dispatch_waiting
    step = timedelta(seconds=settings.PLAN_SECONDS)
    last_arrival = day.arrivals[-1].at if day.arrivals else OPENS
    closes = max(last_arrival, OPENS) + AFTER_HOURS
    figures, shop_client = Figures(mode, len(day.starts)), Client()
    with time_machine.travel(OPENS, tick=False) as clock:
        couriers = sign_in_couriers(day)
        now, posted = OPENS, 0
        while True:
            reporting = (now - OPENS) % REPORT_EVERY < step
            for courier in couriers:
                courier.ride_until(now)
                if reporting:
                    courier.report_place(now)
            while posted < len(day.arrivals) and day.arrivals[posted].at <= now:
                arrival = day.arrivals[posted]
                post_arrival(
                    shop_client, keys[arrival.shop], arrival, day.shops[arrival.shop], posted
                )
                posted += 1
            started = time.perf_counter()
            run = dispatch(now=now)
            took = time.perf_counter() - started
            if run.waiting:  # a run with orders to plan; the others only look
                figures.planning.append(took)
            else:
                figures.idle_runs += 1
            offered = {offer.courier_id for offer in run.offers}
            for courier in couriers:
                if courier.courier_id in offered:
                    courier.take_offer()
            if (posted == len(day.arrivals) and all_delivered()) or now >= closes:
                break
            now += step
            clock.move_to(now)
            progress(mode, now, posted, len(day.arrivals))
    figures.ended_at = now.astimezone(ZONE).strftime("%H:%M")
    figures.km = sum(courier.km for courier in couriers)
    count(figures)
    return figures


def all_delivered() -> bool:
    from orders.models import Drop, DropStatus

    return not Drop.objects.exclude(status=DropStatus.DELIVERED).filter(environment="live").exists()


def progress(mode: str, now: datetime, posted: int, total: int) -> None:
    if now.minute == 0 and now.second == 0:
        local = now.astimezone(ZONE).strftime("%H:%M")
        print(f"  {mode}: {local}, {posted}/{total} orders posted", flush=True)


def count(figures: Figures) -> None:
    """The day's outcome, as the database holds it."""
    from django.db.models import Count, F, Max, Q

    from dispatch.models import Offer, OfferStatus
    from orders.models import DeliveryEvent, Drop, DropStatus, Order

    drops = Drop.objects.filter(environment="live")
    delivered = drops.filter(status=DropStatus.DELIVERED)
    figures.drops, figures.drops_delivered = drops.count(), delivered.count()
    orders = Order.objects.filter(environment="live").annotate(
        left=Count("drops", filter=~Q(drops__status=DropStatus.DELIVERED))
    )
    figures.orders, figures.orders_delivered = orders.count(), orders.filter(left=0).count()
    figures.windowed = drops.filter(window_end__isnull=False).count()
    events = DeliveryEvent.objects.filter(status=DropStatus.DELIVERED, drop__environment="live")
    figures.windows_met = (
        events.filter(drop__window_end__isnull=False, at__lte=F("drop__window_end"))
        .values("drop_id")
        .distinct()
        .count()
    )
    last = events.aggregate(last=Max("at"))["last"]
    if last is not None:
        figures.last_delivery_hours = (last - OPENS).total_seconds() / 3600
    carriers = Counter(orders.exclude(driver=None).values_list("driver_id", flat=True))
    figures.orders_per_courier = sorted(carriers.values(), reverse=True)
    left = Counter(orders.filter(left__gt=0).values_list("driver_id", flat=True))
    figures.left_on = {str(courier): n for courier, n in left.items()}
    leads = Offer.objects.values("bundle").distinct()
    figures.offers_made = leads.count()
    figures.offers_accepted = leads.filter(status=OfferStatus.ACCEPTED).count()


# --- Report ---------------------------------------------------------------------------------


def report(figures: Figures) -> None:
    f, work = figures, "planning" if figures.mode == "runs" else "dispatch"
    hours = f"{f.couriers} couriers x {f.last_delivery_hours:.2f} h to the last delivery"
    times = (
        f"p50 {f.planning_quantile(0.5):.3f} s, p95 {f.planning_quantile(0.95):.3f} s, "
        f"max {max(f.planning, default=0):.3f} s over {len(f.planning)} runs with orders "
        f"waiting ({f.idle_runs} more found none)"
    )
    print(f"\n{f.mode}: the day ended at {f.ended_at}")
    print(f"  km per delivered drop   {f.km_per_drop:.2f} km ({f.km:.0f} km in all)")
    print(f"  windows met             {f.windows_met_percent:.1f}% ({f.windows_met}/{f.windowed})")
    print(f"  orders delivered        {f.orders_delivered}/{f.orders} ({f.drops_delivered}/"
          f"{f.drops} drops)")  # fmt: skip
    print(f"  orders per courier-hour {f.orders_per_courier_hour:.2f} ({hours})")
    print(f"  orders per courier      {', '.join(map(str, f.orders_per_courier))}")
    if f.left_on:
        print(f"  not delivered           {f.left_on} (courier: orders)")
    print(f"  {work} run time{' ' * (15 - len(work))}{times}")
    print(f"  offers                  {f.offers_made} made, {f.offers_accepted} accepted "
          "(every offer is accepted)")  # fmt: skip


def verdicts(runs: Figures | None, nearest: Figures | None) -> list[tuple[bool, str]]:
    """The targets, as (held, what): those of the modes that ran."""
    found = []
    if runs is not None and nearest is not None:
        fewer = 100.0 * (1 - runs.km_per_drop / nearest.km_per_drop)
        print(f"\nruns ride {fewer:.1f}% fewer km per delivered drop than nearest "
              f"({runs.km_per_drop:.2f} against {nearest.km_per_drop:.2f})")  # fmt: skip
        found.append((fewer >= FEWER_KM_PERCENT, f">= {FEWER_KM_PERCENT:.0f}% fewer km per drop"))
    for f in (runs, nearest):
        if f is None:
            continue
        every = f.orders_delivered == f.orders
        found.append((every, f"{f.mode}: every order delivered ({f.orders_delivered}/{f.orders})"))
    if runs is not None:
        met = runs.windows_met_percent
        found.append((met >= WINDOWS_MET_PERCENT, f"runs: >= 98% of windows met ({met:.1f}%)"))
        p95 = runs.planning_quantile(0.95)
        found.append((p95 <= PLANNING_P95_SECONDS, f"runs: planning p95 <= 3 s ({p95:.2f} s)"))
    return found


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--couriers", type=int, default=60)
    parser.add_argument("--shops", type=int, default=80)
    parser.add_argument("--orders", type=int, default=1500)
    parser.add_argument("--hours", type=float, default=10.0, help="orders arrive from 08:00")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--mode", choices=("both", "runs", "nearest"), default="both")
    parser.add_argument(
        "--plan-limit", type=float, default=None,
        help="PLAN_TIME_LIMIT_SECONDS for the day (default: the setting's, 2)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write each mode's figures here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    day = plan_day(couriers=args.couriers, shops=args.shops, orders=args.orders,
                   hours=args.hours, seed=args.seed)  # fmt: skip
    modes = ("runs", "nearest") if args.mode == "both" else (args.mode,)
    limit = {} if args.plan_limit is None else {"PLAN_TIME_LIMIT_SECONDS": str(args.plan_limit)}
    done: dict[str, Figures] = {}
    with contextlib.ExitStack() as cleanup:
        _, cluster, env = start_database(
            cleanup,
            ALLOWED_HOSTS="testserver",
            COURIER_CASH_LIMIT="100000000",
            LOG_LEVEL="WARNING",  # not a line per request
            **limit,
        )
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "seed_demo")
        manage(env, "shell", "-c", HOURS_SNIPPET)
        os.environ.update(env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        from django.conf import settings

        print(f"the day: {args.couriers} couriers, {args.shops} shops, {args.orders} orders "
              f"over {args.hours:g} h from 08:00 (seed {args.seed}); plan limit "
              f"{settings.PLAN_TIME_LIMIT_SECONDS:g} s", flush=True)  # fmt: skip
        print(load_of(day, hours=args.hours), flush=True)
        keys = make_people(day)
        for mode in modes:
            use_database(cluster.url("postgres"), f"day_{mode}")
            done[mode] = run_day(mode, day, keys)
        from django.db import connection

        connection.close()
    for figures in done.values():
        report(figures)
    found = verdicts(done.get("runs"), done.get("nearest"))
    for held, what in found:
        print(f"{'PASS' if held else 'FAIL'}  {what}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} (the other sessions' work)")
    if args.json:
        args.json.write_text(json.dumps({m: as_json(f) for m, f in done.items()}, indent=1))
    return 0 if all(held for held, _ in found) else 1


def as_json(figures: Figures) -> dict:
    out = asdict(figures)
    out["planning"] = {
        "p50": figures.planning_quantile(0.5),
        "p95": figures.planning_quantile(0.95),
        "max": max(figures.planning, default=0.0),
        "runs": len(figures.planning),
    }
    out |= {
        "km_per_drop": figures.km_per_drop,
        "windows_met_percent": figures.windows_met_percent,
        "orders_per_courier_hour": figures.orders_per_courier_hour,
    }
    return out


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
