"""The delivery lifecycle of docs/contract.md §6: the one state machine every mover goes through.

Admin actions, the sandbox test driver, cancellation and dispatch_due_orders all call
apply_moves(). It locks the drops' rows (SELECT ... FOR UPDATE) before judging their
current status, so two movers racing on one drop are serialised: the second sees the
first one's result and is refused if its move is no longer legal.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.cod import collect_cod
from billing.services import charge_return_fees, lock_accounts
from events.models import EventType
from events.services import NewEvent, record_many
from orders.models import (
    DeliveryEvent,
    Drop,
    DropStatus,
    FailureReason,
    Order,
    ProofMethod,
    UndeliverableAction,
)
from orders.statuses import HAPPY_PATH, NO_DROP_OFF_AHEAD, NOT_PICKED_UP, RETURN_PATH
from orders.stops import resequence, sequence_unsequenced
from tracking.proof import pin_matches
from tracking.selectors import entries_by_drop_id
from tracking.window_watch import record_window_alerts, refresh_windows

# The legal moves, status by status (docs/contract.md §6, §19): each step of HAPPY_PATH and
# RETURN_PATH (orders.statuses), a failure after pickup, a cancellation from CANCELLABLE, and
# an assigned drop taken back to PENDING. The table does not say who moves: taking back is
# an operator's alone (dispatch.offers.take_back_order), as a courier may only ask for
# orders.statuses.COURIER_MOVES, and PENDING is none of them.
ALLOWED: dict[str, frozenset[str]] = {
    DropStatus.SCHEDULED: frozenset({DropStatus.PENDING, DropStatus.CANCELLED}),
    DropStatus.PENDING: frozenset({DropStatus.ASSIGNED, DropStatus.CANCELLED}),
    DropStatus.ASSIGNED: frozenset(
        {DropStatus.PICKED_UP, DropStatus.CANCELLED, DropStatus.PENDING}
    ),
    DropStatus.PICKED_UP: frozenset({DropStatus.DELIVERED, DropStatus.FAILED}),
    DropStatus.DELIVERED: frozenset(),
    # With undeliverable_action "dispose", FAILED is final (_legal_path): docs/contract.md §19.
    DropStatus.FAILED: frozenset({DropStatus.RETURNING}),
    DropStatus.RETURNING: frozenset({DropStatus.RETURNED}),
    DropStatus.RETURNED: frozenset(),
    DropStatus.CANCELLED: frozenset(),
}
# A drop may be cancelled until its courier has the parcel (docs/contract.md §6).
CANCELLABLE = NOT_PICKED_UP
# Where the sandbox test driver walks a drop to: every step of both paths after the first.
ADVANCE_TARGETS = frozenset(HAPPY_PATH[1:] + RETURN_PATH)

Steps = Callable[[str], list[str] | None]


def is_legal(current: str, target: str) -> bool:
    return target in ALLOWED[current]


def single_step(target: str) -> Steps:
    """One direct move to `target`, legal only from a status that allows it."""
    return lambda current: [target] if is_legal(current, target) else None


def step_from(source: str, target: str) -> Steps:
    """One direct move from `source` to `target` only: a drop found in another status stays
    (PENDING is reached from SCHEDULED when due, and from ASSIGNED when taken back)."""
    return lambda current: [target] if current == source and is_legal(current, target) else None


def along_happy_path(target: str | None = None) -> Steps:
    """The sandbox driver: one step forward, or each step up to `target` (FAILED: via
    PICKED_UP; RETURNING and RETURNED: via FAILED, for a drop that returns)."""

    def steps(current: str) -> list[str] | None:
        if current in RETURN_PATH:
            return _return_steps(current, target)
        if current not in HAPPY_PATH or current == DropStatus.DELIVERED:
            return None
        here = HAPPY_PATH.index(current)
        if target is None:
            return [HAPPY_PATH[here + 1]]
        fails = target in RETURN_PATH
        there = HAPPY_PATH.index(DropStatus.PICKED_UP if fails else target)
        path = HAPPY_PATH[here + 1 : there + 1]
        if fails:
            path += RETURN_PATH[: RETURN_PATH.index(target) + 1]
        return path or None

    return steps


def _return_steps(current: str, target: str | None) -> list[str] | None:
    """From FAILED or RETURNING: the next return step, or each one up to `target`."""
    here = RETURN_PATH.index(current)
    if target is None:
        return RETURN_PATH[here + 1 : here + 2] or None
    if target not in RETURN_PATH:
        return None
    return RETURN_PATH[here + 1 : RETURN_PATH.index(target) + 1] or None


@dataclass
class MoveResult:
    moved: list[Drop] = field(default_factory=list)
    refused: dict[UUID, str] = field(default_factory=dict)  # drop id → status it stayed in
    # Drops that ask for a PIN and were not delivered: no PIN given, or a wrong one (with
    # how many wrong ones it has had). The third wrong one fails the drop instead (WRONG_PIN).
    pin_missing: set[UUID] = field(default_factory=set)
    wrong_pin: dict[UUID, int] = field(default_factory=dict)
    # With `carried_by`: the drops that were not that courier's once locked (taken back, and
    # perhaps given to another, between the courier's look and the move): nothing of them moved.
    not_carried: set[UUID] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a move that finishes a drop ends it (docs/contract.md §14, §19).

    `pins` are the PINs an operator entered, by drop id; the sandbox test driver
    `knows_pins`. A drop asking for a PIN is delivered only with the right one.
    """

    failure_reason: str = FailureReason.OTHER
    photo: str | None = None  # a stored file's name (Django storage)
    # The recipient's signature (a stored PNG's name), kept for a drop that asked for one (§24).
    signature: str | None = None
    received_by: str | None = None
    return_received_by: str | None = None  # who took a returned parcel back (RETURNED)
    pins: Mapping[UUID, str] = field(default_factory=dict)
    knows_pins: bool = False


