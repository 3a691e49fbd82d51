"""Where couriers are, for tracking (docs/contract.md §20)."""

from __future__ import annotations

from django.db.models import Q

from orders.models import DropStatus, Order, UndeliverableAction

# A courier is on the way to a drop while it is assigned or picked up: only then does the
# drop's tracking entry show where the courier is.
ON_THE_WAY = frozenset({DropStatus.ASSIGNED, DropStatus.PICKED_UP})

# A courier's route is an order of theirs with a drop still to carry (to the recipient, or
# back to the pickup): a failed drop to be returned is still to carry (§19).
STILL_TO_CARRY = (DropStatus.ASSIGNED, DropStatus.PICKED_UP, DropStatus.RETURNING)
ORDER_STILL_TO_CARRY = Q(drops__status__in=STILL_TO_CARRY) | Q(
    drops__status=DropStatus.FAILED, drops__undeliverable_action=UndeliverableAction.RETURN
)


def current_order(courier) -> Order | None:
    """The courier's oldest order with a drop still to carry, or None: the route they hold."""
    return (
        Order.objects.filter(ORDER_STILL_TO_CARRY, driver=courier)
        .order_by("created_at", "pk")
        .first()
    )


def actor_of(courier) -> str:
    """How a courier's moves and answers are recorded in a drop's history."""
    return f"courier:{courier.pk}"
