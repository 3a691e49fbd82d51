"""Creating a batch: answer a retry at once, geocode, then claim it, decide every drop and
write everything in one transaction.

The rules live in orders.decisions (pure: no query, no write); a quote is the same
decisions without the write.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

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
from geo.services import load_coverage
from orders.decisions import (
    AccountState,
    Decisions,
    Reason,
    addresses_to_geocode,
    decide_batch,
    decide_charges,
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
        # under another key replays it. A FAILED batch reserves nothing (DESIGN.md §4):
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
        # Decided against a snapshot, then written under the account lock, which re-checks
        # what another batch of this account may have changed meanwhile.
        state = read_state(business, environment, batch, taken=False)
        decisions = decide_batch(batch, pins, state, now, quoted_prices)
        write_batch(row, decisions, now=now, base_url=base_url)
        if quote is not None and row.accepted and not _use_quote(quote, row):
            raise QuoteUsed
    return BatchResult.of(row, replayed=False)


@dataclass(frozen=True, slots=True)
class QuoteResult:
    quote: Quote
    decisions: Decisions


def quote_batch(*, business: Business, environment: str, batch: BatchIn) -> QuoteResult:
    """Decide a batch body as bulk would now, write only the quote (DESIGN.md §12)."""
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


def read_state(
    business: Business, environment: str, batch: BatchIn, *, taken: bool = True
) -> AccountState:
    """What the rules need, read without a lock: coverage, plan, balance, taken ids.

    With taken=False no id is looked up: a batch lets the database's unique index say
    whether one is taken (write_batch), a quote must ask.
    """
    return AccountState(
        coverage=load_coverage(),
        plan=business.pricing_plan,
        charges_wallet=business.billing_model == BillingModel.WALLET,
        balance=read_balance(business=business, environment=environment),
        taken=taken_ids(
            business, environment, [d.client_order_id for g in batch.groups for d in g.drops]
        )
        if taken
        else frozenset(),
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


def write_batch(row: Batch, decisions: Decisions, *, now: datetime, base_url: str) -> None:
    """Take the account lock, re-decide rules 7–8 where the account moved, write every row.

    The batch was decided as if none of its client_order_ids were taken (read_state with
    taken=False): looking 1000 ids up costs more than writing them. The partial unique index
    `client_order_id_active_once` checks them as the drops go in; when it refuses one, the
    write is rolled back to a savepoint and done again with the ids that are taken, read
    under the lock. A drop refused for its balance is looked up first, as rule 7 comes
    before rule 8. Either way the answer is exactly what checking first would have given.
    """
    business, environment = row.business, row.environment
    # From here on we hold the account lock (see Till): no other batch of this business
    # and environment can debit or take a client_order_id until we commit.
    till = open_till(business=business, environment=environment)
    seen = decisions.state
    if till.wallet.balance != seen.balance:
        # Money moved since the snapshot (another batch, a top-up, a refund): rule 8 again.
        decisions = decide_charges(decisions, replace(seen, balance=till.wallet.balance))
    if any(d.reason is Reason.INSUFFICIENT_BALANCE for d in decisions.drops):
        written = _write_drops(row, _with_taken_ids(decisions, till), till, now)
    else:
        try:
            with transaction.atomic():  # a savepoint
                written = _write_drops(row, decisions, till, now)
        except IntegrityError:
            till.charges.clear()
            exact = _with_taken_ids(decisions, till)
            if not exact.state.taken:
                raise  # no id is taken: a fault, not a decision
            written = _write_drops(row, exact, till, now)
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
    # One event for the whole batch, never one per drop (DESIGN.md §11).
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


def _with_taken_ids(decisions: Decisions, till: Till) -> Decisions:
    """Rules 7–8 again, knowing which ids active drops hold (read under the account lock)."""
    ids = [d.drop.client_order_id for d in decisions.drops]
    taken = taken_ids(till.business, till.environment, ids)
    state = replace(decisions.state, taken=taken, balance=till.wallet.balance)
    return decide_charges(decisions, state)


def _write_drops(row: Batch, decisions: Decisions, till: Till, now: datetime) -> Written:
    """The batch's orders in one COPY, then its drops in another, fed chunk by chunk as the
    rows are made (core.writes.insert_chunks): PostgreSQL stores a chunk while the next one
    is built. A drop's creation is its row, no event."""
    written = Written([])
    order_ids = uuid7_texts(len(decisions.batch.groups))
    insert_rows(Order, ORDER_FIELDS, _order_rows(row, decisions, order_ids, now))
    insert_chunks(Drop, DROP_FIELDS, _drop_rows(row, decisions, order_ids, till, now, written))
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


def _order_rows(
    row: Batch, decisions: Decisions, order_ids: list[str], now: datetime
) -> list[tuple]:
    """One order per pickup group with an accepted drop, as tuples of ORDER_FIELDS."""
    business_id, batch_id, environment = str(row.business_id), str(row.pk), row.environment
    groups = decisions.batch.groups
    # The pickup as located, one per group (its drops share it), for the groups that ship.
    located = {d.group: d.pickup for d in decisions.drops if d.reason is None}
    rows = []
    for index, pickup in located.items():
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
    decisions: Decisions,
    order_ids: list[str],
    till: Till,
    now: datetime,
    written: Written,
) -> Iterator[list[tuple]]:
    """The accepted drops as chunks of DROP_FIELDS tuples; on the way, every drop's result
    entry in submission order and every charge go into `written` and `till`."""
    # Ids as text: COPY and the answer both want text, once per batch rather than per row.
    business_id, batch_id = str(row.business_id), str(row.pk)
    environment, currency = row.environment, settings.CURRENCY
    groups = decisions.batch.groups
    # Ids and their tracking tokens for every drop at once (core/ids.py, orders/links.py);
    # rejected drops leave theirs unused.
    drop_ids = uuid7_texts(len(decisions.drops))
    tokens = tracking_tokens(drop_ids)
    link = tracking_url("")
    first_step = now + timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
    charge, results = till.record, written.results
    chunk: list[tuple] = []
    for n, decision in enumerate(decisions.drops):
        drop = decision.drop
        if decision.reason is not None:
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
        order_id, drop_id, token = order_ids[decision.group], drop_ids[n], tokens[n]
        charge(drop_id, price)
        pin = new_pin() if drop.wants_pin else None
        walks = drop.scenario is not None and drop.scenario != SandboxScenario.MANUAL
        if walks:
            written.scenarios_from = first_step
        chunk.append((
            drop_id, order_id, batch_id, business_id, environment, drop.client_order_id,
            drop.external_waybill, drop.name, drop.phone, located.pin[0], located.pin[1],
            drop.place.address, located.resolved, initial_status(scheduled=scheduled), price,
            currency, now, now, pin, drop.scenario, first_step if walks else None,
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
        if len(chunk) == DROP_CHUNK_ROWS:
            written.accepted += len(chunk)
            yield chunk
            chunk = []
    written.accepted += len(chunk)
    yield chunk
