"""Creating a batch: claim it exactly once, decide every drop, write everything in bulk."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Business
from billing.services import Till, open_till, price_for
from core.api import ApiError, success_body
from core.db import claim
from core.formats import iso_z, money
from core.writes import insert_rows
from geo.geocoders import geocode_addresses
from geo.geometry import haversine_km
from geo.services import load_coverage
from orders.decisions import (
    MESSAGES,
    Located,
    Reason,
    addresses_to_geocode,
    locate,
    pickup_time_reason,
)
from orders.inputs import BatchIn, Place
from orders.models import (
    ACTIVE_STATUSES,
    Batch,
    BatchStatus,
    DeliveryEvent,
    Drop,
    DropStatus,
    IdempotencyRecord,
    Order,
)

CREATION_ACTOR = "api"


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    body: bytes
    replayed: bool


def create_batch(
    *,
    business: Business,
    environment: str,
    idempotency_key: uuid.UUID,
    batch: BatchIn,
    base_url: str,
) -> BatchOutcome:
    """One batch is one transaction: all of it commits, or none of it does."""
    # A retry of a committed batch needs no work: one indexed read answers it.
    stored = _stored_for_key(business, environment, idempotency_key, batch.fingerprint)
    if stored is not None:
        return stored
    # External I/O comes before the transaction opens and before any claim or lock, so a
    # slow geocoder holds nothing that another request (of any business) could wait on;
    # its cache rows are written in their own short statements (geo.geocoders).
    pins = geocode_addresses(addresses_to_geocode(places_of(batch)))
    now = timezone.now()
    with transaction.atomic():
        # The idempotency row goes in first: a concurrent request with the same key
        # blocks on its unique index until we commit, then replays what we stored.
        record = IdempotencyRecord(
            business=business,
            environment=environment,
            key=idempotency_key,
            fingerprint=batch.fingerprint,
            created_at=now,
        )
        if claim(record, unique=("business", "environment", "key")) is None:
            return _replay_for_key(business, environment, idempotency_key, batch.fingerprint)

        # client_batch_id stays taken by a batch that created something; the same body
        # under another key replays it. A FAILED batch reserves nothing (DESIGN.md §4):
        # the partial unique index leaves it out, so its id can be used afresh.
        row = Batch(
            business=business,
            environment=environment,
            client_batch_id=batch.client_batch_id,
            fingerprint=batch.fingerprint,
            created_at=now,
        )
        claimed = claim(
            row,
            unique=("business", "environment", "client_batch_id"),
            where=RESERVING_BATCHES_SQL,
        )
        if claimed is None:
            existing = Batch.objects.exclude(status=BatchStatus.FAILED).get(
                business=business,
                environment=environment,
                client_batch_id=batch.client_batch_id,
            )
            if existing.fingerprint != batch.fingerprint:
                raise ApiError(
                    409,
                    "CLIENT_BATCH_ID_REUSED",
                    "This client_batch_id was already used with a different body.",
                )
            IdempotencyRecord.objects.filter(pk=record.pk).update(batch=existing)
            return BatchOutcome(bytes(existing.response), replayed=True)

        body = _process(row, batch, pins, now=now, base_url=base_url)
        IdempotencyRecord.objects.filter(pk=record.pk).update(batch=row)
    return BatchOutcome(body, replayed=False)


# The condition of Batch's partial unique index `client_batch_id_once_unless_failed`,
# as ON CONFLICT must name it to infer that index.
RESERVING_BATCHES_SQL = f"NOT (status = '{BatchStatus.FAILED.value}')"


def places_of(batch: BatchIn) -> list[Place]:
    groups = batch.groups
    return [g.pickup.place for g in groups] + [d.place for g in groups for d in g.drops]


def _stored_for_key(business, environment, key, fingerprint) -> BatchOutcome | None:
    """The committed answer for this Idempotency-Key, if there is one; 409 for another body."""
    stored = (
        IdempotencyRecord.objects.filter(business=business, environment=environment, key=key)
        .select_related("batch")
        .first()
    )
    if stored is None or stored.batch is None:
        return None
    return _answer_for(stored, fingerprint)


def _replay_for_key(business, environment, key, fingerprint) -> BatchOutcome:
    stored = IdempotencyRecord.objects.select_related("batch").get(
        business=business, environment=environment, key=key
    )
    return _answer_for(stored, fingerprint)


def _answer_for(stored: IdempotencyRecord, fingerprint: str) -> BatchOutcome:
    if stored.fingerprint != fingerprint:
        raise ApiError(
            409,
            "IDEMPOTENCY_KEY_REUSED",
            "This Idempotency-Key was already used with a different body.",
        )
    return BatchOutcome(bytes(stored.batch.response), replayed=True)


def _process(row: Batch, batch: BatchIn, pins: dict, *, now: datetime, base_url: str) -> bytes:
    business, environment = row.business, row.environment
    groups = batch.groups

    # Where is everything? The addresses were geocoded before the transaction; one polygon pass.
    pickups = [locate(g.pickup.place, g.pickup.phone, pins) for g in groups]
    drops = [[locate(d.place, d.phone, pins) for d in g.drops] for g in groups]
    _check_coverage(pickups, drops, groups, now)

    # From here on we hold the account lock (see Till): no other batch of this
    # business and environment can debit or take a client_order_id until we commit.
    till = open_till(business=business, environment=environment)
    all_ids = {d.client_order_id for g in groups for d in g.drops}
    taken = set(
        Drop.objects.filter(
            business=business,
            environment=environment,
            status__in=ACTIVE_STATUSES,
            client_order_id__any=list(all_ids),
        ).values_list("client_order_id", flat=True)
    )

    decided = _decide_and_build(row, groups, pickups, drops, taken, till, now)
    insert_rows(Order, ORDER_FIELDS, decided.orders, json_fields=("pickup_address",))
    insert_rows(Drop, DROP_FIELDS, decided.drops, json_fields=("address",))
    insert_rows(DeliveryEvent, EVENT_FIELDS, decided.events)
    till.settle(at=now)

    results, accepted = decided.results, len(decided.drops)
    row.total, row.accepted, row.rejected = len(results), accepted, len(results) - accepted
    row.status = (
        BatchStatus.COMPLETED
        if accepted == row.total
        else BatchStatus.FAILED
        if accepted == 0
        else BatchStatus.PARTIAL
    )
    row.response = success_body(
        {
            "batch_id": str(row.pk),
            "client_batch_id": row.client_batch_id,
            "status": row.status,
            "environment": environment,
            "created_at": iso_z(now),
            "counts": {"total": row.total, "accepted": accepted, "rejected": row.rejected},
            "orders": results,
            "poll_url": f"{base_url}/api/v1/batches/{row.pk}",
        }
    )
    Batch.objects.filter(pk=row.pk).update(
        status=row.status,
        total=row.total,
        accepted=row.accepted,
        rejected=row.rejected,
        response=row.response,
    )
    return row.response


def _check_coverage(pickups: list[Located], drops: list[list[Located]], groups, now) -> None:
    """Reasons 4–6: outside every active area; pickup time in the past or out of hours."""
    coverage = load_coverage()
    placed = [x for x in pickups if x.reason is None]
    placed += [x for group in drops for x in group if x.reason is None]
    where = coverage.locate([x.pin[0] for x in placed], [x.pin[1] for x in placed])
    for located, areas in zip(placed, where, strict=True):
        located.areas = areas
        if not areas:
            located.reason = Reason.OUT_OF_SERVICE_AREA
    for group, pickup in zip(groups, pickups, strict=True):
        if pickup.reason is None:
            when = group.pickup.scheduled_at or now
            pickup.reason = pickup_time_reason(
                group.pickup.scheduled_at, now, coverage.is_open(pickup.areas, when)
            )


ORDER_FIELDS = (
    "id", "batch_id", "business_id", "environment", "pickup_name", "pickup_phone",
    "pickup_lat", "pickup_long", "pickup_address", "pickup_resolved", "pickup_scheduled_at",
    "created_at",
)  # fmt: skip
DROP_FIELDS = (
    "id", "order_id", "batch_id", "business_id", "environment", "client_order_id",
    "external_waybill", "recipient_name", "recipient_phone", "lat", "long", "address",
    "resolved", "status", "price", "currency", "created_at", "updated_at",
)  # fmt: skip
EVENT_FIELDS = ("drop_id", "status", "at", "actor")


@dataclass(slots=True)
class Decided:
    """What a batch's decisions produced: the results, and the rows to write."""

    results: list[dict]
    orders: list[tuple]
    drops: list[tuple]
    events: list[tuple]


