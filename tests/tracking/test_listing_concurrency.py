"""Paging through 10,000 drops while other requests move them, on PostgreSQL with real threads.

Newest first, every drop is listed exactly once. In the sync order (`updated_since`),
every drop is listed, and the last time the client sees a drop it sees its latest state:
no change is skipped, not even one whose transaction stamped its updated_at and then stayed
open while quicker ones committed after it (the slow mover below holds its transaction for
longer than SYNC_MARGIN, so only the horizon's "oldest writer" term can keep it listed).
"""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection, transaction

from orders.models import Drop, DropStatus
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tracking import listing
from tracking.lifecycle import along_happy_path, apply_moves
from tracking.selectors import entries_by_drop_id
from tracking.services import sandbox_test_driver

pytestmark = pytest.mark.django_db(transaction=True)

DROPS, PER_BATCH, PAGE = 10_000, 1000, 500
MARGIN = timedelta(milliseconds=200)  # short, so that the slow mover outlasts it
SLOW_HOLD_SECONDS = 0.6
SINCE_EVER = "2000-01-01T00:00:00Z"
MOVES = 1000  # moves to see while the client syncs


def load(api: Api, key: str) -> list[str]:
    ids = []
    for b in range(DROPS // PER_BATCH):
        # Pickup groups of 20: movers assigning drivers contend for fewer shared orders.
        groups = [
            group(*[drop(f"M{b}-{i}") for i in range(start, start + 20)])
            for start in range(0, PER_BATCH, 20)
        ]
        body = batch(*groups)
        response = api.bulk(body, key)
        assert response.json()["data"]["counts"]["accepted"] == PER_BATCH, response.content
        ids += [f"M{b}-{i}" for i in range(PER_BATCH)]
    return ids


def pages(api: Api, key: str, cursor: str | None = None, **params):
    """Yield each page's data until has_more is false; the last cursor is in the last page."""
    while True:
        query = {**params, "limit": PAGE, **({"cursor": cursor} if cursor else {})}
        response = api.get(f"/orders?{urlencode(query)}", key)
        assert response.status_code == 200, response.content
        page = response.json()["data"]
        yield page
        if not page["has_more"]:
            return
        cursor = page["next_cursor"]


class Movers:
    """API movers (the sandbox driver, 20 drops a call) and one slow in-process mover."""

    def __init__(self, key: str, ids: list[str], drop_ids: list) -> None:
        self.key, self.ids, self.drop_ids = key, ids, drop_ids
        self.stop = threading.Event()
        self.moves = 0
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._guard, args=(self._api_mover, n)) for n in range(2)
        ] + [threading.Thread(target=self._guard, args=(self._slow_mover, 9))]

    def __enter__(self) -> Movers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        assert not self.errors, self.errors

    def wait_for_moves_after(self, count: int, timeout: float = 10) -> int:
        """The move count once it has passed `count` (or the timeout: the test then finds
        too few moves and says so)."""
        deadline = time.monotonic() + timeout
        while self.moves <= count and time.monotonic() < deadline and not self.errors:
            time.sleep(0.005)
        return self.moves

    def _guard(self, work, seed: int) -> None:
        try:
            work(random.Random(seed))
        except BaseException as exc:  # reported by __exit__, on the test's thread
            self.errors.append(exc)
        finally:
            connection.close()

    def _api_mover(self, rng: random.Random) -> None:
        api = Api()
        while not self.stop.is_set():
            body = {"identifiers": rng.sample(self.ids, 20)}
            response = api.post("/sandbox/orders/advance", body, self.key)
            assert response.status_code == 200, response.content
            self.moves += sum("error" not in e for e in response.json()["data"]["orders"])

    def _slow_mover(self, rng: random.Random) -> None:
        # Stamps updated_at, then keeps its transaction open while others commit later
        # stamps: the case a fixed lag alone would not cover.
        driver = sandbox_test_driver()
        while not self.stop.is_set():
            with transaction.atomic():
                result = apply_moves(
                    drop_ids=rng.sample(self.drop_ids, 5),
                    steps=along_happy_path(),
                    actor="slow mover",
                    driver=driver,
                )
                time.sleep(SLOW_HOLD_SECONDS)
            self.moves += len(result.moved)


def test_paging_while_drops_move_skips_none_and_ends_on_the_latest_state(
    open_for_business, make_tenant, monkeypatch
):
    monkeypatch.setattr(listing, "SYNC_MARGIN", MARGIN)
    tenant = make_tenant(sandbox_balance="50000.00")
    api, key = Api(), tenant.sandbox_key
    ids = load(api, key)
    drop_ids = list(Drop.objects.filter(business=tenant.business).values_list("pk", flat=True))
    open_for_business.shift(1)  # the creations are past the margin

    newest_first: list[str] = []
    synced: list[dict] = []  # every sync appearance, in the order they were listed
    cursor = None
    with Movers(key, ids, drop_ids) as movers:
        moves_before = movers.wait_for_moves_after(0)
        for page in pages(api, key):
            newest_first += [e["drop_id"] for e in page["orders"]]
            # Drops move between any two pages, however fast the pages come.
            movers.wait_for_moves_after(movers.moves)
        moved_while_browsing = movers.moves - moves_before
        # A client syncing as it would in production: all 10,000, then what changed since,
        # from the cursor it kept, again and again while the movers go on.
        # The deadline only stops a run whose movers stall: it ends at MOVES. On a loaded
        # machine the movers (threads of this process, sharing its interpreter lock with the
        # client) reached 935 moves in 20 s; 60 s leaves room without hiding a stall.
        deadline = time.monotonic() + 60
        while movers.moves < MOVES and time.monotonic() < deadline:
            for page in pages(api, key, cursor, updated_since=SINCE_EVER):
                synced += page["orders"]
                cursor = page["next_cursor"]
        moved_while_paging = movers.moves
    # Every mover has committed. Once the margin has passed, the client catches up from
    # the cursor it kept.
    time.sleep(MARGIN.total_seconds() + 0.05)
    for page in pages(api, key, cursor=cursor, updated_since=SINCE_EVER):
        synced += page["orders"]

    assert moved_while_browsing > 0 and moved_while_paging >= MOVES, "the movers barely ran"
    # Newest first: each drop exactly once, whatever moved meanwhile.
    assert len(newest_first) == DROPS and set(newest_first) == {str(p) for p in drop_ids}
    # The sync order: every drop, and its last appearance is its latest state.
    latest = entries_by_drop_id(drop_ids)
    last_seen = {entry["drop_id"]: entry for entry in synced}
    assert set(last_seen) == set(latest)
    stale = [
        (pk, last_seen[pk]["status"], entry["status"])
        for pk, entry in latest.items()
        if (last_seen[pk]["status"], last_seen[pk]["sequence"], last_seen[pk]["updated_at"])
        != (entry["status"], entry["sequence"], entry["updated_at"])
    ]
    assert stale == [], f"{len(stale)} drops last seen in an old state, e.g. {stale[:5]}"
    # A drop is listed again only with a later state, never an earlier one.
    sequences: dict[str, int] = {}
    for entry in synced:
        assert entry["sequence"] >= sequences.get(entry["drop_id"], 0)
        sequences[entry["drop_id"]] = entry["sequence"]
    assert len(synced) > DROPS  # moved drops were listed again
    assert Drop.objects.filter(status=DropStatus.PENDING).count() < DROPS
