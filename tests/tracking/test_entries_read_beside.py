"""Tracking entries read with each drop's order beside it (tracking.selectors.DROP_AND_ORDER)
are the entries read with the orders apart: one statement fewer, the same answer.

A read of up to BESIDE_AT_MOST drops takes the order's columns in the drops' own statement;
a larger one reads the orders apart, once each. The drops here cover what an order gives
its entries: a real courier on the way with a fresh position (the ETA counted from it), the
sandbox test driver (a simulated position), a pickup by address and one scheduled, a drop
still where it started and one that has moved, and drops of three orders of two batches.
The clock stands still for both reads: an ETA counted from a courier counts from now.
"""

from __future__ import annotations

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.couriers.conftest import assigned_drops
from tests.couriers.test_courier_events import post_here
from tests.factories import batch, drop, group
from tests.helpers import ROYAL_PALACE
from tests.tracking.helpers import THIS_AFTERNOON, advance
from tracking import selectors
from tracking.selectors import entries_by_drop_id, track_drops


@pytest.fixture
def varied(open_for_business, alice, api, dara):
    courier, client = dara
    assigned_drops(api, alice, courier, drop("R-1"), drop("R-2"))
    client.move(
        next(d.pk for d in selectors.Drop.objects.filter(client_order_id="R-1")), to="PICKED_UP"
    )
    post_here(client)
    by_address = {"name": "Shop", "phone": "+85512345678", "address": ROYAL_PALACE}
    sent = api.bulk(
        batch(
            group(drop("S-1"), drop("S-2"), pickup_scheduled_at=THIS_AFTERNOON),
            group(drop("S-3"), **by_address),
        ),
        alice.sandbox_key,
    )
    assert sent.status_code == 200, sent.content
    advance(api, alice.sandbox_key, "S-2", to="PICKED_UP")
    return alice, ["R-1", "R-2", "S-1", "S-2", "S-3", "NOPE"]


def read_apart(monkeypatch, read):
    monkeypatch.setattr(selectors, "BESIDE_AT_MOST", 0)
    try:
        with CaptureQueriesContext(connection) as captured:
            return read(), len(captured)
    finally:
        monkeypatch.undo()


def test_tracking_reads_the_orders_beside_the_drops_and_answers_the_same(varied, monkeypatch):
    alice, identifiers = varied

    def track():
        return track_drops(business=alice.business, environment="sandbox", identifiers=identifiers)

    with time_machine.travel(timezone.now(), tick=False):
        with CaptureQueriesContext(connection) as captured:
            beside = track()
        apart, statements_apart = read_apart(monkeypatch, track)

    assert beside == apart
    assert len(captured) == statements_apart - 1
    assert {e["client_order_id"]: e["status"] for e in beside}["NOPE"] == "NOT_FOUND"
    on_the_way = next(e for e in beside if e["client_order_id"] == "R-1")
    assert on_the_way["driver"]["position"] is not None  # the courier's, fresh
    simulated = next(e for e in beside if e["client_order_id"] == "S-2")
    assert simulated["driver"]["position"] is not None  # the sandbox test driver's
    assert next(e for e in beside if e["client_order_id"] == "S-3")["pickup"]["address"]


def test_entries_by_drop_id_read_beside_are_the_entries_read_apart(varied, monkeypatch):
    alice, _ = varied
    drop_ids = list(selectors.Drop.objects.filter(business=alice.business).values_list("pk"))
    drop_ids = [pk for (pk,) in drop_ids]

    with time_machine.travel(timezone.now(), tick=False):
        beside = entries_by_drop_id(drop_ids)
        apart, _ = read_apart(monkeypatch, lambda: entries_by_drop_id(drop_ids))

    assert len(beside) == len(drop_ids) == 5
    assert beside == apart
