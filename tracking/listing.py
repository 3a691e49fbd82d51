"""GET /orders and the dashboard's orders page: an account's drops as tracking entries, by page.

Two orders (docs/contract.md §13):

- newest first, by (created_at, id) descending: for browsing. A drop keeps its place
  however often it moves, so paging never skips or repeats one that existed when the
  first page was read; each page shows its drops as they are when that page is read.
- with `updated_since`, oldest change first, by (updated_at, id) ascending: for syncing.
  A client keeps the last `next_cursor` and asks again later; a drop that moves after it
  was listed gets a later updated_at and is listed again, so the last time a client saw
  a drop it saw its latest state.

Keyset pagination: a cursor (core/cursors.py) holds the sort key of the last row listed
and the next page starts strictly after it, through the index that has the rows in that
order, so a page costs the same on the first page and on the thousandth, however big
the account. The indexes (orders.Drop.Meta) lead with (business, environment, status);
a listing of several statuses or environments is one UNION ALL branch per pair, which
PostgreSQL merges in key order (Merge Append), reading about one page of rows in all.
The sync order's index holds only drops changed since they were created, so that the
bulk call writes each new drop to one listing index, not two (docs/decisions.md, "A listing
page is one index range per status"). A drop still as
created has updated_at = created_at: in the statuses a drop is created in (SCHEDULED,
PENDING) a second branch reads those from the created index, in the same order. The two
branches split the drops by one condition and its negation (UNCHANGED_SINCE_CREATED), so
each drop is in exactly one, whatever its timestamps.
A batch filter reads the batch's own index instead: at most MAX_DROPS_PER_BATCH rows.
A window_status filter (newest first) reads drop_listing_by_window, which holds only drops
with a window: one range per (environment, window status, status), in the same order.
The dashboard's filters (created_before, search) narrow the same index ranges: a date
bound is a bound of the range, a search a condition checked on the rows read in order.

Why syncing never skips a change. updated_at is stamped inside the moving transaction
(tracking.lifecycle.apply_moves, after its row locks; orders.services.create_batch just
before its first insert), but that transaction commits later. Had a page already listed
a drop changed later, with a larger updated_at, by a quicker transaction, the cursor
would be past the slow one's stamp when it commits, and the client would never see that
change. So the sync order lists only rows stamped before a horizon (sync_horizon): now,
less the age of the oldest transaction of this database that is still writing or
waiting for a lock (pg_stat_activity), less SYNC_MARGIN. A change not committed
when the horizon is read was stamped at or after its transaction began, so at or after
the horizon; every row a page lists is below its horizon, so the cursor stays behind
every change still to commit, and a later page lists it. SYNC_MARGIN covers what the
database cannot see: the moment between create_batch's `now` and its first insert, and
clock skew between application servers. The horizon is read before the page's query;
changes of the last SYNC_MARGIN (or of transactions still open) appear on a later call,
and `has_more` is false meanwhile. A writing transaction left open holds the sync order
back for as long as it stays open: late, never wrong.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import F, Q, QuerySet
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan
from django.utils import timezone

from core.cursors import InvalidCursor, make_cursor, read_cursor
from core.reads import typed_rows_compiled_once
from core.replica import reads_on_primary
from orders.models import UNCHANGED_SINCE_CREATED, Drop, DropStatus
from orders.statuses import INITIAL_STATUSES
from tracking.selectors import entries_by_drop_id

MAX_LIMIT = 500
DEFAULT_LIMIT = 100
SYNC_MARGIN = timedelta(seconds=2)
CURSOR_SALT = "tracking.listing.drops"

# How long ago (by the database's clock) the oldest transaction that may still write a
# drop began: one that has written or locked rows (it has an xid), or one waiting for a
# lock (create_batch stamps its drops, then may wait on its idempotency claim before its
# first write). Read-only work (a report, pg_dump) does not hold the horizon back. Our own
# transaction is left out: our own writes are visible to us.
_OLDEST_WRITER_AGE_SQL = """
    SELECT coalesce(clock_timestamp() - min(xact_start), interval '0')
    FROM pg_stat_activity
    WHERE datname = current_database()
      AND (backend_xid IS NOT NULL OR wait_event_type = 'Lock')
      AND pid <> pg_backend_pid()
