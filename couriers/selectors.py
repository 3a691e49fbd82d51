"""What a courier sees (docs/contract.md §20, §21): their route (the run: pickups and drops of
every order they carry, in the order to ride), one stop of it, and the offer. Only the drops
of orders assigned to this courier; anything else does not exist for them."""

from __future__ import annotations

import math

from django.db.models import F

from core.formats import iso_z, money
from couriers.changes import route_version
from dispatch.offers import offer_rows
from geo.addresses import address_text
from orders.models import Drop, DropStatus, Order
from orders.runs import DROP, PICKUP, RunStop, run_drops, stops_of
from orders.statuses import NO_DROP_OFF_AHEAD


def route_of(courier) -> dict | None:
    """The route as served: the courier's run (docs/contract.md §21), with its `version`
    (couriers.changes.route_version); None without one."""
    route = _route(courier)
    if route is not None:
        route["version"] = route_version(route)
    return route


def _route(courier) -> dict | None:
    drops = run_drops([courier.pk])[courier.pk]
    if not drops:
        return None
    stops = stops_of(drops)
    orders = Order.objects.in_bulk({stop.order_id for stop in stops})
    rows = Drop.objects.in_bulk([stop.drop_id for stop in stops if stop.kind == DROP])
    served = []
    for number, stop in enumerate(stops, start=1):
        if stop.kind == PICKUP:
            served.append(pickup_stop(orders[stop.order_id], stop, number))
        else:
            served.append(stop_of(rows[stop.drop_id], number))
    return {"run_id": str(drops[0].run_id or orders[stops[0].order_id].pk), "stops": served}


def pickup_stop(order: Order, stop: RunStop, number: int) -> dict:
    """An order's pickup as a stop of the run: the shop, to visit while a parcel of the
    order waits there."""
    return {
        "kind": PICKUP,
        "pass_order_id": str(order.pk),
        "drop_id": None,
        "stop_number": number,
        "status": stop.status,
        "done": not stop.to_do,
        "name": order.pickup_name,
        "phone": order.pickup_phone,
        "lat": order.pickup_lat,
        "long": order.pickup_long,
        "address": address_text(order.pickup_address),
        "notes": None,
        "parcel": None,
        "cod": None,
        "dropoff_window": None,
        "needs_pin": False,
        "needs_scan": False,
        "verification": None,
    }


def courier_drop(courier, drop_id) -> Drop | None:
    """The drop if it is on one of the courier's orders; None otherwise (a 404 for them)."""
    return Drop.objects.filter(pk=drop_id, order__driver=courier).first()


def stop_number_of(courier, drop: Drop) -> int:
    """The drop's place in the courier's run (1 = the first stop); after the run's last stop
    when it has left the run (its order done)."""
    stops = stops_of(run_drops([courier.pk])[courier.pk])
    for number, stop in enumerate(stops, start=1):
        if stop.drop_id == drop.pk:
            return number
    return len(stops) + 1


def stop_of(drop: Drop, number: int) -> dict:
    """A drop as a stop of the run (`number`: its place in the run), as the courier app shows
    it: no more of the recipient than the job needs, and once its drop-off is behind it or
    will never come (delivered, failed, cancelled), none of where the recipient is or how to
    call them (`done`)."""
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
    first_name = (drop.recipient_name or "").split(" ")[0]
    return {
        "kind": DROP,
        "pass_order_id": str(drop.order_id),
        "drop_id": str(drop.pk),
        "stop_number": number,
        # Its place among its own order's drops (docs/contract.md §21), as in tracking.
        "stop_sequence": drop.stop_sequence,
        "client_order_id": drop.client_order_id,
        "status": drop.status,
        "done": done,
        "name": first_name,
        "recipient_first_name": first_name,
        "phone": None if done else drop.recipient_phone,
        "lat": None if done else drop.lat,
        "long": None if done else drop.long,
        "address": "" if done else address_text(drop.address),
        "notes": None if done else drop.notes,
        "parcel": parcel,
        "cod": cod,
        # When the recipient expects it (docs/contract.md §17): never handed over before start.
        "dropoff_window": None
        if drop.window_start is None
        else {"start": iso_z(drop.window_start), "end": iso_z(drop.window_end)},
        "needs_pin": drop.dropoff_pin is not None,
        "needs_scan": drop.needs_scan,  # PICKED_UP and DELIVERED carry the label's code
        "needs_signature": drop.needs_signature,  # DELIVERED carries the recipient's signature
        "verification": {
            "pin": drop.dropoff_pin is not None,
            "scan": drop.needs_scan,
            "signature": drop.needs_signature,
        },
    }


def offer_view(offer) -> dict:
    """An offer as the courier sees it before taking it (docs/contract.md §21): the orders it
    adds, where each is picked up and dropped, the run's new stop order, and the minutes it
    adds; addresses as text, no recipient."""
    rows = offer_rows(offer)
    orders = {str(row.order_id): row.order for row in rows}
    drops = Drop.objects.filter(order_id__in=list(orders), status=DropStatus.PENDING).order_by(
        "order_id", F("stop_sequence").asc(nulls_last=True), "pk"
    )
    by_order: dict[str, list] = {order_id: [] for order_id in orders}
    for drop in drops:
        by_order[str(drop.order_id)].append(drop)
    return {
        "offer_id": str(offer.bundle),
        "expires_at": iso_z(offer.expires_at),
        "orders": [_offered_order(order, by_order[key]) for key, order in orders.items()],
        "stops": _offered_stops(offer, orders, by_order),
        "extra_minutes": None
        if offer.extra_seconds is None
        else math.ceil(offer.extra_seconds / 60),
    }


def _offered_order(order: Order, drops: list[Drop]) -> dict:
    return {
        "pass_order_id": str(order.pk),
        "vehicle": order.vehicle,
        "pickup": {
            "name": order.pickup_name,
            "lat": order.pickup_lat,
            "long": order.pickup_long,
            "address": address_text(order.pickup_address),
        },
        "drops": [
            {"drop_id": str(d.pk), "stop_sequence": d.stop_sequence, "lat": d.lat, "long": d.long}
            for d in drops
        ],
    }


def _offered_stops(offer, orders: dict, by_order: dict) -> list[dict]:
    """The run's stops in the offer's order, each with its place; an offer without one (of
    one order to a free courier): the pickup, then its drops in stop order."""
    stops = offer.stops
    if not stops:
        stops = [{"kind": PICKUP, "pass_order_id": key, "drop_id": None} for key in orders]
        stops += [
            {"kind": DROP, "pass_order_id": key, "drop_id": str(d.pk)}
            for key, drops in by_order.items()
            for d in drops
        ]
    places = _places_of(stops)
    return [{**stop, **places.get((stop["pass_order_id"], stop["drop_id"]), {})} for stop in stops]


def _places_of(stops: list[dict]) -> dict:
    """(order id, drop id or None) → {lat, long} for these stops: two queries."""
    order_ids = {stop["pass_order_id"] for stop in stops}
    drop_ids = [stop["drop_id"] for stop in stops if stop["drop_id"]]
    places = {
        (str(pk), None): {"lat": lat, "long": long}
        for pk, lat, long in Order.objects.filter(pk__in=order_ids).values_list(
            "pk", "pickup_lat", "pickup_long"
        )
    }
    for pk, order_id, lat, long in Drop.objects.filter(pk__in=drop_ids).values_list(
        "pk", "order_id", "lat", "long"
    ):
        places[(str(order_id), str(pk))] = {"lat": lat, "long": long}
    return places
