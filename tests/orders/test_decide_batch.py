"""Decide, then write: decide_batch is pure (no query, no write), write_batch re-checks
rules 7–8 under the account lock (orders/decisions.py, orders/services.py)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orders.decisions import Reason, decide_batch, decide_charges
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


def test_deciding_again_against_a_moved_account_flips_only_rules_7_and_8(decided):
    body, pins, state = decided
    decisions = decide_batch(body, pins, state, timezone.now())

    # Meanwhile another batch of the account took D-2.
    again = decide_charges(decisions, replace(state, taken=frozenset({"D-2"})))
    assert [d.reason for d in again.drops] == [
        None,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
    ]
    # ... or spent all but one drop's price.
    poorer = decide_charges(again, replace(state, balance=Decimal("2.83")))
    assert [d.reason for d in poorer.drops] == [
        None,
        Reason.INSUFFICIENT_BALANCE,
        Reason.DUPLICATE_CLIENT_ORDER_ID,
    ]
    assert [d.price for d in poorer.drops] == [Decimal("2.83"), None, None]
    assert poorer.state.balance == Decimal("2.83")


def test_rules_1_to_6_are_not_decided_again(open_for_business, make_tenant):
    tenant = make_tenant()
    body = parse_batch(batch(group(drop("X", phone="not a phone"), drop("Y"))))
    state = read_state(tenant.business, "sandbox", body)
    decisions = decide_batch(body, locate_places(body), state, timezone.now())

    again = decide_charges(decisions, replace(state, taken=frozenset()))

    assert [d.reason for d in again.drops] == [Reason.INVALID_PHONE, None]
    assert again.drops[0].message == "The recipient phone is not a valid E.164 number."
