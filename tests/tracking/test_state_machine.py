"""The one state machine of docs/contract.md §6: every legal move is made, every illegal one
refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from itertools import product

import pytest

from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.factories import DriverFactory
from tests.tracking.helpers import drop_in, history_of, statuses_of
from tracking.lifecycle import (
    ADVANCE_TARGETS,
    ALLOWED,
    CANCELLABLE,
    HAPPY_PATH,
    along_happy_path,
    apply_moves,
    is_legal,
    single_step,
)
from tracking.services import move_drops_as_operator

S = DropStatus
ALL = [s.value for s in DropStatus]
PAIRS = list(product(ALL, ALL))
LEGAL = [(a, b) for a, b in PAIRS if b in ALLOWED[a]]
ILLEGAL = [(a, b) for a, b in PAIRS if b not in ALLOWED[a]]
# When the moves happen: after the drops were made (drop_in stamps them with the real time,
# not a frozen clock), so a drop's history stays in order whenever the suite runs. A fixed
# instant here turned the suite red once the day's clock passed it.
AT = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)


@pytest.fixture
def business(make_tenant):
    return make_tenant().business


def test_allowed_is_the_lifecycle_of_the_design():
    lifecycle = {
        "SCHEDULED": {"PENDING", "CANCELLED"},
        "PENDING": {"ASSIGNED", "CANCELLED"},
        # Back to waiting: an operator takes the order back before pickup (§21).
        "ASSIGNED": {"PICKED_UP", "CANCELLED", "PENDING"},
        "PICKED_UP": {"DELIVERED", "FAILED"},
        "DELIVERED": set(),
        "FAILED": {"RETURNING"},
        "RETURNING": {"RETURNED"},
        "RETURNED": set(),
        "CANCELLED": set(),
    }
    before_pickup = {"SCHEDULED", "PENDING", "ASSIGNED"}
    assert lifecycle == ALLOWED
    assert set(ALLOWED) == set(ALL)
    assert before_pickup == CANCELLABLE
    assert len(LEGAL) == 11 and len(ILLEGAL) == 70


@pytest.mark.parametrize(("current", "target"), LEGAL)
def test_legal_move_changes_status_and_writes_one_event(business, current, target):
    drop = drop_in(current, business=business)
    driver = DriverFactory() if target == S.ASSIGNED else None

    result = apply_moves(
        drop_ids=[drop.pk], steps=single_step(target), actor="tester", driver=driver, at=AT
    )

    assert [d.pk for d in result.moved] == [drop.pk] and result.refused == {}
    drop.refresh_from_db()
    assert drop.status == target
    assert drop.updated_at == AT
    event = DeliveryEvent.objects.filter(drop=drop).latest("id")
    assert (event.status, event.at, event.actor) == (target, AT, "tester")
    # The history ends with the status it was in and the move (its creation is the row).
    assert history_of(drop.pk)[-2:] == [current, target]


@pytest.mark.parametrize(("current", "target"), ILLEGAL)
def test_illegal_move_is_refused_and_changes_nothing(business, current, target):
    drop = drop_in(current, business=business)
    events_before = list(DeliveryEvent.objects.filter(drop=drop).values_list("id", "status"))
    updated_before = drop.updated_at

    result = apply_moves(drop_ids=[drop.pk], steps=single_step(target), actor="tester", at=AT)

    assert result.moved == [] and result.refused == {drop.pk: current}
    drop.refresh_from_db()
    assert drop.status == current
    assert drop.updated_at == updated_before
    assert list(DeliveryEvent.objects.filter(drop=drop).values_list("id", "status")) == (
        events_before
    )


def test_one_call_moves_the_legal_drops_and_refuses_the_others(business):
    pending = drop_in(S.PENDING, business=business)
    delivered = drop_in(S.DELIVERED, business=business)
    cancelled = drop_in(S.CANCELLED, business=business)

    result = apply_moves(
        drop_ids=[pending.pk, delivered.pk, cancelled.pk],
        steps=single_step(S.CANCELLED),
        actor="tester",
    )

    assert [d.pk for d in result.moved] == [pending.pk]
    assert result.refused == {delivered.pk: S.DELIVERED, cancelled.pk: S.CANCELLED}
    assert dict(Drop.objects.values_list("pk", "status")) == {
        pending.pk: S.CANCELLED,
        delivered.pk: S.DELIVERED,
        cancelled.pk: S.CANCELLED,
    }
    assert statuses_of(delivered.pk) == [S.DELIVERED]
    assert statuses_of(cancelled.pk) == [S.CANCELLED]


def test_unknown_drop_ids_are_ignored(business):
    result = apply_moves(drop_ids=[uuid.uuid4()], steps=single_step(S.PENDING), actor="tester")
    assert result.moved == [] and result.refused == {}
    assert DeliveryEvent.objects.count() == 0


def test_a_path_writes_every_step_in_order_with_time_and_actor(business):
    drop = drop_in(S.SCHEDULED, business=business)
    driver = DriverFactory()

    apply_moves(
        drop_ids=[drop.pk],
        steps=along_happy_path(S.DELIVERED),
        actor="walker",
        driver=driver,
        at=AT,
    )

    moves = list(
        DeliveryEvent.objects.filter(drop=drop, actor="walker").values_list("status", "at")
    )
    assert moves == [(S.PENDING, AT), (S.ASSIGNED, AT), (S.PICKED_UP, AT), (S.DELIVERED, AT)]
    assert history_of(drop.pk) == HAPPY_PATH
    assert Order.objects.get(pk=drop.order_id).driver == driver


def test_a_driver_is_set_only_on_orders_that_reach_assigned(business):
    reaching = drop_in(S.PENDING, business=business)
    passing_by = drop_in(S.ASSIGNED, business=business)
    driver = DriverFactory()

    apply_moves(
        drop_ids=[reaching.pk, passing_by.pk],
        steps=along_happy_path(),
        actor="walker",
        driver=driver,
    )

    assert Order.objects.get(pk=reaching.order_id).driver == driver
    assert Order.objects.get(pk=passing_by.order_id).driver is None


def test_on_cancel_gets_only_the_drops_that_were_cancelled(business):
    cancellable = drop_in(S.ASSIGNED, business=business)
    too_late = drop_in(S.PICKED_UP, business=business)
    seen = []

    apply_moves(
        drop_ids=[cancellable.pk, too_late.pk],
        steps=single_step(S.CANCELLED),
        actor="tester",
        at=AT,
        on_cancel=lambda drops, at: seen.append(([d.pk for d in drops], at)),
    )

    assert seen == [([cancellable.pk], AT)]


def test_on_cancel_is_not_called_when_nothing_was_cancelled(business):
    too_late = drop_in(S.DELIVERED, business=business)
    seen = []
    apply_moves(
        drop_ids=[too_late.pk],
        steps=single_step(S.CANCELLED),
        actor="tester",
        on_cancel=lambda drops, at: seen.append(drops),
    )
    assert seen == []


def test_assigning_without_a_driver_is_refused_before_any_move(business):
    drop = drop_in(S.PENDING, business=business)
    with pytest.raises(ValueError, match="driver"):
        move_drops_as_operator(drop_ids=[drop.pk], to=S.ASSIGNED, actor="operator x")
    drop.refresh_from_db()
    assert drop.status == S.PENDING


@pytest.mark.parametrize(
    ("current", "to", "path"),
    [
        (S.SCHEDULED, None, [S.PENDING]),
        (S.PENDING, None, [S.ASSIGNED]),
        (S.ASSIGNED, None, [S.PICKED_UP]),
        (S.PICKED_UP, None, [S.DELIVERED]),
        (S.SCHEDULED, S.DELIVERED, [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]),
        (S.PENDING, S.PICKED_UP, [S.ASSIGNED, S.PICKED_UP]),
        (S.SCHEDULED, S.FAILED, [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED]),
        (S.ASSIGNED, S.FAILED, [S.PICKED_UP, S.FAILED]),
        (S.PICKED_UP, S.FAILED, [S.FAILED]),
        (S.ASSIGNED, S.ASSIGNED, None),  # already there
        (S.ASSIGNED, S.PENDING, None),  # behind
        (S.PICKED_UP, S.ASSIGNED, None),
        (S.DELIVERED, None, None),
        (S.DELIVERED, S.FAILED, None),
        (S.FAILED, None, [S.RETURNING]),  # a drop that returns (dispose: refused by the move)
        (S.FAILED, S.DELIVERED, None),
        (S.FAILED, S.RETURNED, [S.RETURNING, S.RETURNED]),
        (S.RETURNING, None, [S.RETURNED]),
        (S.RETURNING, S.RETURNED, [S.RETURNED]),
        (S.RETURNING, S.FAILED, None),  # behind
        (S.RETURNED, None, None),
        (S.RETURNED, S.RETURNED, None),
        (S.PICKED_UP, S.RETURNING, [S.FAILED, S.RETURNING]),
        (S.PENDING, S.RETURNED, [S.ASSIGNED, S.PICKED_UP, S.FAILED, S.RETURNING, S.RETURNED]),
        (S.DELIVERED, S.RETURNED, None),
        (S.CANCELLED, S.RETURNING, None),
        (S.CANCELLED, None, None),
        (S.CANCELLED, S.DELIVERED, None),
    ],
)
def test_the_sandbox_path_to_a_target(current, to, path):
    assert along_happy_path(to)(current) == path


@pytest.mark.parametrize(
    ("current", "to"),
    list(product(ALL, [None, *sorted(ADVANCE_TARGETS)])),
)
def test_every_sandbox_path_is_made_of_legal_steps(current, to):
    path = along_happy_path(to)(current)
    if path is None:
        return
    here = current
    for status in path:
        assert is_legal(here, status)
        here = status
    assert here == (to or path[0])
