"""Counters in fixed windows shared by every app process: API rate limits and the login throttle.

A counter's window opens at its first hit after the previous window ended and lasts the
period given with that hit; count() adds one hit and tells how many the window holds and when
it ends. Both stores decide with the app's clock, so they behave the same (and tests may stop
the clock). Which store, CACHE_URL decides:

- the database (the default): one row per counter (core.models.RateCounter) counted by one
  statement, INSERT … ON CONFLICT DO UPDATE … RETURNING (PostgreSQL; SQLite 3.35+). The
  conflicting row is locked by the upsert, so concurrent hits of one counter queue for a
  moment and none is lost; other counters never wait. On PostgreSQL a counter named by a
  row read anyway (an API key's) can be counted by that read's statement (count_with_row).
- Redis (CACHE_URL=redis://…): Django's RedisCache, through its public API only. The windows
  of a counter are numbered: `<counter>:<n>` holds window n's end, written with add() so that
  of the requests that find window n - 1 ended exactly one opens window n; its hits are
  counted with incr() (Redis' INCR) in `<counter>:<n>:<end>`, a key no other window shares;
  `<counter>:n` remembers the current number, a hint that readers walk forward from.
  A hit costs three cache calls while its window is open (get, get, incr) and a few more
  when it opens one; every key expires a period after its window ends.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router
from redis.exceptions import RedisError

from core.models import RateCounter

REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


class CountersUnavailable(Exception):
    """The counters' store (Redis) cannot be reached: each caller decides what that means.

    API rate limits let the request through (a Redis restart must not stop deliveries); the
    login throttle refuses sign-ins until it can count again (docs/decisions.md).
    """


T = TypeVar("T")


def _redis_call(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def call(*args, **kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except (RedisError, OSError) as exc:
            raise CountersUnavailable(str(exc)) from exc

    return call


@dataclass(frozen=True, slots=True)
class Window:
    hits: int  # counted in this window so far, the hit just counted included
    ends_at: float  # epoch seconds


def count(key: str, period: int, now: float | None = None) -> Window:
    """Count one hit of `key` in its current window, opening a `period`-second one if none is.

    Raises CountersUnavailable while Redis (CACHE_URL=redis://) cannot be reached; as every
    function here.
    """
    return _store().count(key, period, _ms(now))


def counts_with_rows() -> bool:
    """Whether count_with_row() can be used: the database store, on PostgreSQL."""
    if _store() is not DATABASE:
        return False
    return connections[router.db_for_write(RateCounter)].vendor == "postgresql"


def count_with_row(
    prefix: str,
    period: int,
    row: str,
    params: Sequence,
    *,
    width: int,
    now: float | None = None,
) -> tuple[tuple | None, Window | None]:
    """The first row of the query `row` (SQL with `params`, `width` columns) and, only when
    there is one, one hit of the counter `prefix` + the text of its first column, in one
    statement: (None, None) when there is no row. For a counter named by a row that is read
    on every call anyway (an API key's: accounts.auth); only where counts_with_rows().
    """
    return DATABASE.count_with_row(prefix, period, row, params, width, _ms(now))


def live_hits(keys: list[str], now: float | None = None) -> dict[str, int]:
    """Hits in each counter's open window, counting nothing; a counter without one is absent."""
    return _store().live_hits(keys, _ms(now))


def forget(key: str) -> None:
    """Close the counter's window: its next hit opens a new one and counts 1."""
    _store().forget(key)


def hold(key: str, seconds: int, now: float | None = None) -> None:
    """Mark `key` for the next `seconds`, from now whatever mark it had (read-your-writes,
    core/replica.py): one statement, or one cache call."""
    _store().hold(key, seconds, _ms(now))


def held(key: str, now: float | None = None) -> bool:
    """Whether `key` is marked now (hold)."""
    return _store().held(key, _ms(now))


def purge_ended(now: float | None = None) -> int:
    """Delete the database rows of windows that have ended; how many (Redis expires its own)."""
    deleted, _ = RateCounter.objects.filter(window_end_ms__lte=_ms(now)).delete()
    return deleted


def _ms(now: float | None) -> int:
    return round((time.time() if now is None else now) * 1000)


def _store() -> DatabaseStore | CacheStore:
    # Read per call, so a changed CACHES (the tests) takes effect at once.
    return CACHE if settings.CACHES["default"]["BACKEND"] == REDIS_CACHE else DATABASE


class DatabaseStore:
    def count(self, key: str, period: int, now_ms: int) -> Window:
        connection = connections[router.db_for_write(RateCounter)]
        # Called in autocommit (no caller holds a transaction open around it), so the row lock
        # lasts this one statement.
        with connection.cursor() as cursor:
            cursor.execute(
                self._counting(connection, "VALUES (%s, %s, 1)"),
                [key, now_ms + period * 1000, now_ms, now_ms],
            )
            window_end_ms, counted = cursor.fetchone()
        return Window(hits=counted, ends_at=window_end_ms / 1000)

    def count_with_row(
        self, prefix: str, period: int, row: str, params: Sequence, width: int, now_ms: int
    ) -> tuple[tuple | None, Window | None]:
        connection = connections[router.db_for_write(RateCounter)]
        names = [f"c{i}" for i in range(width)]
        # The row's query as a CTE whose columns are named c0, c1, …; the upsert counts from
        # it, so it counts nothing when the row is not there; the row comes back with the
        # window beside it. A data-modifying CTE runs once, whether or not it is read.
        upsert = self._counting(connection, "SELECT %s || subject.c0::text, %s, 1 FROM subject")
        sql = (
            f"WITH subject ({', '.join(names)}) AS ({row}), hit AS ({upsert}) "
            "SELECT subject.*, hit.* FROM subject LEFT JOIN hit ON true"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, prefix, now_ms + period * 1000, now_ms, now_ms])
            found = cursor.fetchone()
        if found is None:
            return None, None
        *values, window_end_ms, counted = found
        return tuple(values), Window(hits=counted, ends_at=window_end_ms / 1000)

    @staticmethod
    def _counting(connection, rows: str) -> str:
        """The counting upsert of `rows` (a counter's key, its window's end if it opens one,
        1), then the present moment twice; returning the window's end and its hits."""
        quote = connection.ops.quote_name
        table = quote(RateCounter._meta.db_table)
        key_column, end, hits = (quote(name) for name in ("key", "window_end_ms", "hits"))
        ended = f"{table}.{end} <= %s"
        # One statement, whichever happens: a new counter, a hit in the open window, or the
        # first hit after the window ended (both CASEs read the row as it was before).
        return (
            f"INSERT INTO {table} ({key_column}, {end}, {hits}) {rows} "
            f"ON CONFLICT ({key_column}) DO UPDATE SET "
            f"{end} = CASE WHEN {ended} THEN excluded.{end} ELSE {table}.{end} END, "
            f"{hits} = CASE WHEN {ended} THEN 1 ELSE {table}.{hits} + 1 END "
            f"RETURNING {end}, {hits}"
        )

    def live_hits(self, keys: list[str], now_ms: int) -> dict[str, int]:
        live = RateCounter.objects.filter(key__in=keys, window_end_ms__gt=now_ms)
        return dict(live.values_list("key", "hits"))

    def forget(self, key: str) -> None:
        RateCounter.objects.filter(key=key).delete()

    def hold(self, key: str, seconds: int, now_ms: int) -> None:
        """A row whose window ends `seconds` from now (no hits): purge_ended deletes it later."""
        connection = connections[router.db_for_write(RateCounter)]
        quote = connection.ops.quote_name
        table = quote(RateCounter._meta.db_table)
        key_column, end, hits = (quote(name) for name in ("key", "window_end_ms", "hits"))
        sql = (
            f"INSERT INTO {table} ({key_column}, {end}, {hits}) VALUES (%s, %s, 0) "
            f"ON CONFLICT ({key_column}) DO UPDATE SET {end} = excluded.{end}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [key, now_ms + seconds * 1000])

    def held(self, key: str, now_ms: int) -> bool:
        return RateCounter.objects.filter(key=key, window_end_ms__gt=now_ms).exists()


class CacheStore:
    # Walking forward from a stale hint takes a step per window opened meanwhile: a few at most.
    MAX_STEPS = 16

    @_redis_call
    def count(self, key: str, period: int, now_ms: int) -> Window:
        # Every key outlives its window by a period, so a window is never forgotten while open.
        lifetime = 2 * period
        hint = number = cache.get(self._number_key(key)) or 0
        for _ in range(self.MAX_STEPS):
            end = cache.get(self._window_key(key, number))
            if end is not None and end > now_ms:
                if number != hint:  # walked past a stale hint: correct it for the next reader
                    cache.set(self._number_key(key), number, timeout=lifetime)
                break
            if end is not None:
                number += 1  # window n ended: the next is n + 1, whoever opens it
            # else window n was never opened, or it ended long ago and the cache let it go.
            end = now_ms + period * 1000
            if cache.add(self._window_key(key, number), end, timeout=lifetime):
                cache.set(self._number_key(key), number, timeout=lifetime)
                break
            # Another request opened it first: read its end in the next step.
        else:
            raise RuntimeError(f"the cache keeps losing the windows of counter {key!r}")
        return Window(
            hits=self._incr(self._hits_key(key, number, end), lifetime), ends_at=end / 1000
        )

    @_redis_call
    def live_hits(self, keys: list[str], now_ms: int) -> dict[str, int]:
        numbers = cache.get_many([self._number_key(key) for key in keys])
        number = {key: numbers.get(self._number_key(key), 0) for key in keys}
        live: dict[str, str] = {}  # counter -> its open window's hits key
        unsure = list(keys)
        # One get_many() per step for all the counters; an ended window may have a successor
        # the hint has not caught up with, so that is read in the next step.
        for _ in range(self.MAX_STEPS):
            if not unsure:
                break
            ends = cache.get_many([self._window_key(key, number[key]) for key in unsure])
            ended = []
            for key in unsure:
                end = ends.get(self._window_key(key, number[key]))
                if end is not None and end > now_ms:
                    live[key] = self._hits_key(key, number[key], end)
                elif end is not None:
                    number[key] += 1
                    ended.append(key)
            unsure = ended
        hits = cache.get_many(list(live.values()))
        return {key: hits[hits_key] for key, hits_key in live.items() if hits_key in hits}

    @_redis_call
    def forget(self, key: str) -> None:
        # Without its end the window counts as never opened: the next hit opens it afresh.
        number = cache.get(self._number_key(key)) or 0
        window = self._window_key(key, number)
        end = cache.get(window)
        # Its hits go too: a window reopened at the same millisecond would have the same end.
        cache.delete_many([window, self._hits_key(key, number, end)])

    @_redis_call
    def hold(self, key: str, seconds: int, now_ms: int) -> None:
        cache.set(self._held_key(key), now_ms + seconds * 1000, timeout=seconds)

    @_redis_call
    def held(self, key: str, now_ms: int) -> bool:
        until = cache.get(self._held_key(key))
        return until is not None and until > now_ms

    @staticmethod
    def _held_key(key: str) -> str:
        return f"{key}:held"

    @staticmethod
    def _incr(hits_key: str, lifetime: int) -> int:
        try:
            return cache.incr(hits_key)
        except ValueError:  # the window's first hit (add() lets one of several through)
            cache.add(hits_key, 0, timeout=lifetime)
            return cache.incr(hits_key)

    @staticmethod
    def _number_key(key: str) -> str:
        return f"counter:{key}:n"

    @staticmethod
    def _window_key(key: str, number: int) -> str:
        return f"counter:{key}:{number}"

    @classmethod
    def _hits_key(cls, key: str, number: int, end: int) -> str:
        return f"{cls._window_key(key, number)}:{end}"


DATABASE = DatabaseStore()
CACHE = CacheStore()