@transaction.atomic
def apply_moves(
    *,
    drop_ids: Iterable[UUID],
    steps: Steps,
    actor: str,
    driver=None,
    carried_by: int | None = None,
    at: datetime | None = None,
    on_cancel: Callable[[list[Drop], datetime], None] | None = None,
    outcome: Outcome = Outcome(),  # noqa: B008 (frozen: one shared default is safe)
) -> MoveResult:
    """Move each drop along `steps(current)`, writing one event per step, in one transaction;
    with `carried_by` (a courier), only drops of that courier's orders once locked."""
    result = MoveResult()
    events: list[DeliveryEvent] = []
    changes: dict[tuple, list[UUID]] = defaultdict(list)  # the fields to set → drops
    assigned_orders: set[UUID] = set()
    paths: dict[UUID, tuple[str, list[str]]] = {}  # drop id → (status before, steps taken)
    wrong_pins: list[UUID] = []
    drop_ids = list(drop_ids)
    _lock_accounts_of_returns(drop_ids, steps)
    drops = _lock_drops(drop_ids, carried_by, result)
    # The time is read once we hold the locks: a mover that waited for another one stamps
    # its events after that one's, so a drop's events sorted by time stay a legal path.
    at = at or timezone.now()
    for drop in drops:
        path = steps(drop.status)
        # Refused: no move from here, an illegal one, or a delivery waiting for its PIN.
        taken = path and _legal_path(drop, path)
        taken = taken and _path_and_fields(drop, path, outcome, result, wrong_pins, at)
        if not taken:
            result.refused[drop.pk] = drop.status
            continue
        path, finish = taken
        events += [DeliveryEvent(drop_id=drop.pk, status=s, at=at, actor=actor) for s in path]
        paths[drop.pk] = (drop.status, path)
        if DropStatus.ASSIGNED in path:
            assigned_orders.add(drop.order_id)
        drop.status, drop.updated_at = path[-1], at
        changes[(("status", drop.status), *finish)].append(drop.pk)
        result.moved.append(drop)
    for fields, ids in changes.items():
        Drop.objects.filter(pk__in=ids).update(updated_at=at, **dict(fields))
    if wrong_pins:
        Drop.objects.filter(pk__in=wrong_pins).update(pin_attempts=F("pin_attempts") + 1)
    DeliveryEvent.objects.bulk_create(events)
    if driver is not None and assigned_orders:
        _drive(assigned_orders, driver, {drop.pk for drop in drops}, at)
    cancelled = [d for d in result.moved if d.status == DropStatus.CANCELLED]
    if cancelled and on_cancel is not None:
        on_cancel(cancelled, at)
    if any(d.stop_sequence is not None for d in cancelled):  # the route without them (§21)
        resequence({d.order_id for d in cancelled}, now=at)
    _settle_money(result.moved, at)
    # Each moved drop's window status, worked out afresh (docs/contract.md §17).
    window_alerts = refresh_windows(result.moved, at)
    # Last: the feed lock comes after the account lock a refund takes (events.services).
    _record_status_changes(result.moved, paths, at)
    record_window_alerts(window_alerts, at)
    return result


