"""Creating a batch: answer a retry at once, geocode, then claim it, decide every drop and
write everything in one transaction.

The rules live in orders.decisions (pure: no query, no write); a quote is the same
decisions without the write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import BillingModel, Business
from billing.services import Till, open_till, read_wallet
from core.api import success_body
from core.db import claim
from core.formats import MoneyTexts, iso_z, money
from core.ids import uuid7, uuid7_texts
from core.writes import insert_chunks, insert_rows
from events.models import EventType
from events.services import record_events
from fleet.models import DEFAULT_VEHICLE
from geo.geocoders import Pin, geocode_addresses
from geo.services import Coverage, load_coverage
from orders.decisions import (
    MESSAGES,
    AccountState,
    Decider,
    Decisions,
    DropDecision,
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
from orders.inputs import DEFAULT_PARCEL_SIZE, DEFAULT_WEIGHT_KG, BatchIn, Place
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
    UndeliverableAction,
    initial_status,
)
from orders.results import ACCEPTED, REJECTED, ResultEntry, entries_of, stored_entries
from orders.signals import scenarios_started
from orders.windows import ON_TRACK


@dataclass(frozen=True, slots=True)
class BatchResult:
    """A processed batch: its stored answer, byte for byte, whether this was a replay, and
    its result entries as domain values (entries())."""

    batch_id: uuid.UUID
    client_batch_id: str
    environment: str
    status: str
    created_at: datetime
    accepted: int
    rejected: int
    body: bytes
    replayed: bool
    # The entries in their wire form when this call wrote them; a replay reads the stored ones.
    written: list[dict] | None = None

    @classmethod
    def of(cls, batch: Batch, *, replayed: bool, written: list[dict] | None = None) -> BatchResult:
        return cls(
            batch.pk,
            batch.client_batch_id,
            batch.environment,
            batch.status,
            batch.created_at,
            batch.accepted,
            batch.rejected,
            bytes(batch.response),
            replayed,
            written,
        )

    @property
    def total(self) -> int:
        return self.accepted + self.rejected

    def entries(self) -> list[ResultEntry]:
        """One entry per drop, in submission order (docs/contract.md §4)."""
        return stored_entries(self.body) if self.written is None else entries_of(self.written)


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
    with transaction.atomic():
        claimed = _claim_batch(business, environment, idempotency_key, batch, now)
        if isinstance(claimed, BatchResult):
            return claimed
        row = claimed
        # A quote is checked after the claims: a retry of a batch that used it replays.
        quote = quote_for(business, environment, batch, now) if batch.quoted_fingerprint else None
        written = write_batch(
            row,
            batch,
            pins,
            load_coverage(),
            now=now,
            quoted_prices=quote.decimal_prices() if quote else None,
            base_url=base_url,
        )
        if quote is not None and row.accepted and not _use_quote(quote, row):
            raise QuoteUsed
    return BatchResult.of(row, replayed=False, written=written.results)


def _claim_batch(
    business: Business, environment: str, key: uuid.UUID, batch: BatchIn, now: datetime
) -> Batch | BatchResult:
    """The new batch's row, claimed; or the replay of the batch that has its key or body."""
    # The idempotency row goes in first: a retry of a committed batch meets its row and
    # replays what we stored; a concurrent request with the same key blocks on the unique
    # index until we commit, then does the same. (No read before this insert: for a new
    # batch it would be one more statement finding nothing.) It names the batch about to be
    # written, whose row follows (the foreign key is checked at commit), so it needs no
    # update afterwards.
    batch_id = uuid7()
    record = IdempotencyRecord(
        business=business,
        environment=environment,
        key=key,
        fingerprint=batch.fingerprint,
        batch_id=batch_id,
        created_at=now,
    )
    if claim(record, unique=("business", "environment", "key")) is None:
        return replay_for_key(business, environment, key, batch.fingerprint)
    # client_batch_id stays taken by a batch that created something; the same body under
    # another key replays it. A FAILED batch reserves nothing (docs/contract.md §4): the
    # partial unique index leaves it out, so its id can be used afresh.
    row = Batch(
        id=batch_id,
        business=business,
        environment=environment,
        client_batch_id=batch.client_batch_id,
        fingerprint=batch.fingerprint,
        created_at=now,
    )
    reserving = RESERVING_BATCHES_SQL
    if (
        claim(row, unique=("business", "environment", "client_batch_id"), where=reserving)
        is not None
    ):
        return row
    existing = Batch.objects.exclude(status=BatchStatus.FAILED).get(
        business=business, environment=environment, client_batch_id=batch.client_batch_id
    )
    if existing.fingerprint != batch.fingerprint:
        raise ClientBatchIdReused
    IdempotencyRecord.objects.filter(pk=record.pk).update(batch=existing)
    return BatchResult.of(existing, replayed=True)


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
    wallet = read_wallet(business=business, environment=environment)
    return AccountState(
        coverage=load_coverage(),
        plan=business.pricing_plan,
        charges_wallet=business.billing_model == BillingModel.WALLET,
        balance=wallet.balance,
        taken=taken_ids(
            business, environment, [d.client_order_id for g in batch.groups for d in g.drops]
        ),
        owes=wallet.owed > 0,
    )


