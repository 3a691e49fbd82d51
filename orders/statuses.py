"""A drop's statuses and their named sets (docs/contract.md §6, §19), each written once, here.

The state machine that moves a drop between them is tracking/lifecycle.py (its legal moves
name these sets); everything that asks "is this drop active?", "is a courier on the way?"
and so on asks it of a set below, never of a tuple of its own: tests/orders/test_statuses.py
pins each set against the product's definitions and refuses a hand-written copy elsewhere.
Where two questions have the same answer today but are different questions, each has its
own name (the set says which one the code asks).

- HAPPY_PATH: SCHEDULED, PENDING, ASSIGNED, PICKED_UP, DELIVERED (in order, §6).
- RETURN_PATH: FAILED, RETURNING, RETURNED (in order, §19: a failed drop that returns).
- ACTIVE_STATUSES: SCHEDULED, PENDING, ASSIGNED, PICKED_UP, RETURNING (§6, §19): a
  client_order_id is unique among these (the partial unique index).
- FINISHED_STATUSES: DELIVERED, FAILED, RETURNED, CANCELLED: every status not active.
- INITIAL_STATUSES: SCHEDULED, PENDING: what a drop is created in (§5).
- EDITABLE_LOCATION: SCHEDULED, PENDING: where the location, window, parcel, cash and
  undeliverable action may still change (§17); no courier has the drop yet.
- NOT_PICKED_UP: SCHEDULED, PENDING, ASSIGNED: the courier does not have the parcel yet: a
  drop may be cancelled (§6), its stop is on its order's route (§21), its window's ETA
  counts from the pickup time (§17).
- ON_THE_WAY: ASSIGNED, PICKED_UP: a courier is on the way to the drop (to its pickup, then
  to the recipient): only then does its entry show where the courier is (§20).
- STILL_TO_CARRY: ASSIGNED, PICKED_UP, RETURNING: the courier still carries the drop, to the
  recipient or back to the pickup (a courier's route, §20; with FAILED drops that return).
- NO_DROP_OFF_AHEAD: DELIVERED, FAILED, RETURNING, RETURNED, CANCELLED: the drop-off is
  behind it or will never come: no ETA (§14), no courier's progress towards it.
- FAILED_ONCE: FAILED, RETURNING, RETURNED: the drop's entry shows its failure (§19).
- TO_RETURN: FAILED, RETURNING: failed and not back at the pickup yet (a disposed drop
  stays FAILED).
- RETURN_STEPS: RETURNING, RETURNED: the statuses only a drop that returns reaches
  (undeliverable_action "return", §19).
- FAILURE_OUTCOMES: FAILED, RETURNED: the moves that record how a failure ended: its
  reason, then who took the parcel back.
- MOVES_MONEY: CANCELLED, RETURNED: the moves that move money: a cancellation refunds, a
  return charges its fee (§7, §19).
- COURIER_MOVES: PICKED_UP, DELIVERED, FAILED, RETURNING, RETURNED: the statuses a courier
  moves a drop to (§20, §24); assigning is the dispatcher's.
- WINDOW_MILESTONES: PENDING, PICKED_UP: the moves whose time a window's ETA counts from
  (began to wait for a courier, picked up: §17).
- COURIER_PAID: DELIVERED, RETURNED: the moves a courier is paid for (a delivered drop, a
  return: §24); an order's run counts from the first of them.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class DropStatus(models.TextChoices):
    SCHEDULED = "SCHEDULED", _("Scheduled")
    PENDING = "PENDING", _("Pending")
    ASSIGNED = "ASSIGNED", _("Assigned")
    PICKED_UP = "PICKED_UP", _("Picked up")
    DELIVERED = "DELIVERED", _("Delivered")
    FAILED = "FAILED", _("Failed")
    RETURNING = "RETURNING", _("Returning")
    RETURNED = "RETURNED", _("Returned")
    CANCELLED = "CANCELLED", _("Cancelled")


_S, _P, _A = DropStatus.SCHEDULED, DropStatus.PENDING, DropStatus.ASSIGNED
_PU, _D, _F = DropStatus.PICKED_UP, DropStatus.DELIVERED, DropStatus.FAILED
_RING, _RED, _C = DropStatus.RETURNING, DropStatus.RETURNED, DropStatus.CANCELLED

# Sequences, in order: a path is walked step by step (tracking.lifecycle).
HAPPY_PATH = [_S, _P, _A, _PU, _D]
RETURN_PATH = [_F, _RING, _RED]

# Tuples, in a fixed order: the partial indexes of orders.models name the first two, and a
# migration records their members in this order.
ACTIVE_STATUSES = (_S, _P, _A, _PU, _RING)
FINISHED_STATUSES = (_D, _F, _RED, _C)
INITIAL_STATUSES = (_S, _P)
EDITABLE_LOCATION = frozenset({_S, _P})
# In this order: it is the courier's choice of moves, as the API and the app list it.
COURIER_MOVES = (_PU, _D, _F, _RING, _RED)
STILL_TO_CARRY = (_A, _PU, _RING)
WINDOW_MILESTONES = (_P, _PU)
COURIER_PAID = (_D, _RED)

NOT_PICKED_UP = frozenset({_S, _P, _A})
ON_THE_WAY = frozenset({_A, _PU})
NO_DROP_OFF_AHEAD = frozenset({_D, _F, _RING, _RED, _C})
FAILED_ONCE = frozenset({_F, _RING, _RED})
TO_RETURN = (_F, _RING)
RETURN_STEPS = frozenset({_RING, _RED})
FAILURE_OUTCOMES = frozenset({_F, _RED})
MOVES_MONEY = frozenset({_C, _RED})
