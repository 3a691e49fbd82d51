"""A courier's answer to an offer, and an operator's assignment by hand (docs/contract.md §21).

Accepting assigns every PENDING drop of the order to the courier through the one state
machine, in one transaction under the offer's row lock: the dispatcher expiring the offer,
a second tap on the phone, or a cancel of the drops wait for it or find it done. An offer
that is no longer open, or whose drops are no longer waiting, is gone (409 OFFER_GONE).
A phone that sends its accept (or decline) again gets the same answer, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from billing.custody import cash_limit_refusal, couriers_over_cash_limit
from dispatch.models import Offer, OfferStatus
from orders.couriers import ORDER_STILL_TO_CARRY, Courier, actor_of, courier_model
from orders.models import Drop, DropStatus, Order
from orders.statuses import NOT_PICKED_UP
from tracking.lifecycle import MoveResult, apply_moves, single_step, step_from
from tracking.services import DriverRefused, check_driver_for


class TakeBackRefused(Exception):
    """The order cannot be taken back: no courier has it, or a parcel of it is picked up."""


class OfferGone(Exception):
    """The offer is no longer the courier's to take (expired, answered, or its order gone)."""


def open_offer_of(courier: Courier, *, now: datetime | None = None) -> Offer | None:
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
def accept_offer(*, courier: Courier, offer_id: UUID) -> Offer:
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
def decline_offer(*, courier: Courier, offer_id: UUID) -> Offer:
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


def _free_for(courier: Courier, order_id: UUID) -> bool:
    """Whether the courier holds no route but this order's, read under the courier's row
    lock: two assignments of one courier (an accept, an operator) take turns here, and the
    second sees the first's route."""
    courier_model().objects.select_for_update().filter(pk=courier.pk).values_list("pk").first()
    held = Order.objects.filter(ORDER_STILL_TO_CARRY, driver=courier).exclude(pk=order_id)
    return not held.exists()


@transaction.atomic
def assign_by_hand(*, order: Order, courier: Courier, actor: str) -> MoveResult:
    """An operator gives the order's waiting drops to a courier (the dispatch board): an
    open offer of it is withdrawn first. Raises DriverRefused for a courier who may not
    take it (inactive; the sandbox test driver on a live order; another vehicle; one
    already on a route; one over the cash limit for an order with cash to collect)."""
    drop_ids = list(
        Drop.objects.filter(order=order, status=DropStatus.PENDING).values_list("pk", flat=True)
    )
    check_driver_for(drop_ids=drop_ids, driver=courier)
    if courier.vehicle != order.vehicle:
        raise DriverRefused(
            f"{courier} rides a {courier.vehicle}; this order needs a {order.vehicle}. "
            "Nothing changed."
        )
    cod = Drop.objects.filter(pk__in=drop_ids, cod_amount__gt=0).exists()
    if cod and couriers_over_cash_limit([courier.pk]):  # docs/contract.md §23
        raise DriverRefused(cash_limit_refusal(courier))
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


@dataclass(frozen=True, slots=True)
class TakenBack:
    """What taking an order back did: the courier who lost it, the drops now waiting again."""

    courier: Courier
    moved: list[Drop]


@transaction.atomic
def take_back_order(*, order: Order, actor: str) -> TakenBack:
    """An operator takes the order back from its courier before pickup (docs/operator.md
    "Taking an order back"): its ASSIGNED drops go back to PENDING through the one state
    machine, the order loses its driver, and the courier's offer of it ends `taken_back`
    (one is written for an order given by hand), which tells the courier (couriers.changes)
    and keeps the dispatcher from offering it to them again (offer_once_per_courier).
    Raises TakeBackRefused, nothing changed, when no courier has it or a parcel is picked up."""
    # Offers, then drops, then the order: the order an accept takes them in.
    list(Offer.objects.select_for_update().filter(order=order).order_by("pk").values("pk"))
    drops = list(Drop.objects.select_for_update().filter(order=order).order_by("pk"))
    courier = Order.objects.select_for_update().get(pk=order.pk).driver
    if courier is None:
        raise TakeBackRefused("No courier has this order. Nothing changed.")
    if any(d.status not in NOT_PICKED_UP and d.status != DropStatus.CANCELLED for d in drops):
        raise TakeBackRefused(
            f"{courier} has picked up this order's parcels: it cannot be taken back. "
            "Nothing changed."
        )
    assigned = [d.pk for d in drops if d.status == DropStatus.ASSIGNED]
    if not assigned:  # every drop cancelled: nothing for anyone to carry
        raise TakeBackRefused("No drop of this order is assigned. Nothing changed.")
    now = timezone.now()
    result = apply_moves(
        drop_ids=assigned,
        steps=step_from(DropStatus.ASSIGNED, DropStatus.PENDING),
        actor=actor,
        at=now,
    )
    Order.objects.filter(pk=order.pk).update(driver=None)
    Offer.objects.update_or_create(
        order=order,
        courier=courier,
        defaults={"status": OfferStatus.TAKEN_BACK, "answered_at": now},
        create_defaults={
            "status": OfferStatus.TAKEN_BACK,
            "answered_at": now,
            "created_at": now,
            "expires_at": now,
        },
    )
    return TakenBack(courier=courier, moved=result.moved)
