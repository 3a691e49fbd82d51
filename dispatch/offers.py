"""A courier's answer to an offer, and an operator's assignment by hand (docs/contract.md §21).

An offer adds one or more orders to the courier's run (dispatch/planner.py). Accepting
assigns every PENDING drop of its orders to the courier through the one state machine and
gives the run the offer's stop order, in one transaction under the offer's row locks: the
planner expiring the offer, a second tap on the phone, or a cancel of the drops wait for it
or find it done. An offer that is no longer open, or whose drops are no longer waiting, is
gone (409 OFFER_GONE). A phone that sends its accept (or decline) again gets the same
answer, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from billing.custody import cash_limit_refusal, couriers_over_cash_limit
from dispatch.insertion import insert_order
from dispatch.models import Offer, OfferStatus
from dispatch.travel import travel_times
from orders.couriers import Courier, actor_of, courier_model, position_model
from orders.models import Drop, DropStatus, Order
from orders.runs import DROP, PICKUP, leave_runs, run_of, to_do, write_run_order
from orders.statuses import NOT_PICKED_UP
from tracking.lifecycle import MoveResult, apply_moves, single_step, step_from
from tracking.services import DriverRefused, check_driver_for
from tracking.window_watch import flag_run_windows


class TakeBackRefused(Exception):
    """The order cannot be taken back: no courier has it, or a parcel of it is picked up."""


class OfferGone(Exception):
    """The offer is no longer the courier's to take (expired, answered, or its order gone)."""


def open_offer_of(courier: Courier, *, now: datetime | None = None) -> Offer | None:
    """The offer the courier may answer now (its lead row); None without one. An offer
    whose drops were all cancelled meanwhile is not shown (it expires by itself)."""
    now = now or timezone.now()
    pending = Drop.objects.filter(
        order__offers__bundle=OuterRef("bundle"),
        order__offers__courier=courier,
        status=DropStatus.PENDING,
    )
    return (
        Offer.objects.filter(
            courier=courier, status=OfferStatus.OFFERED, lead=True, expires_at__gt=now
        )
        .filter(Exists(pending))
        .first()
    )


def offer_rows(offer: Offer) -> list[Offer]:
    """Every row of the offer (one per order it adds), the lead first."""
    return list(
        Offer.objects.filter(bundle=offer.bundle, courier_id=offer.courier_id)
        .select_related("order")
        .order_by("-lead", "pk")
    )


@transaction.atomic
def accept_offer(*, courier: Courier, offer_id: UUID) -> Offer:
    """Take the offer: its orders' waiting drops become ASSIGNED to the courier, and the run
    takes the offer's stop order. Raises Offer.DoesNotExist for an offer that is not the
    courier's, OfferGone when too late."""
    rows = _lock_offer(courier, offer_id)
    lead = rows[0]
    if lead.status == OfferStatus.ACCEPTED:
        return lead  # sent again: already theirs
    now = timezone.now()
    if lead.status != OfferStatus.OFFERED or lead.expires_at <= now:
        raise OfferGone("This offer is no longer open: it expired or was answered.")
    _lock_courier(courier)
    pending = Drop.objects.filter(
        order_id__in=[row.order_id for row in rows], status=DropStatus.PENDING
    )
    result = apply_moves(
        drop_ids=list(pending.values_list("pk", flat=True)),
        steps=single_step(DropStatus.ASSIGNED),
        actor=actor_of(courier),
        driver=courier,
    )
    if not result.moved:
        raise OfferGone("These orders no longer wait for a courier: their drops were cancelled.")
    Offer.objects.filter(pk__in=[row.pk for row in rows]).update(
        status=OfferStatus.ACCEPTED, answered_at=now
    )
    order_run(courier, lead.stops or [])
    watch_windows(courier)
    lead.status, lead.answered_at = OfferStatus.ACCEPTED, now
    return lead


def order_run(courier: Courier, stops: list[dict]) -> None:
    """The courier's run in this order (an offer's stops), the run's other stops to do after
    them in the order they had."""
    named = [(stop["kind"], UUID(stop["pass_order_id"]), _drop_id(stop)) for stop in stops]
    known = set(named)
    rest = [
        (stop.kind, stop.order_id, stop.drop_id)
        for stop in to_do(run_of(courier.pk))
        if (stop.kind, stop.order_id, stop.drop_id) not in known
    ]
    write_run_order(courier.pk, [*named, *rest])