def taken_ids(business: Business, environment: str, ids: list[str]) -> frozenset[str]:
    """Which of these client_order_ids an active drop already holds: one query."""
    return frozenset(
        Drop.objects.filter(
            business=business,
            environment=environment,
            status__among=ACTIVE_STATUSES,
            client_order_id__any=list(set(ids)),
        )
        .order_by()
        .values_list("client_order_id", flat=True)
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
) -> Written:
    """Take the account lock, decide and write every drop, settle the money, summarise.

    From the lock on (billing.services.Till), no other batch of this business and
    environment can debit or take a client_order_id until we commit.
    """
    till = open_till(business=row.business, environment=row.environment)
    state = AccountState(
        coverage=coverage,
        plan=till.plan,
        charges_wallet=till.is_wallet,
        balance=till.wallet.balance,
        taken=frozenset(),
        owes=till.wallet.owed > 0,
    )
    written = _decide_and_write(
        row, lambda state: Decider(batch, pins, state, now, quoted_prices), state, till
    )
    till.settle(batch_id=row.pk, at=now)
    if written.scenarios_from is not None:
        # The sandbox test driver takes them from here (tracking/scenarios.py), in a task
        # committed with this batch.
        scenarios_started.send(sender=Batch, due_at=written.scenarios_from)
    _summarise(row, written, now=now, base_url=base_url)
    return written


def _decide_and_write(
    row: Batch, decider_for: Callable[[AccountState], Decider], state: AccountState, till: Till
) -> Written:
    """Decide every drop and write the accepted ones, chunk by chunk as the COPY goes.

    Deciding happens under the lock, against the wallet as it is (orders.decisions.Decider),
    and as the drops' COPY goes: the database stores one chunk while the next is decided and
    made (issue 18). No client_order_id is looked up first: looking 1000 ids up costs more
    than writing them. The partial unique index `client_order_id_active_once` checks them
    as the drops go in; when it refuses one, the write is rolled back to a savepoint and
    done again knowing the ids that are taken, read under the lock. When it refuses none,
    only the drops refused for their balance can still hold a taken id: rule 10 comes before
    rule 11, so those are looked up and named duplicates. Either way the answer is exactly
    what checking every id first would have given.
    """
    business, environment = row.business, row.environment
    decider = decider_for(state)
    try:
        with transaction.atomic():  # a savepoint
            written = _write_drops(row, decider, till)
    except IntegrityError:
        till.charges.clear()
        groups = decider.batch.groups
        taken = taken_ids(
            business, environment, [d.client_order_id for g in groups for d in g.drops]
        )
        if not taken:
            raise  # no id is taken: a fault, not a decision
        return _write_drops(row, decider_for(replace(state, taken=taken)), till)
    _name_duplicates_refused_for_balance(written, business, environment)
    return written


