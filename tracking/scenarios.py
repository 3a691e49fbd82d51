"""Sandbox scenarios (docs/contract.md §14): the test driver walks a drop by itself, one step every
SANDBOX_STEP_SECONDS, and a simulated courier moves from pickup to drop along the way.

A drop's row is the truth: `scenario_next_at` says when its next step is due (null: nothing
left to do). `run_due_scenarios` locks every due drop no other runner holds (SKIP LOCKED: two
workers never step the same drop), decides each one's step from its status *now* (a drop the
business cancelled or advanced by hand meanwhile is simply further along), and moves them all
through the state machine in one transaction, so every step fires its events and webhooks as
a live move does. A task runs it when the earliest step is due (enqueued by the batch that
created the drops, then by each run for the next one); the minute sweep of core/schedule.py
runs it as well, so a worker killed mid-run delays a scenario, never strands it.

Steps (the courier's position is `courier_progress`, the fraction of the way to the drop):

    deliver            PENDING → ASSIGNED (0) → PICKED_UP (0.3) → en route (0.7) → DELIVERED
    fail               PENDING → ASSIGNED (0) → PICKED_UP (0.3) → en route (0.7) → FAILED
                       → RETURNING → RETURNED (return fee charged), unless the drop's
                       undeliverable_action is "dispose": then FAILED is the end
    cancel_by_courier  PENDING → ASSIGNED (0) → CANCELLED (refunded)

A SCHEDULED drop waits for its pickup time, as a live one does: its first step, due then
(orders.services sets `scenario_next_at` when the batch writes it), dispatches it, and the
walk goes on from there; `deliver` hands over with the PIN when one was asked, a sample
photo, and a sample signature where the drop asked for one (docs/contract.md §24).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Min, Q
from django.utils import timezone

from accounts.models import Business
from billing.services import lock_account, refund_drops
from geo.services import next_opening
from orders.models import Drop, DropStatus, SandboxScenario, UndeliverableAction
from orders.statuses import FAILURE_OUTCOMES, HAPPY_PATH, MOVES_MONEY, RETURN_PATH, TO_RETURN
from tracking.lifecycle import Outcome, apply_moves, single_step
from tracking.position_events import report_simulated_positions
from tracking.sandbox_driver import EN_ROUTE_AT, PICKED_UP_AT
from tracking.services import SANDBOX_ACTOR, SANDBOX_OUTCOME, sandbox_test_driver

RUN_LIMIT = 1000  # drops stepped per transaction; a run with more due goes again at once
SAMPLE_PHOTO = "proof/sandbox/sample-delivery.png"
_SAMPLE_SOURCE = Path(__file__).parent / "assets" / "sandbox-proof.png"
SAMPLE_SIGNATURE = "proof/sandbox/sample-signature.png"
_SAMPLE_SIGNATURE_SOURCE = Path(__file__).parent / "assets" / "sandbox-signature.png"
# The dashboard's sandbox console sends it (a sample batch, or one drop of it for a scenario).
SAMPLE_BATCH = Path(settings.BASE_DIR) / "docs" / "sample-batch.json"


@dataclass(slots=True)
class RunResult:
    stepped: int
    next_due: datetime | None
    more: bool  # hit RUN_LIMIT: more drops were already due


def step_of(
    status: str, scenario: str, progress: float | None, action: str = UndeliverableAction.RETURN
) -> str | None:
    """The next step of a drop: a status to move to, "en_route", or None (done)."""
    if scenario in (None, SandboxScenario.MANUAL):
        return None
    if scenario == SandboxScenario.FAIL and action == UndeliverableAction.RETURN:
        if status == DropStatus.FAILED:
            return DropStatus.RETURNING
        if status == DropStatus.RETURNING:
            return DropStatus.RETURNED
    if status == DropStatus.SCHEDULED:  # its first step is due at its pickup time
        return DropStatus.PENDING
    if status == DropStatus.PENDING:
        return DropStatus.ASSIGNED
    if status == DropStatus.ASSIGNED:
        if scenario == SandboxScenario.CANCEL_BY_COURIER:
            return DropStatus.CANCELLED
        return DropStatus.PICKED_UP
    if status == DropStatus.PICKED_UP:
        if progress is None or progress < EN_ROUTE_AT:
            return "en_route"
        return DropStatus.FAILED if scenario == SandboxScenario.FAIL else DropStatus.DELIVERED
    return None  # delivered, failed, returned or cancelled: the scenario is over


def run_due_scenarios(*, now: datetime | None = None) -> RunResult:
    """Take one step of every due scenario drop that no other runner holds."""
    now = now or timezone.now()
    step = timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
    with transaction.atomic():
        # A courier cancelling refunds the account, a return charges its fee: the account's
        # lock comes first, as in every other change of money (tracking.services.cancel_orders,
        # tracking.lifecycle), so the two can never deadlock.
        refunding = _lock_charged_accounts(now)
        rows = list(
            Drop.objects.select_for_update(skip_locked=True)
            .filter(scenario_next_at__lte=now)
            .order_by("pk")
            .values_list(
                "pk", "status", "sandbox_scenario", "courier_progress", "business_id",
                "environment", "undeliverable_action",
            )[:RUN_LIMIT]
        )  # fmt: skip
        by_step: dict[str | None, list[UUID]] = defaultdict(list)
        for pk, status, scenario, progress, business_id, environment, action in rows:
            next_step = step_of(status, scenario, progress, action)
            if next_step in MOVES_MONEY and (business_id, environment) not in refunding:
                next_step = "wait"  # became due after we took the account locks: next run
            by_step[next_step].append(pk)
        _move(by_step, refunding, now)
        later = now + step
        _walk_on_to_return(by_step, later)
        for name, progress in (
            (DropStatus.ASSIGNED, 0.0),
            (DropStatus.PICKED_UP, PICKED_UP_AT),
            ("en_route", EN_ROUTE_AT),
        ):
            if by_step.get(name):
                Drop.objects.filter(pk__in=by_step[name]).update(
                    courier_progress=progress, scenario_next_at=later
                )
        _report_positions(by_step, now)
        if by_step.get(DropStatus.PENDING) or by_step.get("wait"):
            waiting = by_step.get(DropStatus.PENDING, []) + by_step.get("wait", [])
            Drop.objects.filter(pk__in=waiting).update(scenario_next_at=later)
        if by_step.get(None):
            Drop.objects.filter(pk__in=by_step[None]).update(scenario_next_at=None)
    next_due = Drop.objects.filter(scenario_next_at__isnull=False).aggregate(
        next=Min("scenario_next_at")
    )["next"]
    return RunResult(stepped=len(rows), next_due=next_due, more=len(rows) == RUN_LIMIT)


def _report_positions(by_step: dict, now: datetime) -> None:
    """The simulated courier moved (picked up, en route): order.courier_position for their
    orders, as a real courier's position sends it (docs/contract.md §20)."""
    moved = by_step.get(DropStatus.PICKED_UP, []) + by_step.get("en_route", [])
    if moved:
        orders = Drop.objects.filter(pk__in=moved).values_list("order_id", flat=True)
        report_simulated_positions(order_ids=set(orders), now=now)