def _lock_drops(drop_ids: list[UUID], carried_by: int | None, result: MoveResult) -> list[Drop]:
    """The drops, locked in id order (only their own rows: an order's row is locked by the
    services that change it, in their own order)."""
    locked = Drop.objects.select_for_update(of=("self",)).filter(pk__in=drop_ids)
    if carried_by is not None:
        locked = locked.filter(order__driver_id=carried_by)
    drops = list(locked.order_by("pk"))
    if carried_by is not None:
        result.not_carried = set(drop_ids) - {drop.pk for drop in drops}
    return drops


def _settle_money(moved: list[Drop], at: datetime) -> None:
    """The money of the moves, in their transaction: a returned drop's fee (its account was
    locked first: _lock_accounts_of_returns), a delivered drop's cash collected (its COD
    account locked last, after the drops' rows: billing/cod.py), docs/contract.md §18-19."""
    charge_return_fees(drops=[d for d in moved if d.status == DropStatus.RETURNED], at=at)
    delivered = [d for d in moved if d.status == DropStatus.DELIVERED]
    collect_cod(
        drops=delivered, at=at, couriers=_couriers_of([d for d in delivered if d.cod_amount])
    )


def _couriers_of(drops: list[Drop]) -> dict[UUID, UUID | None]:
    """Each drop's courier (its order's driver, set by now in this transaction): who took
    the cash of a COD drop (docs/contract.md §23)."""
    if not drops:
        return {}
    order_ids = {d.order_id for d in drops}
    drivers = dict(Order.objects.filter(pk__in=order_ids).values_list("pk", "driver_id"))
    return {d.pk: drivers.get(d.order_id) for d in drops}


def _drive(order_ids: set[UUID], driver, locked: set[UUID], at: datetime) -> None:
    """The orders get their driver, and a route if they have none yet (docs/contract.md
    §21: the sandbox test driver's orders and orders assigned by hand; the dispatcher's
    have theirs from before the offer)."""
    # Orders are shared by the drops of a pickup group, which two movers may move at once:
    # lock them in pk order, as apply_moves locks the drops, or their UPDATEs can deadlock.
    orders = Order.objects.select_for_update().filter(pk__in=order_ids)
    list(orders.order_by("pk").values_list("pk", flat=True))
    orders.update(driver=driver)
    sequence_unsequenced(order_ids, locked=locked, now=at)


