"""Creating a batch: answer a retry at once, geocode, then claim it, decide every drop and
write everything in one transaction.

The rules live in orders.decisions (pure: no query, no write); a quote is the same
decisions without the write.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import BillingModel, Business
from billing.services import Till, open_till, read_balance
from core.api import success_body
from core.db import claim
from core.formats import iso_z, money
from core.ids import uuid7, uuid7_texts
from core.writes import insert_chunks, insert_rows
from events.models import EventType
from events.services import record_events
from geo.geocoders import Pin, geocode_addresses
from geo.services import Coverage, load_coverage
from orders.decisions import (
    MESSAGES,
    AccountState,
    Decider,
    Decisions,
    Reason,
    addresses_to_geocode,
    decide_batch,
)
from orders.errors import (
    ClientBatchIdReused,
    IdempotencyKeyReused,
    QuoteExpired,
    QuoteMismatch,
    QuoteNotFound,
    QuoteUsed,
)
from orders.inputs import BatchIn, Place
from orders.links import new_pin, tracking_tokens, tracking_url
from orders.models import (
    ACTIVE_STATUSES,
    Batch,
    BatchStatus,
    Drop,
    IdempotencyRecord,
    Order,
    Quote,
    SandboxScenario,
    initial_status,
)
from orders.signals import scenarios_started


@dataclass(frozen=True, slots=True)
class BatchResult:
    """A processed batch: its stored answer, byte for byte, and whether this was a replay."""

    batch_id: uuid.UUID
    accepted: int
    rejected: int
    body: bytes
    replayed: bool

    @classmethod
    def of(cls, batch: Batch, *, replayed: bool) -> BatchResult:
        return cls(batch.pk, batch.accepted, batch.rejected, bytes(batch.response), replayed)


def create_batch(
    *,
    business: Business,
    environment: str,
    idempotency_key: uuid.UUID,
    batch: BatchIn,
    base_url: str,
) -> BatchResult:
    """One batch is one transaction: all of it commits, or none of it does.

    Raises IdempotencyKeyReused or ClientBatchIdReused (nothing written) for another body.
    """
    # External I/O comes before the transaction opens and before any claim or lock, so a
    # slow geocoder holds nothing that another request (of any business) could wait on;
    # its cache rows are written in their own short statements (geo.geocoders). A retry
    # finds its addresses in that cache.
    pins = locate_places(batch)
    now = timezone.now()
    batch_id = uuid7()
    with transaction.atomic():
        # The idempotency row goes in first: a retry of a committed batch meets its row
        # and replays what we stored; a concurrent request with the same key blocks on the
        # unique index until we commit, then does the same. (No read before this insert:
        # for a new batch it would be one more statement finding nothing.) It names the
        # batch about to be written, whose row follows (the foreign key is checked at
        # commit), so it needs no update afterwards.
        record = IdempotencyRecord(
            business=business,
            environment=environment,
            key=idempotency_key,
            fingerprint=batch.fingerprint,
            batch_id=batch_id,
            created_at=now,
        )
        if claim(record, unique=("business", "environment", "key")) is None:
            return replay_for_key(business, environment, idempotency_key, batch.fingerprint)

        # client_batch_id stays taken by a batch that created something; the same body
        # under another key replays it. A FAILED batch reserves nothing (docs/contract.md §4):
        # the partial unique index leaves it out, so its id can be used afresh.
        row = Batch(
            id=batch_id,
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
                raise ClientBatchIdReused
            IdempotencyRecord.objects.filter(pk=record.pk).update(batch=existing)
            return BatchResult.of(existing, replayed=True)

        # A quote is checked after the claims: a retry of a batch that used it replays.
        quote = quote_for(business, environment, batch, now) if batch.quoted_fingerprint else None
        quoted_prices = quote.decimal_prices() if quote else None
        write_batch(
            row,
            batch,
            pins,
            load_coverage(),
            now=now,
            quoted_prices=quoted_prices,
            base_url=base_url,
        )
        if quote is not None and row.accepted and not _use_quote(quote, row):
            raise QuoteUsed
    return BatchResult.of(row, replayed=False)


@dataclass(frozen=True, slots=True)
class QuoteResult:
    quote: Quote
    decisions: Decisions


def quote_batch(*, business: Business, environment: str, batch: BatchIn) -> QuoteResult:
    """Decide a batch body as bulk would now, write only the quote (docs/contract.md §12)."""
    pins = locate_places(batch)
    now = timezone.now()
    decisions = decide_batch(batch, pins, read_state(business, environment, batch), now)
    quote = Quote.objects.create(
        business=business,
        environment=environment,
        # A quote body that carries a quote_id of its own is quoted as if it did not.
        fingerprint=batch.quoted_fingerprint or batch.fingerprint,
        prices=[money(d.price) if d.accepted else None for d in decisions.drops],
        created_at=now,
        expires_at=now + timedelta(minutes=settings.QUOTE_TTL_MINUTES),
    )
    return QuoteResult(quote, decisions)


def quote_for(business: Business, environment: str, batch: BatchIn, now: datetime) -> Quote:
    """The quote a bulk body names, if this account's, unexpired, unused and for this body."""
    quote = (
        None
        if batch.quote_unknown
        else Quote.objects.filter(
            pk=batch.quote_id, business=business, environment=environment
        ).first()
    )
    if quote is None:
        raise QuoteNotFound
    if quote.expires_at <= now:
        raise QuoteExpired
    if quote.batch_id is not None:
        raise QuoteUsed
    if quote.fingerprint != batch.quoted_fingerprint:
        raise QuoteMismatch
    return quote


