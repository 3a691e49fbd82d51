"""Simulated couriers for the cluster run (docs/performance.md, docs/dispatch.md).

Each courier is a thread speaking the courier API through the balancer, as the courier app
does (docs/api.md, "The courier API"): it signs in with its phone and password, goes
online, posts its position every POSITION_EVERY seconds around the integrators' pickup,
polls GET /courier/offer, declines about one offer in DECLINE_ONE_IN and accepts the
others, then walks the route it got: every stop PICKED_UP, then DELIVERED (with
`cod_collected: true` for a cash drop). The simulator cannot know a PIN: a stop that asks
one is failed (RECIPIENT_UNAVAILABLE) and walked back (RETURNING, RETURNED); the cluster's
live batches ask none.

A request that meets a fault (no answer, or the balancer's or the app's 502/503/504) is
sent again after a pause, at most RETRIES times: every courier call is safe to repeat (a
move sent again answers the stop as it is). Every status is counted; bench/cluster.py
fails the run on a 5xx other than the documented 503, and on any answer the courier API
does not document for what the simulator sends.
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson

PICKUP = (11.5564, 104.9282)  # bench/locustfile.py's pickup: the couriers wait around it
SPREAD = 0.02  # degrees (~2 km) around it
POSITION_EVERY = 3.0  # seconds between two positions
POLL_EVERY = 1.0  # seconds between two looks for an offer
DECLINE_ONE_IN = 5
RETRIES = 10
PASSWORD = "cluster-courier-pass"
# What the simulator may hear besides 200: an offer that expired or was withdrawn while it
# answered (OFFER_GONE), a move its stop no longer allows (ILLEGAL_TRANSITION: the drop was
# cancelled under it); 0 and 503 only during a fault, and only before a retry.
EXPECTED = {200, 409, 503, 0}

# One process, one round trip: couriers made in bulk by the service's own function.
PROVISION_SNIPPET = """
import json
from couriers.services import provision_courier
made = [
    provision_courier(name=f"Sim Courier {{i:02d}}", phone=f"+8551600{{i:04d}}",
                      vehicle="motorbike", password={password!r}).pk
    for i in range({count})
]
print(json.dumps(made))
"""


@dataclass
class Tally:
    """What the couriers did and heard, summed over all of them."""

    statuses: Counter = field(default_factory=Counter)  # "<call> <status>" -> count
    offers_seen: int = 0
    accepted: int = 0
    declined: int = 0
    gone: int = 0  # accept or decline answered 409 OFFER_GONE
    moves: Counter = field(default_factory=Counter)  # to -> count
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def unexpected(self) -> dict[str, int]:
        return {
            call: n
            for call, n in self.statuses.items()
            if int(call.rsplit(" ", 1)[1]) not in EXPECTED
        }


class SimCourier(threading.Thread):
    def __init__(self, fleet: Fleet, number: int) -> None:
        super().__init__(name=f"courier-{number}", daemon=True)
        self.fleet, self.phone = fleet, f"+8551600{number:04d}"
        self.token = ""
        self.lat = PICKUP[0] + random.uniform(-SPREAD, SPREAD)
        self.long = PICKUP[1] + random.uniform(-SPREAD, SPREAD)
        self.next_position = 0.0

    # --- calls ---------------------------------------------------------------------------

    def call(self, method: str, path: str, name: str, body=None) -> tuple[int, dict | None]:
        """One call through the balancer, sent again while a fault answers for it."""
        status, answer = 0, None
        for _ in range(RETRIES):
            status, answer = self._once(method, path, body)
            with self.fleet.tally.lock:
                self.fleet.tally.statuses[f"{name} {status}"] += 1
            if status not in (0, 502, 503, 504):
                return status, answer
            time.sleep(1.0)
        return status, answer

    def _once(self, method: str, path: str, body) -> tuple[int, dict | None]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn = http.client.HTTPConnection(self.fleet.host, self.fleet.port, timeout=30)
            conn.request(method, path, orjson.dumps(body) if body is not None else None, headers)
            response = conn.getresponse()
            raw = response.read()
            conn.close()
        except (OSError, http.client.HTTPException):
            return 0, None
        try:
            return response.status, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:  # an HTML page: never expected, counted as its status
            return response.status, None

    # --- the day -------------------------------------------------------------------------

    def run(self) -> None:
        status, answer = self.call(
            "POST", "/api/v1/courier/session", "session",
            {"phone": self.phone, "password": PASSWORD},
        )  # fmt: skip
        if status != 200:
            return
        self.token = answer["data"]["token"]
        self.call("POST", "/api/v1/courier/status", "status", {"online": True})
        while not self.fleet.stopping.is_set():
            self.post_position()
            status, answer = self.call("GET", "/api/v1/courier/offer", "offer")
            offer = (answer or {}).get("data", {}).get("offer") if status == 200 else None
            if offer is not None:
                self.answer(offer)
            self.fleet.stopping.wait(POLL_EVERY)

    def post_position(self) -> None:
        if time.monotonic() < self.next_position:
            return
        self.next_position = time.monotonic() + POSITION_EVERY
        self.lat += random.uniform(-0.001, 0.001)
        self.long += random.uniform(-0.001, 0.001)
        at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        point = {"lat": round(self.lat, 6), "long": round(self.long, 6), "at": at, "accuracy": 10}
        self.call("POST", "/api/v1/courier/location", "location", {"points": [point]})

    def answer(self, offer: dict) -> None:
        self.fleet.tally.add(offers_seen=1)
        decline = not self.fleet.accept_all and random.randrange(DECLINE_ONE_IN) == 0
        verb = "decline" if decline else "accept"
        status, answer = self.call(
            "POST", f"/api/v1/courier/offers/{offer['offer_id']}/{verb}", verb, {}
        )
        if status == 409:
            self.fleet.tally.add(gone=1)
        elif status == 200 and decline:
            self.fleet.tally.add(declined=1)
        elif status == 200:
            self.fleet.tally.add(accepted=1)
            self.walk(answer["data"]["route"])

    def walk(self, route: dict | None) -> None:
        """Every stop to its end, re-reading the route after each round of moves."""
        for _ in range(20):  # a route of n stops ends in at most 3 rounds; a bound anyway
            if route is None:
                return
            for stop in route["stops"]:
                if stop["kind"] != "drop":  # a pickup is done by its drops' PICKED_UP
                    continue
                body = next_move(stop)
                if body is not None:
                    self.move(stop["drop_id"], body)
            status, answer = self.call("GET", "/api/v1/courier/route", "route")
            route = answer["data"]["route"] if status == 200 else route

    def move(self, drop_id: str, body: dict) -> None:
        status, _ = self.call("POST", f"/api/v1/courier/drops/{drop_id}/move", "move", body)
        if status == 200:
            with self.fleet.tally.lock:
                self.fleet.tally.moves[body["to"]] += 1


def next_move(stop: dict) -> dict | None:
    """The move a stop asks for next, or None when it is done."""
    status = stop["status"]
    if status == "ASSIGNED":
        return {"to": "PICKED_UP"}
    if status == "PICKED_UP" and stop["needs_pin"]:
        return {"to": "FAILED", "reason": "RECIPIENT_UNAVAILABLE"}
    if status == "PICKED_UP":
        return {"to": "DELIVERED", "received_by": "Sim", "cod_collected": stop["cod"] is not None}
    if status == "FAILED":
        return {"to": "RETURNING"}
    if status == "RETURNING":
        return {"to": "RETURNED"}
    return None


class Fleet:
    """The simulated couriers of one run: provisioned, started, stopped."""

    def __init__(self, host: str, port: int, count: int) -> None:
        self.host, self.port, self.count = host, port, count
        self.tally = Tally()
        self.stopping = threading.Event()
        self.accept_all = False
        self.couriers = [SimCourier(self, number) for number in range(count)]

    def snippet(self) -> str:
        return PROVISION_SNIPPET.format(count=self.count, password=PASSWORD)

    def start(self) -> None:
        for courier in self.couriers:
            courier.start()

    def stop(self) -> None:
        self.stopping.set()
        for courier in self.couriers:
            courier.join(timeout=60)

    def signed_in(self) -> int:
        return sum(bool(courier.token) for courier in self.couriers)


# --------------------------------------------------------------------------- the checks

# Live orders that wait for a courier, as the dispatcher's queue reads them
# (dispatch/dispatcher.py: live, no courier, not closed, a PENDING drop).
WAITING = """
    FROM orders_order o
    WHERE o.environment = 'live' AND o.driver_id IS NULL AND NOT o.dispatch_closed
      AND EXISTS (SELECT 1 FROM orders_drop d WHERE d.order_id = o.id AND d.status = 'PENDING')
