"""Delivery moves with their side effects: cancel with refund, the sandbox driver, dispatch."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from uuid import UUID

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from accounts.models import Business, Environment
from billing.services import lock_account, refund_drops
from orders.couriers import Courier, courier_model
from orders.models import Drop, DropStatus, FailureReason
from orders.statuses import RETURN_STEPS
from orders.stops import lock_routes_of
from tracking.lifecycle import (
    CANCELLABLE,
    MoveResult,
    Outcome,
    along_happy_path,
    apply_moves,
    single_step,
    step_from,
)
from tracking.selectors import pick_drop_ids, track_drops

SANDBOX_ACTOR = "sandbox test driver"
RETURNS_ONLY = (
    ' Only a drop whose undeliverable_action is "return" returns, after FAILED '
    "(docs/contract.md §19)."
)
# The test driver knows every PIN; a drop it fails was not met by its recipient; a parcel
# it brings back is taken in at the pickup's desk.
SANDBOX_OUTCOME = Outcome(
    failure_reason=FailureReason.RECIPIENT_UNAVAILABLE,
    knows_pins=True,
    return_received_by="Sandbox pickup desk",
)


def sandbox_test_driver() -> Courier:
    driver, _ = courier_model().objects.get_or_create(
        is_sandbox_test_driver=True,
        defaults={"name": "Sandbox Test Driver", "phone": "+85512000000"},
    )
    return driver


def _entries_after(
    *, business, environment, identifiers, picked, result: MoveResult, error
) -> list[dict]:
    """Tracking entries for every distinct identifier, with an error where we could not act
    (`error` of the status a drop stayed in; None: that status is what was asked)."""
    entries = track_drops(business=business, environment=environment, identifiers=identifiers)
    for entry in entries:
        drop_id = picked.get(entry["client_order_id"])
        if drop_id is None:
            entry["error"] = {"code": "NOT_FOUND", "message": "No order with this client_order_id."}
        elif drop_id in result.refused and (refusal := error(result.refused[drop_id])):
            entry["error"] = refusal
    return entries


@transaction.atomic
def cancel_orders(
    *, business: Business, environment: str, identifiers: list[str], actor: str
) -> list[dict]:
    """Cancel drops still before pickup; refund or reverse what they were charged. A drop
    already cancelled is answered as cancelled, without an error and without a second refund."""
    # The account lock comes first, as in batch creation, so the two never deadlock.
    lock_account(business=business, environment=environment)
    picked = pick_drop_ids(business=business, environment=environment, identifiers=identifiers)
    lock_routes_of(picked.values())  # their orders' routes are renumbered (orders/stops.py)
    result = apply_moves(
        drop_ids=picked.values(),
        steps=single_step(DropStatus.CANCELLED),
        actor=actor,
        on_cancel=lambda drops, at: refund_drops(
            business=business, environment=environment, drops=drops, at=at
        ),
    )
    return _entries_after(
        business=business,
        environment=environment,
        identifiers=identifiers,
        picked=picked,
        result=result,
        error=_not_cancellable,
    )


def _not_cancellable(status: str) -> dict | None:
    """Why a drop in `status` was not cancelled. None for one already cancelled: a retried
    cancel is answered as done, the drop as it is; its refund was made once, by the move."""
    if status == DropStatus.CANCELLED:
        return None
    return {
        "code": "NOT_CANCELLABLE",
        "message": f"A drop in {status} cannot be cancelled "
        f"(only {', '.join(sorted(CANCELLABLE))}).",
    }


def advance_sandbox_orders(
    *, business: Business, identifiers: list[str], to: str | None
) -> list[dict]:
    """The sandbox test driver: walk drops along the happy path, recording every step."""
    environment = Environment.SANDBOX
    driver = sandbox_test_driver()
    # The answer is read under the row locks, so it shows this call's move, not a later one.
    with transaction.atomic():
        picked = pick_drop_ids(business=business, environment=environment, identifiers=identifiers)
        result = apply_moves(
            drop_ids=picked.values(),
            steps=along_happy_path(to),
            actor=SANDBOX_ACTOR,
            driver=driver,
            outcome=SANDBOX_OUTCOME,
        )
        return _entries_after(
            business=business,
            environment=environment,
            identifiers=identifiers,
            picked=picked,
            result=result,
            error=lambda status: {
                "code": "ILLEGAL_TRANSITION",
                "message": f"A drop in {status} cannot move"
                + (f" to {to}." if to else " forward.")
                + (RETURNS_ONLY if to in RETURN_STEPS else ""),
            },
        )


def cancel_drops_as_operator(*, drop_ids: list[UUID], actor: str) -> MoveResult:
    """Operator cancellation from admin, across accounts: each account refunded under its lock."""
    by_account: dict[tuple, list[UUID]] = defaultdict(list)
    for pk, business_id, environment in Drop.objects.filter(pk__in=drop_ids).values_list(
        "pk", "business_id", "environment"
    ):
        by_account[business_id, environment].append(pk)
    total = MoveResult()
    for (business_id, environment), ids in by_account.items():
        business = Business.objects.get(pk=business_id)
        with transaction.atomic():
            lock_account(business=business, environment=environment)
            lock_routes_of(ids)
            result = apply_moves(
                drop_ids=ids,
                steps=single_step(DropStatus.CANCELLED),
                actor=actor,
                on_cancel=lambda drops, at, b=business, e=environment: refund_drops(
                    business=b, environment=e, drops=drops, at=at
                ),
            )
        total.moved += result.moved
        total.refused.update(result.refused)
    return total


class DriverRefused(Exception):
    """A driver who may not take these drops; its message says why, in a sentence."""


def check_driver_for(*, drop_ids: list[UUID], driver: Courier) -> None:
    """Only an active driver drives, and the sandbox test driver drives sandbox drops only:
    a live order is driven by a person (docs/contract.md §6, §20)."""
    if not driver.active:
        raise DriverRefused(f"{driver} is not active: choose an active driver. Nothing changed.")
    if driver.is_sandbox_test_driver and (
        Drop.objects.filter(pk__in=drop_ids).exclude(environment=Environment.SANDBOX).exists()
    ):
        raise DriverRefused(
            f"{driver} drives sandbox orders only: choose a real driver for live orders. "
            "Nothing changed."
        )


def move_drops_as_operator(
    *,
    drop_ids: list[UUID],
    to: str,
    actor: str,
    driver: Courier | None = None,
    outcome: Outcome = Outcome(),  # noqa: B008 (frozen)
) -> MoveResult:
    """Operator moves from admin: assign (with a driver), picked up, delivered, failed.

    Delivering a drop that asks for a PIN needs it in `outcome.pins`; a wrong one counts,
    and the last allowed wrong one fails the drop with WRONG_PIN (tracking.lifecycle).
    Assigning raises DriverRefused, nothing moved, for a driver who may not take them.
    """
    if to == DropStatus.CANCELLED:
        return cancel_drops_as_operator(drop_ids=drop_ids, actor=actor)
    if to == DropStatus.ASSIGNED:
        if driver is None:
            raise ValueError("Assigning needs a driver.")
        check_driver_for(drop_ids=drop_ids, driver=driver)
    return apply_moves(
        drop_ids=drop_ids, steps=single_step(to), actor=actor, driver=driver, outcome=outcome
    )


def store_proof_photo(upload) -> str:
    """Keep an uploaded delivery photo with Django's storage API; the name it was stored as."""
    return default_storage.save(f"proof/{timezone.now():%Y/%m}/{upload.name}", upload)


def store_signature(upload) -> str:
    """Keep the recipient's signature (a PNG, checked by its bytes) with Django's storage API,
    named .png whatever the app called it: /pod/ serves it by that suffix."""
    return default_storage.save(f"proof/{timezone.now():%Y/%m}/signature.png", upload)


def dispatch_due_orders(*, now: datetime | None = None) -> MoveResult:
    """Scheduled drops whose pickup time has come start waiting for a driver (PENDING)."""
    now = now or timezone.now()
    due = list(
        Drop.objects.filter(
            status=DropStatus.SCHEDULED, order__pickup_scheduled_at__lte=now
        ).values_list("pk", flat=True)
    )
    return apply_moves(
        drop_ids=due,
        steps=step_from(DropStatus.SCHEDULED, DropStatus.PENDING),
        actor="dispatcher",
        at=now,
    )
