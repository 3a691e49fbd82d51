"""A courier's answer to an offer, and an operator's assignment by hand (docs/contract.md §21).

Accepting assigns every PENDING drop of the order to the courier through the one state
machine, in one transaction under the offer's row lock: the dispatcher expiring the offer,
a second tap on the phone, or a cancel of the drops wait for it or find it done. An offer
that is no longer open, or whose drops are no longer waiting, is gone (409 OFFER_GONE).
A phone that sends its accept (or decline) again gets the same answer, not an error.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from couriers.selectors import ORDER_STILL_TO_CARRY, actor_of
from couriers.services import set_online
from dispatch.models import Offer, OfferStatus
from orders.models import Driver, Drop, DropStatus, Order
from tracking.lifecycle import MoveResult, apply_moves, single_step
from tracking.services import DriverRefused, check_driver_for


class OfferGone(Exception):
    """The offer is no longer the courier's to take (expired, answered, or its order gone)."""


def open_offer_of(courier: Driver, *, now: datetime | None = None) -> Offer | None:
    """The offer the courier may answer now, with its order; None without one. An offer
    whose drops were all cancelled meanwhile is not shown (it expires by itself)."""
    now = now or timezone.now()
    pending = Drop.objects.filter(order_id=OuterRef("order_id"), status=DropStatus.PENDING)
    return (
        Offer.objects.filter(courier=courier, status=OfferStatus.OFFERED, expires_at__gt=now)
        .filter(Exists(pending))
        .select_related("order")
        .first()
    )


@transaction.atomic
def accept_offer(*, courier: Driver, offer_id: UUID) -> Offer:
    """Take the offer: its order's waiting drops become ASSIGNED to the courier. Raises
    Offer.DoesNotExist for an offer that is not the courier's, OfferGone when too late."""
    offer = Offer.objects.select_for_update().get(pk=offer_id, courier=courier)
    if offer.status == OfferStatus.ACCEPTED:
        return offer  # sent again: already theirs
    now = timezone.now()
    if offer.status != OfferStatus.OFFERED or offer.expires_at <= now:
        raise OfferGone("This offer is no longer open: it expired or was answered.")
    if not _free_for(courier, offer.order_id):  # given another order by hand meanwhile
        raise OfferGone("You already carry another order: finish it first.")
    pending = Drop.objects.filter(order_id=offer.order_id, status=DropStatus.PENDING)
    result = apply_moves(
        drop_ids=list(pending.values_list("pk", flat=True)),
        steps=single_step(DropStatus.ASSIGNED),
        actor=actor_of(courier),
        driver=courier,
    )
    if not result.moved:
        raise OfferGone("This order no longer waits for a courier: its drops were cancelled.")
    Offer.objects.filter(pk=offer.pk).update(status=OfferStatus.ACCEPTED, answered_at=now)
    offer.status, offer.answered_at = OfferStatus.ACCEPTED, now
    return offer


@transaction.atomic
def decline_offer(*, courier: Driver, offer_id: UUID) -> Offer:
    """Say no: the dispatcher's next run offers the order to the next nearest courier.
    Raises Offer.DoesNotExist (not theirs) or OfferGone (accepted, or too late)."""
    offer = Offer.objects.select_for_update().get(pk=offer_id, courier=courier)
    if offer.status == OfferStatus.DECLINED:
        return offer
    now = timezone.now()
    if offer.status != OfferStatus.OFFERED or offer.expires_at <= now:
        raise OfferGone("This offer is no longer open: it expired or was answered.")
    Offer.objects.filter(pk=offer.pk).update(status=OfferStatus.DECLINED, answered_at=now)
    offer.status, offer.answered_at = OfferStatus.DECLINED, now
    return offer


def _free_for(courier: Driver, order_id: UUID) -> bool:
    """Whether the courier holds no route but this order's, read under the courier's row
    lock: two assignments of one courier (an accept, an operator) take turns here, and the
    second sees the first's route."""
    Driver.objects.select_for_update().filter(pk=courier.pk).values_list("pk").first()
    held = Order.objects.filter(ORDER_STILL_TO_CARRY, driver=courier).exclude(pk=order_id)
    return not held.exists()


def set_availability(*, courier: Driver, online: bool) -> bool:
    """Go online or offline (couriers.services.set_online); going offline declines the open
    offer, so the order goes to someone who is there instead of waiting out its time."""
    online = set_online(courier=courier, online=online)
    offer = None if online else open_offer_of(courier)
    if offer is not None:
        decline_offer(courier=courier, offer_id=offer.pk)
    return online


@transaction.atomic
def assign_by_hand(*, order: Order, courier: Driver, actor: str) -> MoveResult:
    """An operator gives the order's waiting drops to a courier (the dispatch board): an
    open offer of it is withdrawn first. Raises DriverRefused for a courier who may not
    take it (inactive; the sandbox test driver on a live order; another vehicle; one
    already on a route)."""
    drop_ids = list(
        Drop.objects.filter(order=order, status=DropStatus.PENDING).values_list("pk", flat=True)
    )
    check_driver_for(drop_ids=drop_ids, driver=courier)
    if courier.vehicle != order.vehicle:
        raise DriverRefused(
            f"{courier} rides a {courier.vehicle}; this order needs a {order.vehicle}. "
            "Nothing changed."
        )
    now = timezone.now()
    # Offers first, then the courier's row, as an accept takes them: the two never deadlock.
    Offer.objects.filter(order=order, status=OfferStatus.OFFERED).update(
        status=OfferStatus.WITHDRAWN, answered_at=now
    )
    if not _free_for(courier, order.pk):
        raise DriverRefused(f"{courier} is on a route: assign someone free. Nothing changed.")
    return apply_moves(
        drop_ids=drop_ids, steps=single_step(DropStatus.ASSIGNED), actor=actor, driver=courier
    )