"""
UNSERVED = f"""
    SELECT count(*) {WAITING}
      AND o.dispatch_flagged_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM dispatch_offer f
                      WHERE f.order_id = o.id AND f.status IN ('offered', 'accepted'))
"""
ON_THE_ROAD = """
    SELECT count(*) FROM orders_drop
    WHERE environment = 'live' AND status IN ('ASSIGNED', 'PICKED_UP', 'RETURNING')
"""
# When each live order a courier took was theirs: from its first ASSIGNED event to the last
# event of its drops, or for ever while one is still to carry (orders/couriers.py
# ORDER_STILL_TO_CARRY: assigned, picked up, returning, or failed and to be returned).
HELD = """
    SELECT o.id AS order_id, o.driver_id AS courier_id,
           min(e.at) FILTER (WHERE e.status = 'ASSIGNED') AS since,
           CASE WHEN bool_or(d.status IN ('ASSIGNED', 'PICKED_UP', 'RETURNING')
                             OR (d.status = 'FAILED' AND d.undeliverable_action = 'return'))
                THEN 'infinity'::timestamptz ELSE max(e.at) END AS until
    FROM orders_order o
    JOIN orders_drop d ON d.order_id = o.id
    JOIN orders_deliveryevent e ON e.drop_id = d.id
    WHERE o.environment = 'live' AND o.driver_id IS NOT NULL
    GROUP BY o.id, o.driver_id
