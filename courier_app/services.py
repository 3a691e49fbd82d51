"""A courier's moves (docs/contract.md §20): through the one state machine
(tracking.lifecycle), the courier as actor. The same move sent twice (a phone retrying, an
offline queue sending again) finds the drop already there and changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from courier_app.inputs import Move
from couriers.selectors import actor_of
from orders.models import Drop, DropStatus
from tracking.lifecycle import Outcome, apply_moves, single_step


class CourierMoveRefused(Exception):
    """Why a courier's move was not made: `code` is the API's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class MoveMade:
    drop: Drop
    repeated: bool  # it was already there: nothing changed


def move_as_courier(*, courier, drop: Drop, move: Move, photo: str | None = None) -> MoveMade:
    """Move one of the courier's drops; raises CourierMoveRefused (ILLEGAL_TRANSITION,
    WRONG_PIN, COD_NOT_COLLECTED) with nothing changed."""
    if drop.status == move.to:
        return MoveMade(drop, repeated=True)
    if move.to == DropStatus.DELIVERED and drop.cod_amount is not None and not move.cod_collected:
        raise CourierMoveRefused(
            "COD_NOT_COLLECTED",
            f"Collect {drop.cod_amount} in cash first, then send cod_collected: true.",
        )
    outcome = Outcome(
        failure_reason=move.reason,
        photo=photo,
        received_by=move.received_by,
        return_received_by=move.received_by if move.to == DropStatus.RETURNED else None,
        pins={drop.pk: move.pin} if move.pin else {},
    )
    result = apply_moves(
        drop_ids=[drop.pk], steps=single_step(move.to), actor=actor_of(courier), outcome=outcome
    )
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
        raise CourierMoveRefused(
            "ILLEGAL_TRANSITION", f"A drop that is {stayed} cannot move to {move.to}."
        )
    if move.to == DropStatus.DELIVERED and moved.status == DropStatus.FAILED:
        raise CourierMoveRefused("WRONG_PIN", "Wrong PIN too many times: the drop has failed.")
    moved.refresh_from_db()  # the columns the move set in bulk (cod_collected_at, proof)
    return MoveMade(moved, repeated=False)
