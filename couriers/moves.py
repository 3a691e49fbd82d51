"""A courier's moves (docs/contract.md §20): through the one state machine
(tracking.lifecycle), the courier as actor. The same move sent twice (a phone retrying, an
offline queue sending again) finds the drop already there and changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from couriers.inputs import Move
from orders.couriers import actor_of
from orders.models import Drop, DropStatus
from orders.statuses import FINISHED_STATUSES
from tracking.lifecycle import Outcome, apply_moves, is_legal, single_step
from tracking.proof import scan_matches


class CourierMoveRefused(Exception):
    """Why a courier's move was not made: `code` is the API's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class MoveMade:
    drop: Drop
    repeated: bool  # it was already there: nothing changed


def move_as_courier(
    *,
    courier,
    drop: Drop,
    move: Move,
    photo: str | None = None,
    signature: str | None = None,
) -> MoveMade:
    """Move one of the courier's drops; raises CourierMoveRefused (ILLEGAL_TRANSITION,
    WRONG_PIN, COD_NOT_COLLECTED, SCAN_MISMATCH, SIGNATURE_REQUIRED) with nothing changed."""
    if drop.status == move.to:
        return MoveMade(drop, repeated=True)
    if is_legal(drop.status, move.to):  # an illegal move is refused as such, with the route
        check_verification(drop, move, signature)
    if move.to == DropStatus.DELIVERED and drop.cod_amount is not None and not move.cod_collected:
        raise CourierMoveRefused(
            "COD_NOT_COLLECTED",
            f"Collect {drop.cod_amount} in cash first, then send cod_collected: true.",
        )
    outcome = Outcome(
        failure_reason=move.reason,
        photo=photo,
        signature=signature if move.to == DropStatus.DELIVERED else None,
        received_by=move.received_by,
        return_received_by=move.received_by if move.to == DropStatus.RETURNED else None,
        pins={drop.pk: move.pin} if move.pin else {},
    )
    result = apply_moves(
        drop_ids=[drop.pk],
        steps=single_step(move.to),
        actor=actor_of(courier),
        carried_by=courier.pk,
        outcome=outcome,
    )
    if drop.pk in result.not_carried:
        raise CourierMoveRefused("NOT_FOUND", "No drop of yours has this id.")
    if drop.pk in result.pin_missing:
        raise CourierMoveRefused("WRONG_PIN", "This drop asks for the recipient's PIN.")
    if drop.pk in result.wrong_pin:
        raise CourierMoveRefused(
            "WRONG_PIN", f"Wrong PIN ({result.wrong_pin[drop.pk]} wrong so far)."
        )
    moved = next(iter(result.moved), None)
    if moved is None:
        stayed = result.refused.get(drop.pk, drop.status)
        if stayed == move.to:  # the same move, sent twice at once: the other one made it
            drop.refresh_from_db()
            return MoveMade(drop, repeated=True)
        raise CourierMoveRefused("ILLEGAL_TRANSITION", not_movable(stayed, move.to))
    if move.to == DropStatus.DELIVERED and moved.status == DropStatus.FAILED:
        raise CourierMoveRefused("WRONG_PIN", "Wrong PIN too many times: the drop has failed.")
    moved.refresh_from_db()  # the columns the move set in bulk (cod_collected_at, proof)
    return MoveMade(moved, repeated=False)


# The moves that carry the label's code when a drop asks for a scan (docs/contract.md §24).
SCANNED_MOVES = frozenset({DropStatus.PICKED_UP, DropStatus.DELIVERED})


def check_verification(drop: Drop, move: Move, signature: str | None) -> None:
    """The scan and the signature a drop asks for (docs/contract.md §24), checked before
    anything moves. A drop's code and what it asks for never change, so no lock is needed."""
    if (
        drop.needs_scan
        and move.to in SCANNED_MOVES
        and not scan_matches(drop.short_code, move.scan)
    ):
        said = "Scan the code on the parcel's label" if not move.scan else "This is not the code"
        raise CourierMoveRefused("SCAN_MISMATCH", f"{said} of this drop's parcel.")
    if drop.needs_signature and move.to == DropStatus.DELIVERED and not signature:
        raise CourierMoveRefused(
            "SIGNATURE_REQUIRED", "This drop asks for the recipient's signature: let them sign."
        )


def not_movable(status: str, to: str) -> str:
    """Why a stop cannot make a move, in the courier's words."""
    if status == DropStatus.CANCELLED:
        return "This delivery was cancelled: don't pick it up."
    if status in FINISHED_STATUSES:
        return f"This stop is done ({DropStatus(status).label.lower()}): nothing more to send."
    now, wanted = DropStatus(status).label.lower(), DropStatus(to).label.lower()
    return f"This stop is {now}, so it cannot be marked {wanted}."