def _use_quote(quote: Quote, batch: Batch) -> bool:
    """Mark the quote as backing this batch: a quote backs one accepted batch at most."""
    return bool(Quote.objects.filter(pk=quote.pk, batch__isnull=True).update(batch=batch))


def purge_expired_quotes(now: datetime | None = None) -> int:
    """Delete quotes past their expiry; how many. Idempotent."""
    return Quote.objects.filter(expires_at__lte=now or timezone.now()).delete()[0]


# The condition of Batch's partial unique index `client_batch_id_once_unless_failed`,
# as ON CONFLICT must name it to infer that index.
RESERVING_BATCHES_SQL = f"NOT (status = '{BatchStatus.FAILED.value}')"


def places_of(batch: BatchIn) -> list[Place]:
    groups = batch.groups
    return [g.pickup.place for g in groups] + [d.place for g in groups for d in g.drops]


def replay_for_key(business, environment, key, fingerprint) -> BatchResult:
    stored = IdempotencyRecord.objects.select_related("batch").get(
        business=business, environment=environment, key=key
    )
    return _replay_of(stored, fingerprint)


def _replay_of(stored: IdempotencyRecord, fingerprint: str) -> BatchResult:
    if stored.fingerprint != fingerprint:
        raise IdempotencyKeyReused
    return BatchResult.of(stored.batch, replayed=True)


def locate_places(batch: BatchIn) -> dict[str, Pin | None]:
    """Geocode every address-only place of the batch (each distinct address once)."""
    return geocode_addresses(addresses_to_geocode(places_of(batch)))


def read_state(business: Business, environment: str, batch: BatchIn) -> AccountState:
    """What the rules need, read without a lock: coverage, plan, balance, taken ids. A
    quote's snapshot; a batch decides under the account lock instead (write_batch)."""
    return AccountState(
        coverage=load_coverage(),
        plan=business.pricing_plan,
        charges_wallet=business.billing_model == BillingModel.WALLET,
        balance=read_balance(business=business, environment=environment),
        taken=taken_ids(
            business, environment, [d.client_order_id for g in batch.groups for d in g.drops]
        ),
    )


def taken_ids(business: Business, environment: str, ids: list[str]) -> frozenset[str]:
    """Which of these client_order_ids an active drop already holds: one query."""
    return frozenset(
        Drop.objects.filter(
            business=business,
            environment=environment,
            status__in=ACTIVE_STATUSES,
            client_order_id__any=list(set(ids)),
        ).values_list("client_order_id", flat=True)
    )