def _summarise(row: Batch, written: Written, *, now: datetime, base_url: str) -> None:
    """The batch's status and counts, its answer made once as bytes (stored for replays and
    sent as it is), and one `batch.created` event for the whole batch, never one per drop
    (docs/contract.md §11)."""
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
    data = {**summary, "environment": row.environment, "created_at": iso_z(now)}
    data |= {
        "counts": summary["counts"],
        "orders": written.results,
        "poll_url": data.pop("poll_url"),
    }
    row.response = success_body(data)
    record_events(
        business_id=row.business_id,
        environment=row.environment,
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
    """Rule 10 before rule 11 for the drops refused for their balance: written with no id
    looked up, the index vouched for every accepted drop's id, not for theirs. One that an
    active drop held before this batch is a duplicate; one that only a later drop of this
    batch took stays refused for its balance (rule 10 names earlier drops only). A refused
    drop spent nothing, so no other decision changes."""
    refused = written.refused_for_balance
    if not refused:
        return
    taken = taken_ids(
        business, environment, [written.results[i]["client_order_id"] for i in refused]
    )
    # An id this batch accepted was free before it (the unique index let it in).
    taken -= {r["client_order_id"] for r in written.results if r["status"] == "accepted"}
    for i in refused:
        entry = written.results[i]
        if entry["client_order_id"] in taken:
            entry["failure_reason"] = Reason.DUPLICATE_CLIENT_ORDER_ID.name
            entry["message"] = MESSAGES[Reason.DUPLICATE_CLIENT_ORDER_ID, "drop"]


def _write_drops(row: Batch, decider: Decider, till: Till) -> Written:
    """The batch's orders in one COPY, then its drops in another, decided and fed chunk by
    chunk (core.writes.insert_chunks): PostgreSQL stores a chunk while the next one is
    decided and built. A drop's creation is its row, no event.

    The orders go first, for every group whose pickup passed its rules (the drops' ownership
    check wants them); a group none of whose drops was accepted loses its order afterwards.
    """
    written = Written([])
    rows = _BatchRows(row, decider, till, written)
    insert_rows(Order, OrderRow._fields, rows.orders())
    insert_chunks(Drop, DropRow._fields, rows.drops())
    empty = {i for i, p in enumerate(decider.pickups) if p.reason is None} - written.groups
    if empty:
        Order.objects.filter(pk__in=[rows.order_ids[i] for i in empty]).delete()
    return written


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


@dataclass(slots=True)
class Written:
    """What writing a batch's drops gave: its result entries in submission order (in their
    wire form: orders.results types them), how many drops were accepted, and when the first
    sandbox scenario step is due."""

    results: list[dict]
    accepted: int = 0
    scenarios_from: datetime | None = None  # when the first scenario step is due, if any
    groups: set[int] = field(default_factory=set)  # the pickup groups with an accepted drop
    refused_for_balance: list[int] = field(default_factory=list)  # their indexes in results

    def refuse(self, decision: DropDecision) -> None:
        """A rejected drop's result entry."""
        drop, reason = decision.drop, decision.reason
        if reason is Reason.INSUFFICIENT_BALANCE:
            self.refused_for_balance.append(len(self.results))
        self.results.append(
            {
                "client_order_id": drop.client_order_id,
                "external_waybill": drop.external_waybill,
                "status": REJECTED,
                "failure_reason": reason.name,
                "message": decision.message,
            }
        )


# Drops go to the database in chunks of this many rows (core.writes.insert_chunks): small
# enough that PostgreSQL starts early, big enough that a chunk's overhead stays negligible.
DROP_CHUNK_ROWS = 100


def price_breakdown(decision: DropDecision, texts: MoneyTexts | None = None) -> dict[str, str]:
    """An accepted drop's price in its parts (docs/contract.md §18): price = delivery + cod_fee."""
    texts = MoneyTexts() if texts is None else texts
    return {"delivery": texts[decision.delivery], "cod_fee": texts[decision.cod_fee]}


def window_columns(decision: DropDecision) -> dict:
    """A new drop's window and its status: on track, and when it turns at risk if nothing
    moves (rule 7 worked both out: orders/windows.py, tracking/windows.py)."""
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


class _BatchRows:
    """The rows of one batch, made as they are decided: what every row of the batch shares
    is worked out once, here (ids and times as text, the link prefix, each group's first
    scenario step)."""

    def __init__(self, row: Batch, decider: Decider, till: Till, written: Written) -> None:
        self.decider, self.till, self.written = decider, till, written
        self.business_id, self.batch_id = str(row.business_id), str(row.pk)
        self.environment, self.currency = row.environment, settings.CURRENCY
        self.now = row.created_at
        self.order_ids = uuid7_texts(len(decider.batch.groups))
        # Ids for every drop at once (core/ids.py); rejected drops leave theirs unused.
        self.drop_ids = uuid7_texts(len(decider))
        self.link = tracking_url("")
        # A scenario's first step, per group: a step from now, or its pickup time if later
        # (a scheduled drop starts walking when it is due, docs/sandbox.md).
        first_step = self.now + timedelta(seconds=settings.SANDBOX_STEP_SECONDS)
        self.first_steps = [
            max(first_step, group.pickup.scheduled_at or first_step)
            for group in decider.batch.groups
        ]
        self.money = MoneyTexts()  # the answer's prices as text, each amount formatted once
        # Each (price, COD fee)'s breakdown, made once and shared by the entries (read-only).
        self.breakdowns: dict[tuple[Decimal, Decimal], dict[str, str]] = {}
        self.statuses = [
            initial_status(scheduled=group.pickup.scheduled_at is not None)
            for group in decider.batch.groups
        ]

    def orders(self) -> list[OrderRow]:
        """One order per pickup group whose pickup passed its rules."""
        groups = self.decider.batch.groups
        return [
            OrderRow(
                id=self.order_ids[index],
                batch_id=self.batch_id,
                business_id=self.business_id,
                environment=self.environment,
                pickup_name=groups[index].pickup.name,
                pickup_phone=groups[index].pickup.phone,
                pickup_lat=pickup.pin[0],
                pickup_long=pickup.pin[1],
                pickup_address=groups[index].pickup.place.address,
                pickup_resolved=pickup.resolved,
                pickup_scheduled_at=groups[index].pickup.scheduled_at,
                created_at=self.now,
                vehicle=groups[index].vehicle.code,
            )
            for index, pickup in enumerate(self.decider.pickups)
            if pickup.reason is None
        ]

    def drops(self) -> Iterator[list[DropRow]]:
        """The drops decided DROP_CHUNK_ROWS at a time, each run's accepted ones as a chunk;
        on the way, every drop's result entry (submission order) and charge."""
        written, n = self.written, 0
        for decided in self.decider.runs(DROP_CHUNK_ROWS):
            # The run's ids, and their tracking tokens in one cipher call (orders/links.py).
            ids = self.drop_ids[n : n + len(decided)]
            chunk: list[DropRow] = []
            for decision, drop_id, token in zip(decided, ids, tracking_tokens(ids), strict=True):
                if decision.reason is None:
                    chunk.append(self.accepted(decision, drop_id, token))
                else:
                    written.refuse(decision)
            n += len(decided)
            written.accepted += len(chunk)
            yield chunk

    def first_step(self, scenario: str | None, group: int) -> datetime | None:
        """When a drop's scenario takes its first step (None: it does not walk); the batch
        asks for a run of the test driver at the earliest of them."""
        if scenario is None or scenario == SandboxScenario.MANUAL:
            return None
        first_step = self.first_steps[group]
        earliest = self.written.scenarios_from
        self.written.scenarios_from = first_step if earliest is None else min(earliest, first_step)
        return first_step

    def accepted(self, decision: DropDecision, drop_id: str, token: str) -> DropRow:
        """An accepted drop's row; its charge and result entry on the way."""
        drop, located, price = decision.drop, decision.located, decision.price
        group = decision.group
        order_id = self.order_ids[group]
        self.written.groups.add(group)
        self.till.record(drop_id, price)
        pin = new_pin() if drop.wants_pin else None
        first_step = self.first_step(drop.scenario, group)
        breakdown = self.breakdowns.get((price, decision.cod_fee))
        if breakdown is None:
            breakdown = self.breakdowns[price, decision.cod_fee] = price_breakdown(
                decision, self.money
            )
        entry = {
            "client_order_id": drop.client_order_id,
            "external_waybill": drop.external_waybill,
            "status": ACCEPTED,
            "pass_order_id": order_id,
            "drop_id": drop_id,
            "price": self.money[price],
            "price_breakdown": breakdown,
            "currency": self.currency,
            "tracking_url": self.link + token,
        }
        if located.resolved or decision.pickup.resolved:
            entry |= decision.resolved_pins()
        if pin is not None:
            entry["dropoff_pin"] = pin
        self.written.results.append(entry)
        return DropRow(
            id=drop_id,
            order_id=order_id,
            batch_id=self.batch_id,
            business_id=self.business_id,
            environment=self.environment,
            client_order_id=drop.client_order_id,
            external_waybill=drop.external_waybill,
            recipient_name=drop.name,
            recipient_phone=drop.phone,
            lat=located.pin[0],
            long=located.pin[1],
            address=drop.place.address,
            resolved=located.resolved,
            status=self.statuses[group],
            price=price,
            currency=self.currency,
            created_at=self.now,
            updated_at=self.now,
            dropoff_pin=pin,
            sandbox_scenario=drop.scenario,
            scenario_next_at=first_step,
            notes=drop.notes,
            undeliverable_action=drop.undeliverable_action,
            recipient_email=drop.email,
            **(window_columns(decision) if drop.window is not None else {}),
            **(carried(decision) if drop.parcel is not None or drop.cod is not None else {}),
        )
