"""A courier as the layers between orders and couriers (tracking, dispatch) see one.

The courier is couriers.Driver, and couriers sits above tracking and dispatch
(docs/architecture.md): they name it, never import it. The model is the one an order's
`driver` points to (declared by the string "couriers.Driver"), its latest position the
courier's `position`; both are looked up when called, once Django has loaded the apps.
"""

from __future__ import annotations

from typing import TypeAlias

from django.db import models
from django.db.models import Q

from orders.models import DropStatus, Order, UndeliverableAction
from orders.statuses import STILL_TO_CARRY

# A couriers.Driver, where a type is written below couriers.
Courier: TypeAlias = models.Model

# A courier's route is an order of theirs with a drop still to carry (to the recipient, or
# back to the pickup): a failed drop to be returned is still to carry (§19).
ORDER_STILL_TO_CARRY = Q(drops__status__in=STILL_TO_CARRY) | Q(
    drops__status=DropStatus.FAILED, drops__undeliverable_action=UndeliverableAction.RETURN
)


def courier_model() -> type[models.Model]:
    """couriers.Driver: the model of an order's driver."""
    return Order._meta.get_field("driver").related_model


def position_model() -> type[models.Model]:
    """couriers.CourierPosition: the model of a courier's latest position."""
    return courier_model()._meta.get_field("position").related_model


def actor_of(courier: Courier) -> str:
    """How a courier's moves and answers are recorded in a drop's history."""
    return f"courier:{courier.pk}"