def _decide_and_build(row, groups, pickups, drops, taken, till: Till, now) -> Decided:
    """Walk the drops in submission order; the first failing rule wins."""
    business_id, environment, currency = row.business_id, row.environment, settings.CURRENCY
    out = Decided([], [], [], [])
    accepted_ids: set[str] = set()
    for group, pickup, group_drops in zip(groups, pickups, drops, strict=True):
        order_id = None
        p = group.pickup
        initial = DropStatus.SCHEDULED if p.scheduled_at else DropStatus.PENDING
        for drop, located in zip(group.drops, group_drops, strict=True):
            reason, side = _first_failure(pickup, located)
            price = None
            if reason is None:
                if drop.client_order_id in taken or drop.client_order_id in accepted_ids:
                    reason, side = Reason.DUPLICATE_CLIENT_ORDER_ID, "drop"
                else:
                    price = price_for(till.plan, haversine_km(*pickup.pin, *located.pin))
                    if not till.try_charge(price):
                        reason, side = Reason.INSUFFICIENT_BALANCE, "drop"
            if reason is not None:
                out.results.append(
                    {
                        "client_order_id": drop.client_order_id,
                        "external_waybill": drop.external_waybill,
                        "status": "rejected",
                        "failure_reason": reason.name,
                        "message": MESSAGES[reason, side],
                    }
                )
                continue
            if order_id is None:
                order_id = uuid.uuid4()
                out.orders.append((
                    order_id, row.pk, business_id, environment, p.name, p.phone,
                    pickup.pin[0], pickup.pin[1], p.place.address, pickup.resolved,
                    p.scheduled_at, now,
                ))  # fmt: skip
            drop_id = uuid.uuid4()
            accepted_ids.add(drop.client_order_id)
            till.record(drop_id, price)
            out.drops.append((
                drop_id, order_id, row.pk, business_id, environment, drop.client_order_id,
                drop.external_waybill, drop.name, drop.phone, located.pin[0], located.pin[1],
                drop.place.address, located.resolved, initial, price, currency, now, now,
            ))  # fmt: skip
            out.events.append((drop_id, initial, now, CREATION_ACTOR))
            entry = {
                "client_order_id": drop.client_order_id,
                "external_waybill": drop.external_waybill,
                "status": "accepted",
                "pass_order_id": str(order_id),
                "drop_id": str(drop_id),
                "price": money(price),
                "currency": currency,
            }
            if located.resolved:
                entry["resolved_pin"] = {"lat": located.pin[0], "long": located.pin[1]}
            if pickup.resolved:
                entry["pickup_resolved_pin"] = {"lat": pickup.pin[0], "long": pickup.pin[1]}
            out.results.append(entry)
    return out


def _first_failure(pickup: Located, drop: Located) -> tuple[Reason | None, str]:
    """The earlier of the pickup's and the drop's first failing rule."""
    if pickup.reason is None and drop.reason is None:
        return None, ""
    if drop.reason is None or (pickup.reason is not None and pickup.reason <= drop.reason):
        return pickup.reason, "pickup"
    return drop.reason, "drop"