def write_batch(
    row: Batch,
    batch: BatchIn,
    pins: dict[str, Pin | None],
    coverage: Coverage,
    *,
    now: datetime,
    quoted_prices: list[Decimal | None] | None,
    base_url: str,
) -> None:
    """Take the account lock, then decide and write every drop, a chunk at a time.

    Deciding happens under the lock, against the wallet as it is (orders.decisions.Decider),
    and chunk by chunk as the drops' COPY goes: the database stores one chunk while the next
    is decided and made (issue 18). No client_order_id is looked up first: looking 1000 ids
    up costs more than writing them. The partial unique index `client_order_id_active_once`
    checks them as the drops go in; when it refuses one, the write is rolled back to a
    savepoint and done again knowing the ids that are taken, read under the lock. When it
    refuses none, only the drops refused for their balance can still hold a taken id: rule 7
    comes before rule 8, so those are looked up and named duplicates. Either way the answer
    is exactly what checking every id first would have given.
    """
    business, environment = row.business, row.environment
    # From here on we hold the account lock (see Till): no other batch of this business
    # and environment can debit or take a client_order_id until we commit.
    till = open_till(business=business, environment=environment)
    state = AccountState(
        coverage=coverage,
        plan=till.plan,
        charges_wallet=till.is_wallet,
        balance=till.wallet.balance,
        taken=frozenset(),
    )
    try:
        with transaction.atomic():  # a savepoint
            written = _write_drops(row, Decider(batch, pins, state, now, quoted_prices), till, now)
    except IntegrityError:
        till.charges.clear()
        ids = [d.client_order_id for g in batch.groups for d in g.drops]
        taken = taken_ids(business, environment, ids)
        if not taken:
            raise  # no id is taken: a fault, not a decision
        exact = replace(state, taken=taken)
        written = _write_drops(row, Decider(batch, pins, exact, now, quoted_prices), till, now)
    else:
        _name_duplicates_refused_for_balance(written, business, environment)
    till.settle(batch_id=row.pk, at=now)
    if written.scenarios_from is not None:
        # The sandbox test driver takes them from here (tracking/scenarios.py), in a task
        # committed with this batch.
        scenarios_started.send(sender=Batch, due_at=written.scenarios_from)

    accepted = written.accepted
    row.total, row.accepted = len(written.results), accepted
    row.rejected = row.total - accepted
    row.status = (
        BatchStatus.COMPLETED
        if accepted == row.total
        else BatchStatus.FAILED
        if accepted == 0
        else BatchStatus.PARTIAL
    )
    summary = {
        "batch_id": str(row.pk),
        "client_batch_id": row.client_batch_id,
        "status": row.status,
        "counts": {"total": row.total, "accepted": accepted, "rejected": row.rejected},
        "poll_url": f"{base_url}/api/v1/batches/{row.pk}",
    }
    # The answer is made once, as bytes: stored for replays and sent as it is.
    row.response = success_body(
        {
            "batch_id": summary["batch_id"],
            "client_batch_id": row.client_batch_id,
            "status": row.status,
            "environment": environment,
            "created_at": iso_z(now),
            "counts": summary["counts"],
            "orders": written.results,
            "poll_url": summary["poll_url"],
        }
    )
    # One event for the whole batch, never one per drop (docs/contract.md §11).
    record_events(
        business_id=business.pk,
        environment=environment,
        event_type=EventType.BATCH_CREATED,
        payloads=[summary],
        at=now,
    )
    Batch.objects.filter(pk=row.pk).update(
        status=row.status,
        total=row.total,
        accepted=row.accepted,
        rejected=row.rejected,
        response=row.response,
    )


def _name_duplicates_refused_for_balance(
    written: Written, business: Business, environment: str
) -> None:
    """Rule 7 before rule 8 for the drops refused for their balance: written with no id
    looked up, the index vouched for every accepted drop's id, not for theirs. One that an
    active drop holds is a duplicate. A refused drop spent nothing, so no other decision
    changes."""
    refused = written.refused_for_balance
    if not refused:
        return
    taken = taken_ids(
        business, environment, [written.results[i]["client_order_id"] for i in refused]
    )
    for i in refused:
        entry = written.results[i]
        if entry["client_order_id"] in taken:
            entry["failure_reason"] = Reason.DUPLICATE_CLIENT_ORDER_ID.name
            entry["message"] = MESSAGES[Reason.DUPLICATE_CLIENT_ORDER_ID, "drop"]


def _write_drops(row: Batch, decider: Decider, till: Till, now: datetime) -> Written:
    """The batch's orders in one COPY, then its drops in another, decided and fed chunk by
    chunk (core.writes.insert_chunks): PostgreSQL stores a chunk while the next one is
    decided and built. A drop's creation is its row, no event.

    The orders go first, for every group whose pickup passed its rules (the drops' ownership
    check wants them); a group none of whose drops was accepted loses its order afterwards.
    """
    written = Written([])
    order_ids = uuid7_texts(len(decider.batch.groups))
    insert_rows(Order, ORDER_FIELDS, _order_rows(row, decider, order_ids, now))
    insert_chunks(Drop, DROP_FIELDS, _drop_rows(row, decider, order_ids, till, now, written))
    empty = {i for i, p in enumerate(decider.pickups) if p.reason is None} - written.groups
    if empty:
        Order.objects.filter(pk__in=[order_ids[i] for i in empty]).delete()
    return written


ORDER_FIELDS = (
    "id", "batch_id", "business_id", "environment", "pickup_name", "pickup_phone",
    "pickup_lat", "pickup_long", "pickup_address", "pickup_resolved", "pickup_scheduled_at",
    "created_at",
)  # fmt: skip
DROP_FIELDS = (
    "id", "order_id", "batch_id", "business_id", "environment", "client_order_id",
    "external_waybill", "recipient_name", "recipient_phone", "lat", "long", "address",
    "resolved", "status", "price", "currency", "created_at", "updated_at", "dropoff_pin",
    "sandbox_scenario", "scenario_next_at",
)  # fmt: skip


