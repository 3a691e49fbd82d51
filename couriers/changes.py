"""How a change reaches the courier (docs/couriers.md, "Changes reach you"): the route's
version, what changed on it since a moment in words, and the words that confirm a move.

The version is a digest of the route as served: whatever changes what the courier sees (a
cancellation, an edit, an order added or taken back, a move) changes it, and nothing else
does, without a counter to bump at every writer. What changed is read from the rows that
record each change (the drops' status history and the `order.updated` events), so it is
the same however long the phone was away (docs/decisions.md, "The courier's route version
is a digest").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from couriers.models import Driver
from dispatch.models import Offer, OfferStatus
from events.models import Event, EventType
from orders.couriers import actor_of
from orders.models import DeliveryEvent, Drop, DropStatus, FailureReason
from orders.statuses import STILL_TO_CARRY

# How far back what changed is told; past it, the route as it is is all the courier needs.
CHANGES_KEPT = timedelta(hours=24)


def route_version(route: dict | None) -> str:
    """A digest of the route as served (without its version): equal routes, equal versions."""
    text = json.dumps(route, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def route_tag(route: dict | None, courier: Driver) -> str:
    """What GET /courier/route's ETag quotes and the app's page checks against: the route's
    version, and the shift's end when one is set, so an end an operator sets in the console
    reaches the app with the next check, as a change to the route does."""
    version = route["version"] if route else route_version(None)
    if courier.shift_ends_at is None:
        return version
    return f"{version}-{int(courier.shift_ends_at.timestamp() * 1000)}"  # to the ms, as iso_z


def first_name(drop: Drop) -> str:
    return (drop.recipient_name or "").split(" ")[0] or "the recipient"


@dataclass(frozen=True, slots=True)
class Change:
    drop_id: str
    kind: str  # cancelled, edited, added, taken_back
    at: datetime
    message: str

    def as_wire(self) -> dict:
        return {
            "drop_id": self.drop_id,
            "kind": self.kind,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "message": self.message,
        }


def changes_since(courier, since: datetime) -> list[Change]:
    """What changed on the courier's orders after `since`, oldest first: drops cancelled,
    orders added by someone else (an operator or the planner), orders an operator took back
    from them, edits of what a stop shows.
    At most CHANGES_KEPT back: a phone away longer hears of the route as it is now."""
    since = max(since, timezone.now() - CHANGES_KEPT)
    moved = (
        DeliveryEvent.objects.filter(
            drop__order__driver=courier,
            at__gt=since,
            status__in=[DropStatus.CANCELLED, DropStatus.ASSIGNED],
        )
        .exclude(actor=actor_of(courier))  # what the courier did, they know
        .select_related("drop__business")
    )
    changes = [_status_change(event) for event in moved]
    changes += _taken_back(courier, since)
    changes += _edits(courier, since)
    return sorted(changes, key=lambda change: change.at)


def _status_change(event: DeliveryEvent) -> Change:
    drop, shop = event.drop, event.drop.business.name
    if event.status == DropStatus.ASSIGNED:
        message = f"New on your route: {shop}'s delivery to {first_name(drop)}."
        return Change(str(drop.pk), "added", event.at, message)
    # A cancellation by the shop comes through its API key or its dashboard.
    by_shop = event.actor.startswith(("api key", "dashboard"))
    who = shop if by_shop else "An operator"
    message = f"{who} cancelled the delivery to {first_name(drop)}: don't pick it up."
    return Change(str(drop.pk), "cancelled", event.at, message)


def _taken_back(courier, since: datetime) -> list[Change]:
    """The orders an operator took back from the courier (dispatch.offers.take_back_order):
    one change per order, on the first of its drops that the move sent back to PENDING."""
    offers = Offer.objects.filter(
        courier=courier, status=OfferStatus.TAKEN_BACK, answered_at__gt=since
    ).select_related("order__business")
    taken = {(offer.order_id, offer.answered_at): offer for offer in offers}
    if not taken:
        return []
    moves = DeliveryEvent.objects.filter(
        drop__order_id__in=[order_id for order_id, _ in taken],
        status=DropStatus.PENDING,
        at__gt=since,
    ).order_by("drop_id")
    changes: dict[tuple, Change] = {}
    for order_id, at, drop_id in moves.values_list("drop__order_id", "at", "drop_id"):
        offer = taken.get((order_id, at))
        if offer is None or (order_id, at) in changes:
            continue  # another move to PENDING (a scheduled pickup come due), or told already
        shop = offer.order.business.name
        message = f"An operator took back the order of {shop}: don't pick it up."
        changes[(order_id, at)] = Change(str(drop_id), "taken_back", at, message)
    return list(changes.values())


# What an edit may change that a stop shows, in the words of "The … of Dara's delivery".
EDITED_WORDS = {
    "dropoff.address": "address",
    "dropoff.lat": "address",
    "dropoff.long": "address",
    "dropoff_window": "time window",
    "cod": "cash to collect",
    "notes": "notes",
    "dropoff.phone": "phone number",
    "dropoff.name": "recipient's name",
    "parcel": "parcel",
}


def _edits(courier, since: datetime) -> list[Change]:
    drops = {
        str(drop.pk): drop
        for drop in Drop.objects.filter(order__driver=courier, status__in=STILL_TO_CARRY)
    }
    if not drops:
        return []
    # Read through each account's feed (its business and environment lead the index).
    feeds = Q()
    for business_id, environment in {(d.business_id, d.environment) for d in drops.values()}:
        feeds |= Q(business_id=business_id, environment=environment)
    events = Event.objects.filter(
        feeds,
        type=EventType.ORDER_UPDATED,
        created_at__gt=since,
        data__drop_id__in=list(drops),
    ).order_by("seq")
    changes = []
    for event in events:
        seen = (EDITED_WORDS[name] for name in event.data["changed"] if name in EDITED_WORDS)
        words = list(dict.fromkeys(seen))
        if not words:
            continue  # nothing the courier sees (a waybill number)
        drop = drops[event.data["drop_id"]]
        what = " and ".join(filter(None, [", ".join(words[:-1]), words[-1]]))
        message = f"The {what} of {first_name(drop)}'s delivery changed."
        changes.append(Change(str(drop.pk), "edited", event.created_at, message))
    return changes


def confirmation(drop: Drop) -> str:
    """The words that confirm a move the courier made: "Delivered to Dara at 14:05 — cash
    12.50 USD collected"; the time is the move's own, in the service's time zone."""
    at = (
        DeliveryEvent.objects.filter(drop=drop, status=drop.status)
        .order_by("-at")
        .values_list("at", flat=True)
        .first()
    ) or drop.updated_at
    when = timezone.localtime(at).strftime("%H:%M")
    name = first_name(drop)
    if drop.status == DropStatus.PICKED_UP:
        return f"Picked up the parcel for {name} at {when}."
    if drop.status == DropStatus.DELIVERED:
        said = f"Delivered to {name} at {when}"
        if drop.cod_amount is not None and drop.cod_collected_at is not None:
            said += f" — cash {drop.cod_amount} {drop.currency} collected"
        return said + "."
    if drop.status == DropStatus.FAILED:
        reason = FailureReason(drop.failure_reason or FailureReason.OTHER).label
        return f"Not delivered to {name} at {when}: {reason.lower()}."
    if drop.status == DropStatus.RETURNING:
        return f"Taking {name}'s parcel back to the shop ({when})."
    return f"{name}'s parcel back at the shop at {when}."
