"""The cluster run's traffic (bench/cluster.py starts locust on this file, headless).

Each simulated integrator is one business's sandbox key (CLUSTER_TENANTS, a JSON list) and
mixes what integrators do: bulk batches of 1 to 2000 drops, retries of a batch with the same
Idempotency-Key and body (as a client does after a timeout), tracking, cancels, sandbox
advances, listings and quotes. Every CLUSTER_LIVE_EVERY seconds (0: never) an integrator
also sends a small LIVE batch with its live key (1 to 3 drops, some cash on delivery, no
PIN: the simulated couriers of bench/couriers_sim.py cannot know one), and now and then
cancels one of its live drops, so the dispatcher has work and meets cancels. A 502/503 (a
part is down) is retried with the same key, as docs/api.md tells clients to. What the
answers said is written to CLUSTER_RECORDS when the run stops, for bench/cluster.py to
check against the database: every key's batch ids, every accepted drop, every status code.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections import Counter, defaultdict
from urllib.parse import urlsplit

from locust import HttpUser, between, events, task

TENANTS = json.loads(open(os.environ["CLUSTER_TENANTS"]).read())  # noqa: SIM115
RECORDS = os.environ["CLUSTER_RECORDS"]
SIZES = [1, 5, 20, 100, 500, 2000]
SIZE_WEIGHTS = [30, 25, 20, 15, 7, 3]
RETRIES = 5
LIVE_EVERY = float(os.environ.get("CLUSTER_LIVE_EVERY", "0"))

batch_ids_of_key: dict[str, set[str]] = defaultdict(set)
# The recipients' links of accepted drops (their paths), for `Recipient`.
tracking_paths: list[str] = []
accepted_of_batch: dict[str, set[str]] = defaultdict(set)
# When each batch id was first answered 200 (epoch seconds): bench/backup.py's moment T.
answered_at: dict[str, float] = {}
statuses: Counter[str] = Counter()
_next_tenant = iter(range(10**9))


def _pickup() -> dict:
    return {"name": "Load Shop", "phone": "+85512345678", "lat": 11.5564, "long": 104.9282}


def _drop(client_order_id: str) -> dict:
    return {
        "client_order_id": client_order_id,
        "dropoff": {
            "name": "Load Recipient",
            "phone": "+85512345679",
            "lat": round(random.uniform(11.50, 11.62), 5),
            "long": round(random.uniform(104.86, 104.95), 5),
        },
    }


def _live_drop(client_order_id: str) -> dict:
    drop = _drop(client_order_id)
    if random.random() < 0.25:
        drop["cod"] = {"amount": "5.00"}
    return drop


class Integrator(HttpUser):
    # Short pauses: the run measures what the cluster can take, not a polite client.
    wait_time = between(0.01, 0.1)
    weight = 2  # beside Recipient, when a run names both

    def on_start(self) -> None:
        tenant = TENANTS[next(_next_tenant) % len(TENANTS)]
        self.headers = {"Authorization": f"Bearer {tenant['key']}"}
        self.live_headers = {"Authorization": f"Bearer {tenant['live_key']}"}
        self.live_ids: list[str] = []
        # The first live batch at a random moment of the first period: spread, not a burst.
        self.next_live = time.monotonic() + random.uniform(0, LIVE_EVERY)
        self.prefix = f"{tenant['name'][:8]}-{uuid.uuid4().hex[:6]}"
        self.ids: list[str] = []
        self.last: tuple[str, bytes] | None = None
        self.sequence = 0

    # --- calls -----------------------------------------------------------------------

    def _send(
        self, method: str, path: str, name: str, body=None, key: str | None = None, live=False
    ):
        """One call, retried on 502/503/connection errors with the same body and key."""
        headers = dict(self.live_headers if live else self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(RETRIES):
            with self.client.request(
                method, path, data=data, headers=headers, name=name, catch_response=True
            ) as response:
                code = response.status_code
                statuses[f"{name} {code}"] += 1
                if code in (0, 502, 503) and attempt < RETRIES - 1:
                    # A part is down (documented 503, or the balancer's answer): wait, retry.
                    response.success()
                    wait = float(response.headers.get("Retry-After", "1") or 1)
                    time.sleep(min(wait, 2.0))
                    continue
                if code >= 500 or code in (0,):
                    response.failure(f"{code}")
                elif code in (200, 429):
                    response.success()
                elif code in (400, 404, 409):
                    response.success()  # refusals the traffic provokes on purpose
                return response
        return None

    # --- what integrators do ----------------------------------------------------------------

    @task(4)
    def bulk(self) -> None:
        size = random.choices(SIZES, SIZE_WEIGHTS)[0]
        drops = []
        for _ in range(size):
            if self.ids and random.random() < 0.03:
                drops.append(_drop(random.choice(self.ids)))  # a duplicate on purpose
            else:
                self.sequence += 1
                drops.append(_drop(f"{self.prefix}-{self.sequence}"))
        body = json.dumps(
            {
                "client_batch_id": f"{self.prefix}-b{self.sequence}",
                "orders": [{"pickup": _pickup(), "dropoff": drops}],
            }
        ).encode()
        key = str(uuid.uuid4())
        self.last = (key, body)
        self._record(key, self._send("POST", "/api/v1/orders/bulk", f"bulk {size}", body, key))

    # Often picked, as it does nothing until its batch is due: a batch every LIVE_EVERY.
    @task(8)
    def live(self) -> None:
        """A small live batch when one is due; sometimes a cancel of an earlier live drop."""
        if not LIVE_EVERY or time.monotonic() < self.next_live:
            return
        self.next_live += LIVE_EVERY
        if self.live_ids and random.random() < 0.15:
            body = {"identifiers": [random.choice(self.live_ids)]}
            self._send("POST", "/api/v1/orders/cancel", "live cancel", body, live=True)
        drops = []
        for _ in range(random.randint(1, 3)):
            self.sequence += 1
            drops.append(_live_drop(f"{self.prefix}-live{self.sequence}"))
        body = json.dumps(
            {
                "client_batch_id": f"{self.prefix}-lb{self.sequence}",
                "orders": [{"pickup": _pickup(), "dropoff": drops}],
            }
        ).encode()
        key = str(uuid.uuid4())
        response = self._send("POST", "/api/v1/orders/bulk", "live bulk", body, key, live=True)
        self._record(key, response, self.live_ids)

    @task(2)
    def retry_last_batch(self) -> None:
        if self.last is None:
            return
        key, body = self.last
        self._record(key, self._send("POST", "/api/v1/orders/bulk", "bulk retry", body, key))

    @task(3)
    def track(self) -> None:
        if self.ids:
            wanted = random.sample(self.ids, min(len(self.ids), random.randint(1, 50)))
            self._send("POST", "/api/v1/orders/tracking", "tracking", {"identifiers": wanted})

    @task(1)
    def cancel(self) -> None:
        if self.ids:
            wanted = random.sample(self.ids, min(len(self.ids), 3))
            self._send("POST", "/api/v1/orders/cancel", "cancel", {"identifiers": wanted})

    @task(1)
    def advance(self) -> None:
        if self.ids:
            wanted = random.sample(self.ids, min(len(self.ids), 5))
            body = {"identifiers": wanted, "to": random.choice(["ASSIGNED", "DELIVERED"])}
            self._send("POST", "/api/v1/sandbox/orders/advance", "advance", body)

    @task(2)
    def list_orders(self) -> None:
        self._send("GET", "/api/v1/orders?limit=100", "list orders")

    @task(1)
    def quote(self) -> None:
        body = {
            "client_batch_id": f"{self.prefix}-q",
            "orders": [
                {"pickup": _pickup(), "dropoff": [_drop(f"{self.prefix}-q{i}") for i in range(10)]}
            ],
        }
        self._send("POST", "/api/v1/orders/quote", "quote", body)

    def _record(self, key: str, response, ids: list[str] | None = None) -> None:
        if response is None or response.status_code != 200:
            return
        data = response.json()["data"]
        batch_ids_of_key[key].add(data["batch_id"])
        answered_at.setdefault(data["batch_id"], time.time())
        for order in data["orders"]:
            if order["status"] == "accepted":
                accepted_of_batch[data["batch_id"]].add(order["drop_id"])
                (self.ids if ids is None else ids).append(order["client_order_id"])
                tracking_paths.append(urlsplit(order["tracking_url"]).path)
        del self.ids[:-5000]  # keep memory bounded
        del tracking_paths[:-5000]


class Recipient(HttpUser):
    """Someone opening the tracking link a business sent them (bench/ha.py's read-scale
    phases name this class; bench/cluster.py runs Integrator alone). It never writes, so the
    read router never keeps it on the primary for its own writes."""

    wait_time = between(0.2, 1.0)
    weight = 1

    @task
    def open_link(self) -> None:
        if not tracking_paths:
            return
        path = random.choice(tracking_paths)
        with self.client.get(path, name="recipient page", catch_response=True) as response:
            statuses[f"recipient page {response.status_code}"] += 1
            if response.status_code == 200:
                response.success()
            else:
                response.failure(f"{response.status_code}")


@events.test_stop.add_listener
def _write_records(**_kwargs) -> None:
    with open(RECORDS, "w") as out:
        json.dump(
            {
                "keys": {k: sorted(v) for k, v in batch_ids_of_key.items()},
                "accepted": {b: sorted(v) for b, v in accepted_of_batch.items()},
                "statuses": dict(statuses),
                "answered_at": answered_at,
            },
            out,
        )
