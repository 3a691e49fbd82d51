"""The rows a batch writes: an order's and a drop's columns declared once, each a named
tuple whose fields are the columns in the COPY's order (`DropRow._fields` is the COPY's
column list), and the functions that make them from the decided drops, by keyword.

A named tuple is still a tuple: core.writes' compiled encoder reads it as fast as a plain
one (docs/decisions.md, "The write path is named steps over declared rows").
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from django.conf import settings

from fleet.models import DEFAULT_VEHICLE
from orders.decisions import Decider, DropDecision
from orders.inputs import DEFAULT_PARCEL_SIZE, DEFAULT_WEIGHT_KG
from orders.models import Batch, SandboxScenario, UndeliverableAction, initial_status
from orders.windows import ON_TRACK


class OrderRow(NamedTuple):
    """An order as the batch writes it: its columns, in the COPY's order."""

    id: str
    batch_id: str
    business_id: str
    environment: str
    pickup_name: str
    pickup_phone: str
    pickup_lat: float
    pickup_long: float
    pickup_address: dict | None
    pickup_resolved: bool
    pickup_scheduled_at: datetime | None
    created_at: datetime
    vehicle: str = DEFAULT_VEHICLE  # its code (docs/contract.md §18)


class DropRow(NamedTuple):
    """A drop as the batch writes it: its columns, in the COPY's order. Ids are text: COPY
    and the answer both want text."""

    id: str
    order_id: str
    batch_id: str
    business_id: str
    environment: str
    client_order_id: str
    external_waybill: str | None
    recipient_name: str
    recipient_phone: str
    lat: float
    long: float
    address: dict | None
    resolved: bool
    status: str
    price: Decimal
    currency: str
    created_at: datetime
    updated_at: datetime
    dropoff_pin: str | None
    sandbox_scenario: str | None
    scenario_next_at: datetime | None
    short_code: str  # what the label carries (orders/short_codes.py)
    # docs/contract.md §17 and §19; most drops have none of them (the defaults).
    notes: str | None = None
    undeliverable_action: str = UndeliverableAction.RETURN.value
    window_start: datetime | None = None
    window_end: datetime | None = None
    window_status: str | None = None
    window_risk_at: datetime | None = None  # when it turns at risk if nothing moves
    # docs/contract.md §18: what is carried (the contract's defaults unless sent) and the
    # cash to collect, whose fee is inside `price`.
    parcel_size: str = DEFAULT_PARCEL_SIZE
    parcel_weight_kg: Decimal = DEFAULT_WEIGHT_KG
    parcel_description: str | None = None
    parcel_value: Decimal | None = None
    cod_amount: Decimal | None = None
    cod_fee: Decimal = Decimal("0.00")
    recipient_email: str | None = None  # for notifications (docs/notifications.md)
    # docs/contract.md §24: the courier's moves carry the label's code, the recipient signs.
    needs_scan: bool = False
    needs_signature: bool = False
    recipient_language: str | None = None  # as sent; none: the business's (§26)


class Decided(NamedTuple):
    """A drop as decided (`decision.reason` None: accepted), with what it gets if accepted:
    its id, that id's tracking token, its short code (the label's: orders/short_codes.py) and,
    if asked for, its delivery PIN. Both its row and its result entry are made from this."""

    decision: DropDecision
    drop_id: str
    token: str
    short_code: str
    pin: str | None


class BatchShared(NamedTuple):
    """What every row of one batch shares, worked out once: its ids and time as text, and
    per pickup group its order's id, its drops' first status and their scenario's first
    step (a step from now, or the pickup time if later: a scheduled drop starts walking
    when it is due, docs/sandbox.md)."""

    batch_id: str
    business_id: str
    environment: str
    currency: str
    now: datetime
    order_ids: list[str]
    statuses: list[str]
    first_steps: list[datetime]

    @classmethod
    def of(cls, batch: Batch, decider: Decider, order_ids: list[str]) -> BatchShared:
        groups = decider.batch.groups
        first_step = batch.created_at + timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
        return cls(
            batch_id=str(batch.pk),
            business_id=str(batch.business_id),
            environment=batch.environment,
            currency=settings.CURRENCY,
            now=batch.created_at,
            order_ids=order_ids,
            statuses=[initial_status(scheduled=g.pickup.scheduled_at is not None) for g in groups],
            first_steps=[max(first_step, g.pickup.scheduled_at or first_step) for g in groups],
        )


def order_rows(decider: Decider, shared: BatchShared) -> list[OrderRow]:
    """One order per pickup group whose pickup passed its rules."""
    groups = decider.batch.groups
    return [
        OrderRow(
            id=shared.order_ids[index],
            batch_id=shared.batch_id,
            business_id=shared.business_id,
            environment=shared.environment,
            pickup_name=groups[index].pickup.name,
            pickup_phone=groups[index].pickup.phone,
            pickup_lat=pickup.pin[0],
            pickup_long=pickup.pin[1],
            pickup_address=groups[index].pickup.place.address,
            pickup_resolved=pickup.resolved,
            pickup_scheduled_at=groups[index].pickup.scheduled_at,
            created_at=shared.now,
            vehicle=groups[index].vehicle.code,
        )
        for index, pickup in enumerate(decider.pickups)
        if pickup.reason is None
    ]


def drop_row(accepted: Decided, shared: BatchShared) -> DropRow:
    """An accepted drop's row."""
    decision = accepted.decision
    drop, located, group = decision.drop, decision.located, decision.group
    scenario = drop.scenario
    walks = scenario is not None and scenario != SandboxScenario.MANUAL
    return DropRow(
        id=accepted.drop_id,
        order_id=shared.order_ids[group],
        batch_id=shared.batch_id,
        business_id=shared.business_id,
        environment=shared.environment,
        client_order_id=drop.client_order_id,
        external_waybill=drop.external_waybill,
        recipient_name=drop.name,
        recipient_phone=drop.phone,
        lat=located.pin[0],
        long=located.pin[1],
        address=drop.place.address,
        resolved=located.resolved,
        status=shared.statuses[group],
        price=decision.price,
        currency=shared.currency,
        created_at=shared.now,
        updated_at=shared.now,
        dropoff_pin=accepted.pin,
        sandbox_scenario=scenario,
        scenario_next_at=shared.first_steps[group] if walks else None,
        notes=drop.notes,
        undeliverable_action=drop.undeliverable_action,
        recipient_email=drop.email,
        needs_scan=drop.wants_scan,
        needs_signature=drop.wants_signature,
        recipient_language=drop.language,
        short_code=accepted.short_code,
        **(window_columns(decision) if drop.window is not None else {}),
        **(carried(decision) if drop.parcel is not None or drop.cod is not None else {}),
    )


def window_columns(decision: DropDecision) -> dict:
    """A new drop's window and its status: on track, and when it turns at risk if nothing
    moves (rule 7 worked both out: orders/windows.py, tracking/window_watch.py)."""
    start, end = decision.drop.window
    return {
        "window_start": start,
        "window_end": end,
        "window_status": ON_TRACK,
        "window_risk_at": decision.risk_at,
    }


def carried(decision: DropDecision) -> dict:
    """A drop's parcel and cash on delivery as its row's columns, for the drops that sent any."""
    parcel, columns = decision.drop.parcel, {}
    if parcel is not None:
        columns |= {
            "parcel_size": parcel.size,
            "parcel_weight_kg": parcel.weight_kg,
            "parcel_description": parcel.description,
            "parcel_value": parcel.value,
        }
    if decision.cod_amount is not None:
        columns |= {"cod_amount": decision.cod_amount, "cod_fee": decision.cod_fee}
    return columns