"""


@dataclass(frozen=True)
class DropFilters:
    statuses: tuple[str, ...] = ()  # () is every status
    # Drop-off window statuses (docs/contract.md §17); () is any drop, with a window or not.
    window_statuses: tuple[str, ...] = ()
    batch_id: uuid.UUID | None = None
    created_since: datetime | None = None
    updated_since: datetime | None = None
    # The dashboard's filters; the API has none of them.
    # Created strictly before this instant (the dashboard's "to" day ends at the next midnight).
    created_before: datetime | None = None
    # Any of these batches; () is every batch. A client_batch_id may name one batch in each
    # environment, so the dashboard's batch filter can stand for two.
    batch_ids: tuple[uuid.UUID, ...] = ()
    # Case-insensitive "contains" over client_order_id, external_waybill and recipient_name.
    search: str = ""
    # The old name of `search`, from when it looked at client_order_id alone.
    client_order_id_contains: InitVar[str] = ""

    def __post_init__(self, client_order_id_contains: str) -> None:
        if client_order_id_contains and not self.search:
            object.__setattr__(self, "search", client_order_id_contains)

    @property
    def by_change(self) -> bool:
        return self.updated_since is not None

    @property
    def in_batches(self) -> bool:
        return self.batch_id is not None or bool(self.batch_ids)


@dataclass(frozen=True)
class DropPage:
    orders: list[dict]
    has_more: bool
    # Newest first: None on the last page. By change: always set, to ask again later.
    next_cursor: str | None


def list_drops(
    *,
    business,
    environments: Sequence[str],
    filters: DropFilters,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> DropPage:
    """One page of the account's drops; raises InvalidCursor for a cursor it did not make.

    The sync order (updated_since) reads on the primary even in a lag-tolerant view: its
    horizon is measured there (sync_horizon), and a replica's rows may end before it.
    """
    if filters.by_change:
        with reads_on_primary():
            return _page(business, environments, filters, limit, cursor)
    return _page(business, environments, filters, limit, cursor)


def _page(
    business, environments: Sequence[str], filters: DropFilters, limit: int, cursor: str | None
) -> DropPage:
    fingerprint = _fingerprint(business, environments, filters)
    after = None
    if cursor:
        after = _position(read_cursor(cursor, salt=CURSOR_SALT, filters=fingerprint))
    horizon = sync_horizon() if filters.by_change else None
    query = functools.partial(
        page_keys,
        business=business,
        environments=environments,
        filters=filters,
        after=after,
        horizon=horizon,
        limit=limit,
    )
    keys = _keys(query, business, environments, filters, after, limit)
    shown, has_more = keys[:limit], len(keys) > limit
    entries = entries_by_drop_id([pk for pk, _ in shown]) if shown else {}
    orders = [entries[str(pk)] for pk, _ in shown if str(pk) in entries]
    # The cursor is the key as this page's first query read it, never the entry's own
    # updated_at: a drop that moved in between must still be listed again, later.
    last = (shown[-1][1], shown[-1][0]) if shown else after
    next_cursor = None
    if has_more or filters.by_change:
        position = [] if last is None else [last[0].isoformat(), str(last[1])]
        next_cursor = make_cursor(salt=CURSOR_SALT, position=position, filters=fingerprint)
    return DropPage(orders, has_more, next_cursor)


def _keys(
    query: Callable[[], QuerySet],
    business,
    environments: Sequence[str],
    filters: DropFilters,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[tuple[uuid.UUID, datetime]]:
    """The rows of `query` (page_keys with these arguments). The API's usual page (newest
    first, by status at most) keeps the SQL Django compiled for its shape (core.reads):
    building and compiling the union of one branch per status cost more than the database
    takes to answer it (docs/decisions.md, "The small calls' SQL and reference data are
    compiled once per process").
    Any other page is compiled as it comes."""
    plain = DropFilters(statuses=filters.statuses)
    if filters != plain or not connection.features.supports_slicing_ordering_in_compound:
        return list(query())
    statuses = tuple(filters.statuses) or tuple(DropStatus.values)
    shape = ("page keys", len(environments), statuses, after is not None, limit)
    params = [
        value
        for environment in environments
        for status in statuses
        for value in (business.pk, environment, status, *(after or ()))
    ]
    return typed_rows_compiled_once(shape, params, query)


def page_keys(
    *,
    business,
    environments: Sequence[str],
    filters: DropFilters,
    after: tuple[datetime, uuid.UUID] | None,
    horizon: datetime | None,
    limit: int,
) -> QuerySet:
    """(id, sort time) of up to limit + 1 drops after `after`, in listing order (one query)."""
    order = ("key", "id") if filters.by_change else ("-key", "-id")
    rows = _narrowed(Drop.objects.filter(business=business).order_by(), filters)
    statuses = list(filters.statuses) or list(DropStatus.values)
    sort = "updated_at" if filters.by_change else "created_at"

    def keyed(branch: QuerySet, column: str) -> QuerySet:
        """The branch's rows past the cursor, within the sync bounds, as (id, key) by `column`."""
        if filters.updated_since is not None:
            branch = branch.filter(**{f"{column}__gte": filters.updated_since})
        if horizon is not None:
            branch = branch.filter(**{f"{column}__lt": horizon})
        if after is not None:
            beyond = TupleGreaterThan if filters.by_change else TupleLessThan
            branch = branch.filter(beyond(Tuple(F(column), F("id")), after))
        return branch.annotate(key=F(column)).values_list("id", "key").order_by(*order)

    # One batch (or two): its own index finds all of its drops, a bounded number, in one go.
    # SQLite (`make run`) cannot slice the branches of a UNION: one plain query there.
    if filters.in_batches or not connection.features.supports_slicing_ordering_in_compound:
        rows = rows.filter(environment__in=list(environments), status__in=statuses)
        if filters.window_statuses:
            rows = rows.filter(window_status__in=list(filters.window_statuses))
        return keyed(rows, sort)[: limit + 1]
    # Each branch reads at most one page from its own index range, in key order; the
    # union keeps the first limit + 1 of those. A page reads (branches × page) index entries.
    branches = [
        part[: limit + 1]
        for environment in environments
        for status in statuses
        for part in _ranges(
            rows.filter(environment=environment, status=status), status, filters, keyed
        )
    ]
    if len(branches) == 1:
        return branches[0]
    return branches[0].union(*branches[1:], all=True).order_by(*order)[: limit + 1]


def _narrowed(rows: QuerySet, filters: DropFilters) -> QuerySet:
    """The drops that the filters other than status and environment leave."""
    # A batch's drops are found through its orders (orders.models.Drop.batch).
    if filters.batch_id is not None:
        rows = rows.filter(order__batch_id=filters.batch_id)
    if filters.batch_ids:
        rows = rows.filter(order__batch_id__in=list(filters.batch_ids))
    if filters.created_since is not None:
        rows = rows.filter(created_at__gte=filters.created_since)
    if filters.created_before is not None:
        rows = rows.filter(created_at__lt=filters.created_before)
    if filters.search:
        rows = rows.filter(
            Q(client_order_id__icontains=filters.search)
            | Q(external_waybill__icontains=filters.search)
            | Q(recipient_name__icontains=filters.search)
        )
    return rows


def _ranges(branch: QuerySet, status: str, filters: DropFilters, keyed) -> list[QuerySet]:
    """The index ranges that hold one (environment, status)'s drops, each in listing order."""
    if filters.window_statuses and not filters.by_change:
        # One range of drop_listing_by_window per window status, in created order (an IN list
        # beside it would make the planner sort each range).
        return [
            keyed(branch.filter(window_status=window_status), "created_at")
            for window_status in filters.window_statuses
        ]
    if filters.window_statuses:  # the sync order: the API refuses it (tracking/inputs.py)
        branch = branch.filter(window_status__in=list(filters.window_statuses))
    if not filters.by_change:
        return [keyed(branch, "created_at")]
    # By change: the drops changed since created from the index that holds only those
    # (drop_listing_by_change); a drop still as created has updated_at = created_at, so in a
    # status it can be created in, those are read in created order from the other index, the
    # changed ones of that status skipped there.
    ranges = [keyed(branch.exclude(UNCHANGED_SINCE_CREATED), "updated_at")]
    if status in INITIAL_STATUSES:
        ranges.append(keyed(branch.filter(updated_at=F("created_at")), "created_at"))
    return ranges


def sync_horizon() -> datetime:
    """Every drop change stamped before this is committed; none still to commit is stamped before.

    Measured on the application's clock, which stamps updated_at: now, less the age of
    the oldest transaction still writing (a duration, so the database clock's offset does
    not matter), less SYNC_MARGIN.
    """
    now = timezone.now()  # before the query: a writer it cannot see began after this
    if connection.vendor != "postgresql":
        return now - SYNC_MARGIN  # SQLite (`make run`): one writer at a time
    with connection.cursor() as cursor:
        cursor.execute(_OLDEST_WRITER_AGE_SQL)
        oldest_writer_age = max(cursor.fetchone()[0], timedelta(0))
    return now - oldest_writer_age - SYNC_MARGIN


def _fingerprint(business, environments: Sequence[str], filters: DropFilters) -> dict:
    """What a cursor is bound to: the account and every filter (not the page size).

    The dashboard's later filters join the fingerprint only when set, so the cursors of
    the API's listing (which never sets them) stay valid across the upgrade that added them.
    """
    fingerprint = {
        "business": business.pk,
        "environments": sorted(environments),
        "statuses": sorted(set(filters.statuses)),
        "batch_id": filters.batch_id,
        "created_since": _instant(filters.created_since),
        "updated_since": _instant(filters.updated_since),
        "contains": filters.search,
    }
    if filters.created_before is not None:
        fingerprint["created_before"] = _instant(filters.created_before)
    if filters.batch_ids:
        fingerprint["batch_ids"] = sorted(str(pk) for pk in set(filters.batch_ids))
    if filters.window_statuses:
        fingerprint["window_statuses"] = sorted(set(filters.window_statuses))
    return fingerprint


def _instant(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).isoformat()


def _position(values: list) -> tuple[datetime, uuid.UUID] | None:
    if not values:
        return None
    try:
        at, pk = values
        return datetime.fromisoformat(at), uuid.UUID(pk)
    except (TypeError, ValueError) as exc:
        raise InvalidCursor("Not a cursor this listing gave out.") from exc
