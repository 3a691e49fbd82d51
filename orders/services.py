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
from functools import partial

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
from geo.geocoders import Pin, geocode_addresses
from geo.services import Coverage, load_coverage
from orders.decisions import (
    MESSAGES,
    AccountState,
    Decider,
    Decisions,
    DropDecision,
    Reason,
    batch_addresses,
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
from orders.inputs import BatchIn
from orders.links import new_pin, tracking_tokens, tracking_url
from orders.models import (
    Batch,
    BatchStatus,
    Drop,
    IdempotencyRecord,
    Order,
    Quote,
)
from orders.results import ACCEPTED, REJECTED, ResultEntry, entries_of, stored_entries
from orders.rows import BatchShared, Decided, DropRow, OrderRow, drop_row, order_rows
from orders.short_codes import SHORT_CODE_UNIQUE, new_short_codes
from orders.signals import scenarios_started
from orders.statuses import ACTIVE_STATUSES


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
    addresses = batch_addresses(batch)
    return geocode_addresses(addresses)


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
    made (docs/decisions.md, "Drops are decided inside the COPY's stream, under the account
    lock"). No client_order_id is looked up first: looking 1000 ids up costs more
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
        written = _write_coded(row, decider, lambda: decider_for(state), till)
    except IntegrityError:
        till.charges.clear()
        groups = decider.batch.groups
        taken = taken_ids(
            business, environment, [d.client_order_id for g in groups for d in g.drops]
        )
        if not taken:
            raise  # no id is taken: a fault, not a decision
        retaken = replace(state, taken=taken)
        return _write_coded(row, decider_for(retaken), partial(decider_for, retaken), till)
    _name_duplicates_refused_for_balance(written, business, environment)
    return written


# How many times a batch draws its drops' short codes before a repeat is taken for a fault.
SHORT_CODE_DRAWS = 3


def _write_coded(
    row: Batch, decider: Decider, decider_again: Callable[[], Decider], till: Till
) -> Written:
    """_write_drops in a savepoint. When the unique index finds a short code an existing drop
    of the environment has (60 random bits: astronomically rare), the drops are decided
    again by a new decider, which draws new codes (decide): never an error for the caller.
    Any other refusal is raised."""
    for _ in range(SHORT_CODE_DRAWS - 1):
        try:
            with transaction.atomic():  # a savepoint
                return _write_drops(row, decider, till)
        except IntegrityError as refused:
            if _constraint_of(refused) != SHORT_CODE_UNIQUE:
                raise
            till.charges.clear()
        decider = decider_again()
    with transaction.atomic():
        return _write_drops(row, decider, till)


def _constraint_of(refused: IntegrityError) -> str | None:
    """The name of the constraint that refused a write (PostgreSQL says; else None)."""
    diag = getattr(refused.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None)


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
    """The batch's orders in one COPY, then its drops in another, fed chunk by chunk as they
    are decided (core.writes.insert_chunks): PostgreSQL stores a chunk while the next one is
    decided and made (_drop_chunks). A drop's creation is its row, no event.

    The orders go first, for every group whose pickup passed its rules (the drops' ownership
    check wants them); a group none of whose drops was accepted loses its order afterwards.
    """
    shared = BatchShared.of(row, decider, uuid7_texts(len(decider.batch.groups)))
    written = Written([])
    orders = order_rows(decider, shared)
    insert_rows(Order, OrderRow._fields, orders)
    insert_chunks(Drop, DropRow._fields, _drop_chunks(decider, shared, till, written))
    empty = {order.id for order in orders} - written.orders
    if empty:
        Order.objects.filter(pk__in=list(empty)).delete()
    return written


def _drop_chunks(
    decider: Decider, shared: BatchShared, till: Till, written: Written
) -> Iterator[list[DropRow]]:
    """The batch's steps, a run of drops at a time, as the COPY asks for its next chunk:
    decide every drop → charge the accepted → their rows → write (the COPY sends the rows
    yielded) → every drop's answer, made while PostgreSQL stores the rows."""
    texts = AnswerTexts()
    for run in decide(decider):
        accepted = [drop for drop in run if drop.decision.reason is None]
        charge(till, accepted)
        rows = [drop_row(drop, shared) for drop in accepted]
        yield rows
        written.add([answer_of(drop, shared, texts) for drop in run], rows)


# Drops are decided and go to the database in runs of this many (core.writes.insert_chunks):
# small enough that PostgreSQL starts early, big enough that a chunk's overhead stays
# negligible.
DROP_CHUNK_ROWS = 100


def decide(decider: Decider) -> Iterator[list[Decided]]:
    """Every drop decided, DROP_CHUNK_ROWS at a time, against the locked account as it goes
    (orders.decisions.Decider), each with the id, tracking token, short code and PIN it has
    if accepted."""
    # Ids for every drop at once (core/ids.py); refused drops leave theirs unused.
    drop_ids, start = uuid7_texts(len(decider)), 0
    for run in decider.runs(DROP_CHUNK_ROWS):
        ids = drop_ids[start : start + len(run)]
        start += len(run)
        pins = [new_pin() if d.reason is None and d.drop.wants_pin else None for d in run]
        # The run's tracking tokens in one cipher call (orders/links.py), its short codes in
        # one draw of random bytes (orders/short_codes.py): refused drops leave theirs unused.
        codes = new_short_codes(len(run))
        yield list(map(Decided, run, ids, tracking_tokens(ids), codes, pins))


def charge(till: Till, accepted: list[Decided]) -> None:
    """Each accepted drop's price, recorded on the till: settled once for the batch."""
    for drop in accepted:
        till.record(drop.drop_id, drop.decision.price)


def answer_of(drop: Decided, shared: BatchShared, texts: AnswerTexts) -> dict:
    """A drop's result entry, in its wire form (docs/contract.md §4)."""
    decision, asked = drop.decision, drop.decision.drop
    if decision.reason is not None:
        return refusal_of(decision)
    entry = {
        "client_order_id": asked.client_order_id,
        "external_waybill": asked.external_waybill,
        "status": ACCEPTED,
        "pass_order_id": shared.order_ids[decision.group],
        "drop_id": drop.drop_id,
        "short_code": drop.short_code,
        "price": texts.money[decision.price],
        "price_breakdown": texts.breakdown(decision),
        "currency": shared.currency,
        "tracking_url": texts.link + drop.token,
    }
    if decision.located.resolved or decision.pickup.resolved:
        entry |= decision.resolved_pins()
    if drop.pin is not None:
        entry["dropoff_pin"] = drop.pin
    return entry


def refusal_of(decision: DropDecision) -> dict:
    """A refused drop's result entry: why, in the contract's words."""
    return {
        "client_order_id": decision.drop.client_order_id,
        "external_waybill": decision.drop.external_waybill,
        "status": REJECTED,
        "failure_reason": decision.reason.name,
        "message": decision.message,
    }


class AnswerTexts:
    """The answer's repeated texts, each made once per batch: the tracking links' prefix,
    each price's text, each (price, COD fee)'s breakdown (shared by the entries: read-only)."""

    __slots__ = ("breakdowns", "link", "money")

    def __init__(self) -> None:
        self.link = tracking_url("")
        self.money = MoneyTexts()
        self.breakdowns: dict[tuple[Decimal, Decimal], dict[str, str]] = {}

    def breakdown(self, decision: DropDecision) -> dict[str, str]:
        key = decision.price, decision.cod_fee
        breakdown = self.breakdowns.get(key)
        if breakdown is None:
            breakdown = self.breakdowns[key] = price_breakdown(decision, self.money)
        return breakdown


@dataclass(slots=True)
class Written:
    """What writing a batch's drops gave: its result entries in submission order (in their
    wire form: orders.results types them), how many drops were accepted, the orders that
    got one, and when the first sandbox scenario step is due."""

    results: list[dict]
    accepted: int = 0
    scenarios_from: datetime | None = None  # when the first scenario step is due, if any
    orders: set[str] = field(default_factory=set)  # the ids of orders with an accepted drop

    def add(self, entries: list[dict], rows: list[DropRow]) -> None:
        """A run's result entries (every drop's) and rows (the accepted drops')."""
        self.results += entries
        self.accepted += len(rows)
        self.orders.update(row.order_id for row in rows)
        # The batch asks for a run of the test driver at the earliest first step.
        steps = [row.scenario_next_at for row in rows if row.scenario_next_at is not None]
        if self.scenarios_from is not None:
            steps.append(self.scenarios_from)
        self.scenarios_from = min(steps, default=None)

    @property
    def refused_for_balance(self) -> list[int]:
        """The indexes in `results` of the drops refused for their balance (rule 11)."""
        reason = Reason.INSUFFICIENT_BALANCE.name
        return [i for i, entry in enumerate(self.results) if entry.get("failure_reason") == reason]


def price_breakdown(decision: DropDecision, texts: MoneyTexts | None = None) -> dict[str, str]:
    """An accepted drop's price in its parts (docs/contract.md §18): price = delivery + cod_fee."""
    texts = MoneyTexts() if texts is None else texts
    return {"delivery": texts[decision.delivery], "cod_fee": texts[decision.cod_fee]}
