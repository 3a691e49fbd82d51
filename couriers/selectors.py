"""What a courier sees (docs/contract.md §20): their route, and one stop of it. Only the
drops of orders assigned to this courier; anything else does not exist for them."""

from __future__ import annotations

from django.db.models import F

from core.formats import iso_z, money
from couriers.changes import route_version
from geo.addresses import address_text
from orders.couriers import ORDER_STILL_TO_CARRY
from orders.models import Drop, DropStatus, Order
from orders.statuses import NO_DROP_OFF_AHEAD


def current_order(courier) -> Order | None:
    """The courier's oldest order with a drop still to carry, or None: the route they hold."""
    return (
        Order.objects.filter(ORDER_STILL_TO_CARRY, driver=courier)
        .order_by("created_at", "pk")
        .first()
    )


def route_of(courier) -> dict | None:
    """The route as served, with its `version` (couriers.changes.route_version)."""
    route = _route(courier)
    if route is not None:
        route["version"] = route_version(route)
    return route


def _route(courier) -> dict | None:
    order = current_order(courier)
    if order is None:
        return None
    # In stop order (docs/contract.md §21); an order dispatched before stop order existed, or
    # by hand, in the order its drops were created.
    drops = list(order.drops.order_by(F("stop_sequence").asc(nulls_last=True), "pk"))
    return {
        "pass_order_id": str(order.pk),
        "vehicle": order.vehicle,
        "pickup": {
            "name": order.pickup_name,
            "phone": order.pickup_phone,
            "lat": order.pickup_lat,
            "long": order.pickup_long,
            "address": order.pickup_address,
            "address_text": address_text(order.pickup_address),
        },
        "stops": [
            stop_of(drop, drop.stop_sequence or sequence)
            for sequence, drop in enumerate(drops, start=1)
        ],
    }


def courier_drop(courier, drop_id) -> Drop | None:
    """The drop if it is on one of the courier's orders; None otherwise (a 404 for them)."""
    return Drop.objects.filter(pk=drop_id, order__driver=courier).first()


def stop_sequence_of(drop: Drop) -> int:
    if drop.stop_sequence is not None:
        return drop.stop_sequence
    return Drop.objects.filter(order_id=drop.order_id, pk__lt=drop.pk).count() + 1


def stop_of(drop: Drop, sequence: int) -> dict:
    """A stop as the courier app shows it: no more of the recipient than the job needs, and
    once its drop-off is behind it or will never come (delivered, failed, cancelled), none of
    where the recipient is or how to call them (`done`)."""
    parcel = {
        "size": drop.parcel_size,
        # A number, as in tracking entries (tracking.selectors reads it as a float).
        "weight_kg": float(drop.parcel_weight_kg),
        "description": drop.parcel_description,
    }
    cod = None
    if drop.cod_amount is not None:
        cod = {"amount": money(drop.cod_amount), "collected": drop.cod_collected_at is not None}
    done = drop.status in NO_DROP_OFF_AHEAD
    return {
        "drop_id": str(drop.pk),
        "stop_sequence": sequence,
        "client_order_id": drop.client_order_id,
        "status": drop.status,
        "recipient_first_name": (drop.recipient_name or "").split(" ")[0],
        "done": done,
        "phone": None if done else drop.recipient_phone,
        "lat": None if done else drop.lat,
        "long": None if done else drop.long,
        "address": None if done else drop.address,
        "address_text": "" if done else address_text(drop.address),
        "notes": None if done else drop.notes,
        "parcel": parcel,
        "cod": cod,
        "needs_pin": drop.dropoff_pin is not None,
        "needs_scan": drop.needs_scan,  # PICKED_UP and DELIVERED carry the label's code
        "needs_signature": drop.needs_signature,  # DELIVERED carries the recipient's signature
    }


def offer_view(offer) -> dict:
    """An offer as the courier sees it before taking it: where, how many, until when."""
    order = offer.order
    drops = order.drops.filter(status=DropStatus.PENDING).order_by(
        F("stop_sequence").asc(nulls_last=True), "pk"
    )
    return {
        "offer_id": str(offer.pk),
        "pass_order_id": str(order.pk),
        "expires_at": iso_z(offer.expires_at),
        "vehicle": order.vehicle,
        "pickup": {
            "name": order.pickup_name,
            "lat": order.pickup_lat,
            "long": order.pickup_long,
            "address": order.pickup_address,
            "address_text": address_text(order.pickup_address),
        },
        "drops": [
            {"drop_id": str(d.pk), "stop_sequence": d.stop_sequence, "lat": d.lat, "long": d.long}
            for d in drops
        ],
    }