@dataclass(slots=True)
class Written:
    """What writing a batch's drops gave: its result entries in submission order, how many
    drops were accepted, and when the first sandbox scenario step is due."""

    results: list[dict]
    accepted: int = 0
    scenarios_from: datetime | None = None  # when the first scenario step is due, if any
    groups: set[int] = field(default_factory=set)  # the pickup groups with an accepted drop
    refused_for_balance: list[int] = field(default_factory=list)  # their indexes in results


def _order_rows(row: Batch, decider: Decider, order_ids: list[str], now: datetime) -> list[tuple]:
    """One order per pickup group whose pickup passed its rules, as tuples of ORDER_FIELDS."""
    business_id, batch_id, environment = str(row.business_id), str(row.pk), row.environment
    groups = decider.batch.groups
    rows = []
    for index, pickup in enumerate(decider.pickups):
        if pickup.reason is not None:
            continue
        given = groups[index].pickup
        rows.append((
            order_ids[index], batch_id, business_id, environment, given.name, given.phone,
            pickup.pin[0], pickup.pin[1], given.place.address, pickup.resolved,
            given.scheduled_at, now,
        ))  # fmt: skip
    return rows


# Drops go to the database in chunks of this many rows (core.writes.insert_chunks): small
# enough that PostgreSQL starts early, big enough that a chunk's overhead stays negligible.
DROP_CHUNK_ROWS = 100


def _drop_rows(
    row: Batch,
    decider: Decider,
    order_ids: list[str],
    till: Till,
    now: datetime,
    written: Written,
) -> Iterator[list[tuple]]:
    """The drops decided DROP_CHUNK_ROWS at a time, each run's accepted ones as a chunk of
    DROP_FIELDS tuples; on the way, every drop's result entry in submission order and every
    charge go into `written` and `till`."""
    # Ids as text: COPY and the answer both want text, once per batch rather than per row.
    business_id, batch_id = str(row.business_id), str(row.pk)
    environment, currency = row.environment, settings.CURRENCY
    groups = decider.batch.groups
    # Ids for every drop at once (core/ids.py); rejected drops leave theirs unused.
    drop_ids = uuid7_texts(len(decider))
    link = tracking_url("")
    first_step = now + timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
    charge, results, shipped = till.record, written.results, written.groups
    refused_for_balance = written.refused_for_balance
    n = 0
    for decided in decider.runs(DROP_CHUNK_ROWS):
        # The run's ids, and their tracking tokens in one cipher call (orders/links.py).
        ids = drop_ids[n : n + len(decided)]
        chunk: list[tuple] = []
        for decision, drop_id, token in zip(decided, ids, tracking_tokens(ids), strict=True):
            drop = decision.drop
            if decision.reason is not None:
                if decision.reason is Reason.INSUFFICIENT_BALANCE:
                    refused_for_balance.append(len(results))
                results.append(
                    {
                        "client_order_id": drop.client_order_id,
                        "external_waybill": drop.external_waybill,
                        "status": "rejected",
                        "failure_reason": decision.reason.name,
                        "message": decision.message,
                    }
                )
                continue
            pickup, located, price = decision.pickup, decision.located, decision.price
            scheduled = groups[decision.group].pickup.scheduled_at is not None
            order_id = order_ids[decision.group]
            shipped.add(decision.group)
            charge(drop_id, price)
            pin = new_pin() if drop.wants_pin else None
            walks = drop.scenario is not None and drop.scenario != SandboxScenario.MANUAL
            if walks:
                written.scenarios_from = first_step
            chunk.append((
                drop_id, order_id, batch_id, business_id, environment, drop.client_order_id,
                drop.external_waybill, drop.name, drop.phone, located.pin[0], located.pin[1],
                drop.place.address, located.resolved, initial_status(scheduled=scheduled),
                price, currency, now, now, pin, drop.scenario, first_step if walks else None,
            ))  # fmt: skip
            entry = {
                "client_order_id": drop.client_order_id,
                "external_waybill": drop.external_waybill,
                "status": "accepted",
                "pass_order_id": order_id,
                "drop_id": drop_id,
                "price": money(price),
                "currency": currency,
                "tracking_url": link + token,
            }
            if located.resolved or pickup.resolved:
                entry |= decision.resolved_pins()
            if pin is not None:
                entry["dropoff_pin"] = pin
            results.append(entry)
        n += len(decided)
        written.accepted += len(chunk)
        yield chunk
