"""Reads that tolerate lag go to a replica (docs/contract.md §22, docs/scaling.md).

A view that only reads, and whose reader can live with data a moment old, says so with
`reads_may_lag` (tracking, the orders listing, /events, the recipient's page, the
dashboard's pages). While it runs, the router sends the reads of the application's models to
the `replica` database, unless

- no replica is configured (DATABASE_REPLICA_URL unset): every read is on the primary, and
  none of this costs a statement;
- the caller wrote in the last READ_YOUR_WRITES_SECONDS (an API key, or a browser
  session: `ReplicaReadsMiddleware` notes each write in the counters' store, core/counters.py:
  one upsert in the database, or one Redis call), so a
  batch just created is tracked at once, from the primary;
- the read is inside a transaction (a lock, or a read that a write depends on), or names a
  model outside LAG_TOLERANT_APPS (sessions, users, the cache, rate counters);
- the replica does not answer: the primary serves, and the replica is tried again after
  REPLICA_RETRY_SECONDS.

Writes always go to the primary. A view that finds nothing where the primary would find
something (a link opened the moment it was sent) re-reads with `reads_on_primary`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest

from core import counters

REPLICA = "replica"
# The apps whose rows a lagging read may show; everything else (auth, sessions, the cache
# table, core's rate counters, the task queue) is read on the primary always.
LAG_TOLERANT_APPS = frozenset(
    {"geo", "fleet", "accounts", "events", "billing", "orders", "couriers", "tracking", "dispatch"}
)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
REPLICA_RETRY_SECONDS = 5.0

_on_replica: ContextVar[bool] = ContextVar("reads_on_replica", default=False)
_replica_down_until = 0.0


def configured() -> bool:
    return REPLICA in settings.DATABASES


def read_alias() -> str:
    """The database a read of a lag-tolerant model goes to now."""
    if _on_replica.get() and not connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return REPLICA
    return DEFAULT_DB_ALIAS


class ReplicaRouter:
    """DATABASE_ROUTERS' entry when a replica is configured (config/settings.py)."""

    def db_for_read(self, model, **hints) -> str | None:
        if model._meta.app_label in LAG_TOLERANT_APPS:
            return read_alias()
        return None

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # one database, seen from two places

    def allow_migrate(self, db: str, app_label: str, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica replays the primary's schema


def reads_may_lag(view: Callable) -> Callable:
    """Run `view` (a function view, or a DRF view's method) with its reads on the replica
    when the caller has not written lately. Authentication has run by then (DRF's
    `initial`, or the login check outside this decorator), on the primary."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        request = args[0] if isinstance(args[0], HttpRequest) else args[1]
        getattr(request, "_request", request).reads_lagged = True
        if not configured() or wrote_lately(request) or not _replica_answers():
            return view(*args, **kwargs)
        token = _on_replica.set(True)
        try:
            return view(*args, **kwargs)
        finally:
            _on_replica.reset(token)

    return wrapped


@contextlib.contextmanager
def reads_on_primary() -> Iterator[None]:
    """Within a lag-tolerant view: these reads must see the latest commit."""
    token = _on_replica.set(False)
    try:
        yield
    finally:
        _on_replica.reset(token)


class ReplicaReadsMiddleware:
    """Notes who wrote: any request with a method that may write, outside a lag-tolerant
    view, that did not fail on our side. Its caller then reads from the primary for
    READ_YOUR_WRITES_SECONDS. Without a replica it does nothing."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            configured()
            and request.method not in SAFE_METHODS
            and not getattr(request, "reads_lagged", False)
            and response.status_code < 500
            and (writer := writer_of(request))
        ):
            # Unmarked while the counters' store is down: held() then says "wrote" anyway.
            with contextlib.suppress(counters.CountersUnavailable):
                counters.hold(writer, settings.READ_YOUR_WRITES_SECONDS)
        return response


def writer_of(request) -> str | None:
    """Who is asking, as a cache key: the API key that authenticated the request (its
    principal's `key`), else the browser session; None for an anonymous caller."""
    key = getattr(getattr(request, "auth", None), "key", None)
    if key is not None:
        return f"wrote:key:{key.pk}"
    session = getattr(request, "session", None)
    session_key = session.session_key if session is not None else None
    return f"wrote:session:{session_key}" if session_key else None


def wrote_lately(request) -> bool:
    """Whether the caller wrote in the last READ_YOUR_WRITES_SECONDS; yes when the counters'
    store cannot say."""
    writer = writer_of(request)
    if writer is None:
        return False
    try:
        return counters.held(writer)
    except counters.CountersUnavailable:
        return True


def _replica_answers() -> bool:
    """Whether the replica takes a statement now (its kept connection checked once per
    request, as the primary's is); a refusal rests it for REPLICA_RETRY_SECONDS."""
    global _replica_down_until
    if time.monotonic() < _replica_down_until:
        return False
    replica = connections[REPLICA]
    try:
        replica.close_if_health_check_failed()
        replica.ensure_connection()
    except DatabaseError:
        replica.close()
        _replica_down_until = time.monotonic() + REPLICA_RETRY_SECONDS
        return False
    return True