def _walk_on_to_return(by_step: dict, later: datetime) -> None:
    """A failed drop that returns takes its next steps (the move cleared its next step)."""
    for status in TO_RETURN:
        if by_step.get(status):
            Drop.objects.filter(
                pk__in=by_step[status],
                status=status,
                sandbox_scenario=SandboxScenario.FAIL,
                undeliverable_action=UndeliverableAction.RETURN,
            ).update(scenario_next_at=later)


def _lock_charged_accounts(now: datetime) -> dict[tuple, Business]:
    """Lock, in a fixed order, every account with a courier cancellation or a return due."""
    cancelling = Q(status=DropStatus.ASSIGNED, sandbox_scenario=SandboxScenario.CANCEL_BY_COURIER)
    returning = Q(status=DropStatus.RETURNING, sandbox_scenario=SandboxScenario.FAIL)
    due = (
        Drop.objects.filter(cancelling | returning, scenario_next_at__lte=now)
        .values_list("business_id", "environment")
        .distinct()
    )
    accounts = sorted(set(due))
    businesses = Business.objects.in_bulk([business_id for business_id, _ in accounts])
    for business_id, environment in accounts:
        lock_account(business=businesses[business_id], environment=environment)
    return {account: businesses[account[0]] for account in accounts}


def _move(by_step: dict, refunding: dict[tuple, Business], now: datetime) -> None:
    """The status moves, one apply_moves per kind of step: set-based, events included."""
    for status in MOVES:
        if by_step.get(status):
            apply_moves(
                drop_ids=by_step[status],
                steps=single_step(status),
                actor=SANDBOX_ACTOR,
                at=now,
                **_how(status, refunding),
            )