"""
# A dispatcher run stamps its offers with the moment it started; it reads the couriers a
# moment later. A route that ended within GRACE after that stamp may rightly have been
# free when the run looked (a run of this size takes well under a second, docs/dispatch.md).
GRACE_SECONDS = 5


def settle(db, fleet: Fleet, seconds: float) -> tuple[int, float]:
    """With the load stopped, the couriers (now accepting every offer) take what waits and
    walk it: until no live order waits and no live drop is on the road, or `seconds`.
    Returns the orders then waiting unserved (no offer, no flag) and the seconds it took."""
    fleet.accept_all = True
    started = time.monotonic()
    while True:
        unserved = db.execute(UNSERVED).fetchone()[0]
        waiting = db.execute("SELECT count(*) " + WAITING).fetchone()[0]
        on_road = db.execute(ON_THE_ROAD).fetchone()[0]
        took = time.monotonic() - started
        if (waiting == 0 and on_road == 0) or took >= seconds:
            return unserved, took
        time.sleep(0.5)


def check_dispatch(db, fleet: Fleet, unserved: int, settled: float) -> list[tuple[str, bool, str]]:
    """The dispatch invariants of the run (docs/performance.md, "The cluster run")."""
    waiting = db.execute("SELECT count(*) " + WAITING).fetchone()[0]
    return [
        _assigned_once(db),
        _no_offer_of_a_held_order(db),
        (
            "every waiting live order assigned, offered or flagged",
            unserved == 0,
            f"{unserved} live orders waiting with no courier, no open offer and no flag "
            f"after {settled:.0f} s of settling; {waiting} still waiting in all",
        ),
        _couriers_heard(db, fleet),
    ]


def _assigned_once(db) -> tuple[str, bool, str]:
    twice = db.execute(
        """SELECT count(*) FROM (SELECT order_id FROM dispatch_offer WHERE status = 'accepted'
           GROUP BY order_id HAVING count(*) > 1) t"""
    ).fetchone()[0]
    other_driver = db.execute(
        """SELECT count(*) FROM dispatch_offer f JOIN orders_order o ON o.id = f.order_id
           WHERE f.status = 'accepted' AND o.driver_id IS DISTINCT FROM f.courier_id"""
    ).fetchone()[0]
    # Nothing assigns by hand in the run: every live order with a courier went by an offer.
    no_offer = db.execute(
        """SELECT count(*) FROM orders_order o
           WHERE o.environment = 'live' AND o.driver_id IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM dispatch_offer f WHERE f.order_id = o.id AND f.status = 'accepted')"""
    ).fetchone()[0]
    two_couriers = db.execute(
        """SELECT count(*) FROM (SELECT drop_id FROM orders_deliveryevent
           WHERE status = 'ASSIGNED' GROUP BY drop_id HAVING count(DISTINCT actor) > 1) t"""
    ).fetchone()[0]
    assigned = db.execute(
        "SELECT count(*) FROM orders_order WHERE environment = 'live' AND driver_id IS NOT NULL"
    ).fetchone()[0]
    return (
        "no order assigned twice",
        twice == other_driver == no_offer == two_couriers == 0,
        f"{assigned} live orders assigned; {twice} with two accepted offers, {other_driver} "
        f"whose courier is not their accepted offer's, {no_offer} assigned with no accepted "
        f"offer, {two_couriers} drops assigned by two couriers",
    )


def _no_offer_of_a_held_order(db) -> tuple[str, bool, str]:
    rows = db.execute(
        f"""WITH held AS ({HELD})
            SELECT f.id, f.courier_id, f.created_at, h.order_id, h.courier_id, h.since,
                   h.until::text
            FROM dispatch_offer f JOIN held h
              ON h.order_id = f.order_id AND h.courier_id <> f.courier_id
            WHERE h.since < f.created_at
              AND h.until > f.created_at + make_interval(secs => %s)""",
        (GRACE_SECONDS,),
    ).fetchall()
    offers = db.execute("SELECT count(*) FROM dispatch_offer").fetchone()[0]
    shown = "; ".join(
        f"offer {offer} to courier {to} at {at:%T.%f} of order {order}, courier {holder}'s "
        f"from {since:%T.%f} until {until}"
        for offer, to, at, order, holder, since, until in rows[:3]
    )
    return (
        "no offer of an order another courier holds",
        not rows,
        f"{offers} offers, {len(rows)} of an order another courier held from before the "
        f"offer until over {GRACE_SECONDS} s after it" + (f": {shown}" if rows else ""),
    )


def _couriers_heard(db, fleet: Fleet) -> tuple[str, bool, str]:
    by_status = dict(db.execute("SELECT status, count(*) FROM dispatch_offer GROUP BY 1"))
    delivered = db.execute(
        """SELECT count(DISTINCT d.order_id), count(*) FROM orders_deliveryevent e
           JOIN orders_drop d ON d.id = e.drop_id
           WHERE e.status = 'DELIVERED' AND e.actor LIKE 'courier:%%'"""
    ).fetchone()
    tally = fleet.tally
    unexpected = tally.unexpected()
    codes = Counter()
    for call, n in tally.statuses.items():
        codes[int(call.rsplit(" ", 1)[1])] += n
    return (
        "couriers delivered, with no 5xx but the documented 503",
        not unexpected and delivered[0] > 0 and fleet.signed_in() == fleet.count,
        f"{fleet.signed_in()} of {fleet.count} couriers signed in; offers made "
        f"{sum(by_status.values())}, accepted {by_status.get('accepted', 0)}, declined "
        f"{by_status.get('declined', 0)}, expired {by_status.get('expired', 0)}, withdrawn "
        f"{by_status.get('withdrawn', 0)}, open {by_status.get('offered', 0)}; "
        f"{delivered[0]} orders ({delivered[1]} drops) delivered by couriers; moves "
        f"{dict(tally.moves)}; {sum(codes.values())} courier calls, {codes[503]} answered "
        f"503 and {codes[0]} unanswered (retried), {tally.gone} answers OFFER_GONE; "
        f"unexpected answers: {unexpected or 'none'}",
    )
