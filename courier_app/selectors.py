"""What a courier sees (docs/contract.md §20): their route, and one stop of it. Only the
drops of orders assigned to this courier; anything else does not exist for them."""

from __future__ import annotations

from django.db.models import Q

from core.formats import money
from orders.models import Drop, DropStatus, Order, UndeliverableAction

# A courier's route is an order of theirs with a drop still to carry (to the recipient, or
# back to the pickup).
STILL_TO_CARRY = (DropStatus.ASSIGNED, DropStatus.PICKED_UP, DropStatus.RETURNING)


def current_order(courier) -> Order | None:
    """The courier's oldest order with a drop still to carry, or None: a failed drop to be
    returned to the pickup is still to carry (docs/contract.md §19)."""
    to_carry = Q(drops__status__in=STILL_TO_CARRY) | Q(
        drops__status=DropStatus.FAILED, drops__undeliverable_action=UndeliverableAction.RETURN
    )
    return Order.objects.filter(to_carry, driver=courier).order_by("created_at", "pk").first()


def route_of(courier) -> dict | None:
    order = current_order(courier)
    if order is None:
        return None
    drops = list(order.drops.order_by("pk"))
    return {
        "pass_order_id": str(order.pk),
        "vehicle": order.vehicle,
        "pickup": {
            "name": order.pickup_name,
            "phone": order.pickup_phone,
            "lat": order.pickup_lat,
            "long": order.pickup_long,
            "address": order.pickup_address,
        },
        "stops": [stop_of(drop, sequence) for sequence, drop in enumerate(drops, start=1)],
    }


def courier_drop(courier, drop_id) -> Drop | None:
    """The drop if it is on one of the courier's orders; None otherwise (a 404 for them)."""
    return Drop.objects.filter(pk=drop_id, order__driver=courier).first()


def stop_sequence_of(drop: Drop) -> int:
    return Drop.objects.filter(order_id=drop.order_id, pk__lt=drop.pk).count() + 1


def stop_of(drop: Drop, sequence: int) -> dict:
    """A stop as the courier app shows it: no more of the recipient than the job needs."""
    parcel = {
        "size": drop.parcel_size,
        "weight_kg": format(drop.parcel_weight_kg.normalize(), "f"),
        "description": drop.parcel_description,
    }
    cod = None
    if drop.cod_amount is not None:
        cod = {"amount": money(drop.cod_amount), "collected": drop.cod_collected_at is not None}
    return {
        "drop_id": str(drop.pk),
        "stop_sequence": sequence,
        "client_order_id": drop.client_order_id,
        "status": drop.status,
        "recipient_first_name": (drop.recipient_name or "").split(" ")[0],
        "phone": drop.recipient_phone,
        "lat": drop.lat,
        "long": drop.long,
        "address": drop.address,
        "notes": drop.notes,
        "parcel": parcel,
        "cod": cod,
        "needs_pin": drop.dropoff_pin is not None,
    }