def _drop_id(stop: dict) -> UUID | None:
    return None if stop["drop_id"] is None else UUID(stop["drop_id"])


@transaction.atomic
def decline_offer(*, courier: Courier, offer_id: UUID) -> Offer:
    """Say no: the planner's next run plans the orders without this courier. Raises
    Offer.DoesNotExist (not theirs) or OfferGone (accepted, or too late)."""
    rows = _lock_offer(courier, offer_id)
    lead = rows[0]
    if lead.status == OfferStatus.DECLINED:
        return lead
    now = timezone.now()
    if lead.status != OfferStatus.OFFERED or lead.expires_at <= now:
        raise OfferGone("This offer is no longer open: it expired or was answered.")
    Offer.objects.filter(pk__in=[row.pk for row in rows]).update(
        status=OfferStatus.DECLINED, answered_at=now
    )
    lead.status, lead.answered_at = OfferStatus.DECLINED, now
    return lead


def _lock_offer(courier: Courier, offer_id: UUID) -> list[Offer]:
    """The offer's rows, locked in pk order, the lead first; Offer.DoesNotExist when the
    courier has no offer of this id."""
    rows = list(
        Offer.objects.select_for_update().filter(bundle=offer_id, courier=courier).order_by("pk")
    )
    if not rows:
        raise Offer.DoesNotExist
    return sorted(rows, key=lambda row: not row.lead)


def _lock_courier(courier: Courier) -> None:
    """The courier's row lock: two changes of one courier's run (an accept, an operator)
    take turns here, and the second sees the first's run."""
    courier_model().objects.select_for_update().filter(pk=courier.pk).values_list("pk").first()


@transaction.atomic
def assign_by_hand(*, order: Order, courier: Courier, actor: str) -> MoveResult:
    """An operator gives the order's waiting drops to a courier (the dispatch board): an
    open offer of it is withdrawn first. Raises DriverRefused for a courier who may not
    take it (inactive; the sandbox test driver on a live order; another vehicle; one over
    the cash limit for an order with cash to collect). The order joins the courier's run
    where it adds least riding time (dispatch/insertion.py)."""
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
    # An open offer of the order is withdrawn whole: the plan it was part of changed.
    bundles = Offer.objects.filter(order=order, status=OfferStatus.OFFERED).values("bundle")
    Offer.objects.filter(bundle__in=bundles, status=OfferStatus.OFFERED).update(
        status=OfferStatus.WITHDRAWN, answered_at=now
    )
    _lock_courier(courier)
    stops = _run_with(courier, order)
    result = apply_moves(
        drop_ids=drop_ids, steps=single_step(DropStatus.ASSIGNED), actor=actor, driver=courier
    )
    write_run_order(courier.pk, stops)
    watch_windows(courier)
    return result


def watch_windows(courier: Courier) -> None:
    """The windows of the courier's run, at risk where its ETA through the run now passes
    their end (tracking.window_watch.flag_run_windows)."""
    position = position_model().objects.filter(courier_id=courier.pk).first()
    if position is not None:
        flag_run_windows(courier.pk, (position.lat, position.long), timezone.now())


def _run_with(courier: Courier, order: Order) -> list[tuple]:
    """The courier's run to do with the order's pickup and waiting drops inserted where they
    add least riding time: (kind, order id, drop id) stops."""
    run = to_do(run_of(courier.pk))
    drops = list(
        Drop.objects.filter(order=order, status=DropStatus.PENDING).values_list("pk", "lat", "long")
    )
    position = position_model().objects.filter(courier_id=courier.pk).first()
    places = [(order.pickup_lat, order.pickup_long)]
    if position is not None:
        places[0] = (position.lat, position.long)
    elif run:
        places[0] = (run[0].lat, run[0].long)
    places += [(stop.lat, stop.long) for stop in run]
    places += [(order.pickup_lat, order.pickup_long)] + [(lat, long) for _, lat, long in drops]
    matrix = travel_times().seconds(places, speed_kmh=settings.COURIER_SPEED_KMH)
    pickup_at = 1 + len(run)
    inserted = insert_order(
        matrix,
        start=0,
        run=[((stop.kind, stop.order_id, stop.drop_id), n) for n, stop in enumerate(run, 1)],
        pickup=((PICKUP, order.pk, None), pickup_at),
        drops=[((DROP, order.pk, pk), pickup_at + n) for n, (pk, _, _) in enumerate(drops, 1)],
    )
    return inserted.stops


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
    leave_runs([order.pk])
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