# Every step a scenario takes, in this order: along both paths, or a courier's cancellation.
MOVES = (*HAPPY_PATH[1:], *RETURN_PATH, DropStatus.CANCELLED)


def _how(status: str, refunding: dict[tuple, Business]) -> dict:
    """What a move to `status` takes besides the drops: a driver, an outcome, a refund."""
    if status == DropStatus.ASSIGNED:
        return {"driver": sandbox_test_driver()}
    if status == DropStatus.DELIVERED:
        photo, signature = sample_photo(), sample_signature()
        outcome = Outcome(
            photo=photo, signature=signature, received_by="Sandbox recipient", knows_pins=True
        )
        return {"outcome": outcome}
    if status in FAILURE_OUTCOMES:
        return {"outcome": SANDBOX_OUTCOME}
    if status == DropStatus.CANCELLED:
        return {"on_cancel": lambda drops, at: _refund(drops, refunding, at)}
    return {}


def _refund(drops: list[Drop], refunding: dict[tuple, Business], at: datetime) -> None:
    by_account: dict[tuple, list[Drop]] = defaultdict(list)
    for drop in drops:
        by_account[drop.business_id, drop.environment].append(drop)
    for (business_id, environment), cancelled in by_account.items():
        business = refunding[business_id, environment]
        refund_drops(business=business, environment=environment, drops=cancelled, at=at)


def sample_photo() -> str:
    """The stored name of the sandbox's sample delivery photo, stored on first use."""
    return _sample(SAMPLE_PHOTO, _SAMPLE_SOURCE)


def sample_signature() -> str:
    """The stored name of the sandbox's sample signature (kept only for a drop asking one)."""
    return _sample(SAMPLE_SIGNATURE, _SAMPLE_SIGNATURE_SOURCE)


def _sample(name: str, source: Path) -> str:
    if not default_storage.exists(name):
        try:
            return default_storage.save(name, ContentFile(source.read_bytes()))
        except FileExistsError:  # another worker stored it first
            pass
    return name


# The sandbox console's bodies ----------------------------------------------------------


def sample_batch_body(suffix: str) -> dict:
    """docs/sample-batch.json with fresh ids, so every send is a new batch.

    Every client_order_id gets the same suffix, so the sample's in-batch duplicate
    pair stays a duplicate and still shows DUPLICATE_CLIENT_ORDER_ID.
    """
    body = json.loads(SAMPLE_BATCH.read_text())
    body["client_batch_id"] = f"{body['client_batch_id']}-{suffix}"
    for group in body["orders"]:
        for drop in group["dropoff"]:
            drop["client_order_id"] = f"{drop['client_order_id']}-{suffix}"
    return body


def scenario_body(scenario: str, *, pin: bool, now: datetime, cod: str | None = None) -> dict:
    """One sample drop walked by the test driver; picked up now, or at the next opening.

    `cod`: the cash to collect, a money string (docs/contract.md §18): the courier takes it
    when the drop is delivered, and the sandbox COD account holds it.
    """
    sample = json.loads(SAMPLE_BATCH.read_text())
    pickup = dict(sample["orders"][0]["pickup"])
    pickup.pop("pickup_scheduled_at", None)
    opens = next_opening(pickup["lat"], pickup["long"], now)
    if opens is not None and opens > now:
        pickup["pickup_scheduled_at"] = opens.isoformat().replace("+00:00", "Z")
    suffix = uuid4().hex[:8]
    drop = dict(sample["orders"][0]["dropoff"][0])
    drop |= {
        "client_order_id": f"SCENARIO-{scenario.upper()}-{suffix}",
        "sandbox_scenario": scenario,
    }
    drop.pop("external_waybill", None)
    if pin:
        drop["dropoff_verification"] = {"pin": True}
    if cod:
        drop["cod"] = {"amount": cod}
    return {
        "client_batch_id": f"sandbox-scenario-{suffix}",
        "orders": [{"pickup": pickup, "dropoff": [drop]}],
    }
