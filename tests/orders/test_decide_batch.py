"""Deciding is pure (no query, no write): decide_batch for a quote, orders.decisions.Decider
for a batch, which decides a run of drops at a time while the earlier ones are written
(orders/decisions.py, orders/services.py)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orders.decisions import Decider, Reason, decide_batch
from orders.inputs import parse_batch
from orders.models import Batch, Drop
from orders.services import locate_places, read_state
from tests.factories import batch, drop, group


@pytest.fixture
def decided(open_for_business, make_tenant):
    """Three drops of alice's, decided against her state; prices 2.00 + 0.50/km."""
    tenant = make_tenant(sandbox_balance="100.00")
    body = parse_batch(batch(group(drop("D-1"), drop("D-2"), drop("D-1"))))
    state = read_state(tenant.business, "sandbox", body)
    return body, locate_places(body), state


def test_decide_batch_asks_the_database_nothing(decided):
    body, pins, state = decided
    with CaptureQueriesContext(connection) as queries:
        decisions = decide_batch(body, pins, state, timezone.now())
    assert len(queries) == 0
    assert [d.reason for d in decisions.drops] == [None, None, Reason.DUPLICATE_CLIENT_ORDER_ID]
    # base 2.00 + 0.50 per km over the same ~1.7 km
    assert {d.price for d in decisions.accepted} == {Decimal("2.83")}


def test_decide_batch_writes_nothing(decided):
    body, pins, state = decided
    decide_batch(body, pins, state, timezone.now())
    assert not Drop.objects.exists() and not Batch.objects.exists()


def test_deciding_against_a_moved_account_flips_only_rules_7_and_8(decided):
    """What the write path does when the index refuses a taken id: decide the batch again,
    knowing the ids that are taken (orders.services.write_batch)."""
    body, pins, state = decided
    now = timezone.now()
    first = decide_batch(body, pins, state, now)
    assert [d.reason for d in first.drops] == [None, None, Reason.DUPLICATE_CLIENT_ORDER_ID]

    # Meanwhile another batch of the account took D-2.
    again = decide_batch(body, pins, replace(state, taken=frozenset({"D-2"})), now)
    assert [d.reason for d in again.drops] == [
        None,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
    ]
    # ... or spent all but one drop's price.
    poorer = decide_batch(body, pins, replace(state, balance=Decimal("2.83")), now)
    assert [d.reason for d in poorer.drops] == [
        None,
        Reason.INSUFFICIENT_BALANCE,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
    ]
    assert [d.price for d in poorer.drops] == [Decimal("2.83"), None, None]
    assert poorer.state.balance == Decimal("2.83")


def test_rules_1_to_6_come_before_7_and_8(open_for_business, make_tenant):
    tenant = make_tenant()
    body = parse_batch(batch(group(drop("X", phone="not a phone"), drop("Y"))))
    state = read_state(tenant.business, "sandbox", body)

    again = decide_batch(
        body, locate_places(body), replace(state, taken=frozenset({"X"})), timezone.now()
    )

    assert [d.reason for d in again.drops] == [Reason.INVALID_PHONE, None]
    assert again.drops[0].message == "The recipient phone is not a valid E.164 number."


# --- Deciding a run at a time (orders.decisions.Decider), as the write path does ------------

FAR_OUT = {"lat": 13.4125, "long": 103.8670}  # Angkor Wat: outside the service area
NEAR = {"lat": 11.5600, "long": 104.9290}
FARTHER = {"lat": 11.5900, "long": 104.9000}


def mixed_body():
    """Every rule at work in one batch: bad phones, no place, outside, a bad pickup's group,
    duplicates within the batch and of an active drop, and a balance that runs out."""
    return parse_batch(
        batch(
            group(
                drop("M-1"),
                drop("M-2", phone="12"),
                drop("M-3", **FAR_OUT),
                drop("M-1"),  # a duplicate of the batch's own M-1
                drop("TAKEN", **NEAR),
                drop("M-4", **FARTHER),
                drop("M-5", **NEAR),
                drop("M-6", lat=None, long=None),
            ),
            group(drop("G2-1"), drop("G2-2"), phone="not a phone"),
            group(*[drop(f"R-{i}", **(NEAR if i % 3 else FARTHER)) for i in range(23)]),
        )
    )


@pytest.mark.parametrize("run", [1, 2, 3, 7, 100])
def test_deciding_in_runs_decides_what_one_pass_decides(open_for_business, make_tenant, run):
    tenant = make_tenant(sandbox_balance="40.00")
    body = mixed_body()
    pins = locate_places(body)
    state = replace(read_state(tenant.business, "sandbox", body), taken=frozenset({"TAKEN"}))
    now = timezone.now()
    whole = decide_batch(body, pins, state, now)
    # The balance runs out part way, so rule 8 carries over from run to run.
    reasons = [d.reason for d in whole.drops]
    assert Reason.INSUFFICIENT_BALANCE in reasons and reasons.count(None) > 10
    assert len(set(reasons)) == 6

    decider = Decider(body, pins, state, now)
    runs = list(decider.runs(run))

    assert [len(r) for r in runs[:-1]] == [run] * (len(runs) - 1)
    in_runs = [d for r in runs for d in r]
    assert [(d.reason, d.side, d.price, d.group) for d in in_runs] == [
        (d.reason, d.side, d.price, d.group) for d in whole.drops
    ]
    assert list(decider.runs(run)) == []  # every drop is decided once


def test_quoted_prices_are_charged_run_by_run(open_for_business, make_tenant):
    tenant = make_tenant(sandbox_balance="9.00")
    body = parse_batch(batch(group(*[drop(f"Q-{i}") for i in range(5)])))
    state = read_state(tenant.business, "sandbox", body)
    quoted = [Decimal("3.00"), None, Decimal("4.00"), Decimal("2.50"), Decimal("1.00")]
    now = timezone.now()

    decider = Decider(body, locate_places(body), state, now, quoted)
    decided = [d for r in decider.runs(2) for d in r]

    # 3.00, then the plan's 2.83 for the unquoted one (5.83); 4.00 would overdraw; 2.50
    # fits (8.33); 1.00 would overdraw. Each run takes the quoted prices of its own drops.
    assert [d.price for d in decided] == [
        Decimal("3.00"),
        Decimal("2.83"),
        None,
        Decimal("2.50"),
        None,
    ]
    assert [d.reason for d in decided] == [
        None,
        None,
        Reason.INSUFFICIENT_BALANCE,
        None,
        Reason.INSUFFICIENT_BALANCE,
    ]
    whole = decide_batch(body, locate_places(body), state, now, quoted)
    assert [d.price for d in whole.drops] == [d.price for d in decided]