def _path_and_fields(
    drop: Drop, path: list[str], outcome: Outcome, result: MoveResult, wrong: list[UUID], at
) -> tuple[list[str], tuple] | None:
    """The path a drop takes and the fields its move sets besides the status; None for a
    delivery refused for its PIN (none given, or a wrong one before the last allowed)."""
    finish: tuple = ()
    if path[-1] == DropStatus.DELIVERED:
        if _pin_given(drop, outcome, result, wrong):
            finish = _delivered_fields(drop, outcome)
        elif drop.pk not in result.wrong_pin or result.wrong_pin[drop.pk] < _max_pin_attempts():
            return None
        else:  # The last wrong PIN: the courier leaves with the parcel.
            del result.wrong_pin[drop.pk]
            path = [*path[:-1], DropStatus.FAILED]
            finish = (("failure_reason", FailureReason.WRONG_PIN),)
    elif DropStatus.FAILED in path:
        finish = (("failure_reason", outcome.failure_reason),)
    if path[-1] == DropStatus.RETURNED:
        finish += (("returned_at", at), ("return_received_by", outcome.return_received_by))
    if path[-1] == DropStatus.DELIVERED and drop.cod_amount:
        finish += (("cod_collected_at", at),)  # the courier took the cash (docs/contract.md §18)
    # No courier is on the way to the drop any more (a returning parcel goes to the pickup):
    # its simulated progress and its scenario's next step are cleared (a scenario that goes
    # on, tracking.scenarios, sets its next step again).
    if path[-1] in NO_DROP_OFF_AHEAD:
        finish += (("courier_progress", None), ("scenario_next_at", None))
    return path, finish


def _lock_accounts_of_returns(drop_ids: list[UUID], steps: Steps) -> None:
    """Lock the accounts a move to RETURNED will charge (its return fee) before the drops'
    rows, the order every money change takes (account, then drops: batches, cancels), so a
    return never deadlocks with a batch of the same account. `steps` is asked of each status
    once; moves that cannot reach RETURNED read nothing here."""
    returning = [s for s in DropStatus.values if DropStatus.RETURNED in (steps(s) or ())]
    if returning:
        lock_accounts(
            Drop.objects.filter(pk__in=drop_ids, status__in=returning)
            .values_list("business_id", "environment")
            .distinct()
        )


def _max_pin_attempts() -> int:
    return settings.MAX_PIN_ATTEMPTS


def _pin_given(drop: Drop, outcome: Outcome, result: MoveResult, wrong: list[UUID]) -> bool:
    """Whether this delivery may go ahead; counts a wrong PIN (under the drop's row lock)."""
    if drop.dropoff_pin is None or outcome.knows_pins:
        return True
    given = outcome.pins.get(drop.pk)
    if not given:
        result.pin_missing.add(drop.pk)
        return False
    if pin_matches(drop.dropoff_pin, given):
        return True
    wrong.append(drop.pk)
    result.wrong_pin[drop.pk] = drop.pin_attempts + 1
    return False


def _delivered_fields(drop: Drop, outcome: Outcome) -> tuple:
    # A PIN says most (the recipient had it); a signature beside it is still served.
    signature = outcome.signature if drop.needs_signature else None
    method = (
        ProofMethod.PIN
        if drop.dropoff_pin is not None
        else ProofMethod.SIGNATURE
        if signature
        else ProofMethod.PHOTO
        if outcome.photo
        else ProofMethod.NONE
    )
    return (
        ("pod_method", method),
        ("pod_received_by", outcome.received_by or None),
        ("pod_photo", outcome.photo or None),
        ("pod_signature", signature or None),
    )


def _record_status_changes(moved: list[Drop], paths: dict, at: datetime) -> None:
    """One order.status_changed event per step of every moved drop, in one statement.

    Each carries the drop's tracking entry as of that step (its status, its events so far,
    its sequence) and the status before the step (docs/contract.md §11).
    """
    if not moved:
        return
    entries = entries_by_drop_id([drop.pk for drop in moved])
    new_events = []
    for drop in moved:
        entry = entries[str(drop.pk)]
        previous, path = paths[drop.pk]
        done = len(entry["events"]) - len(path)
        for step, status in enumerate(path, start=1):
            seen = entry["events"][: done + step]
            data = {**entry, "status": status, "events": seen, "sequence": len(seen)}
            data["previous_status"] = previous
            new_events.append(
                NewEvent(drop.business_id, drop.environment, EventType.ORDER_STATUS_CHANGED, data)
            )
            previous = status
    record_many(new_events, at=at)


def _legal_path(drop: Drop, path: list[str]) -> bool:
    if DropStatus.RETURNING in path and drop.undeliverable_action != UndeliverableAction.RETURN:
        return False
    current = drop.status
    for status in path:
        if not is_legal(current, status):
            return False
        current = status
    return True
