"""Django's database cache with an atomic incr() and a clean add(), so counters agree across
app processes.

The stock DatabaseCache.incr() is a get() then a set(): two processes incrementing at
once both read n and both write n + 1, and set() also restarts the entry's timeout. Its
add() of a live key tries an INSERT and swallows the unique violation (an ERROR line in
PostgreSQL's log each time), and two add()s of an expired key can both succeed. Rate
limits and the login throttle count with add() and incr(), so here:

- add() is one upsert that only replaces an expired row, after sweeping expired rows;
- incr() locks the row, adds in place and keeps the expiry.

An entry is gone at its expiry time (Django's get() keeps it through that second), so a
window of 60 s opened at 10:00:00 ends exactly at 10:01:00.

Each runs the same statements whether the key is new or not, so a request costs the same
number of queries in every window. Redis and memcached need none of this.
"""

from __future__ import annotations

import base64
import pickle
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connections, models, router, transaction
from django.utils.timezone import now as tz_now

UPSERT_VENDORS = {"postgresql", "sqlite"}  # INSERT … ON CONFLICT … DO UPDATE … WHERE


class DatabaseCache(DjangoDatabaseCache):
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        if connection.vendor not in UPSERT_VENDORS:
            return super().add(key, value, timeout, version)
        key = self.make_and_validate_key(key, version=version)
        table, cache_key, value_column, expires_column = self._names(connection)
        now = connection.ops.adapt_datetimefield_value(tz_now())
        expires = connection.ops.adapt_datetimefield_value(self._expiry(timeout))
        with connection.cursor() as cursor:
            # Sweeping here keeps the table to live entries without Django's COUNT(*) and cull.
            cursor.execute(f"DELETE FROM {table} WHERE {expires_column} <= %s", [now])
            cursor.execute(
                f"INSERT INTO {table} ({cache_key}, {value_column}, {expires_column}) "
                f"VALUES (%s, %s, %s) ON CONFLICT ({cache_key}) DO UPDATE SET "
                f"{value_column} = excluded.{value_column}, "
                f"{expires_column} = excluded.{expires_column} "
                f"WHERE {table}.{expires_column} <= %s",
                [key, self._encode(value), expires, now],
            )
            return cursor.rowcount == 1

    def incr(self, key, delta=1, version=None):
        key = self.make_and_validate_key(key, version=version)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        table, cache_key, value_column, expires_column = self._names(connection)
        with transaction.atomic(using=db), connection.cursor() as cursor:
            if connection.features.has_select_for_update:
                lock = " FOR UPDATE"
            else:
                # SQLite has no row locks: a no-op write takes the database's write lock
                # first, so a concurrent incr waits here instead of reading a stale value.
                lock = ""
                cursor.execute(
                    f"UPDATE {table} SET {expires_column} = {expires_column} "
                    f"WHERE {cache_key} = %s",
                    [key],
                )
            cursor.execute(
                f"SELECT {value_column}, {expires_column} FROM {table} "
                f"WHERE {cache_key} = %s{lock}",
                [key],
            )
            row = cursor.fetchone()
            live = row is not None and self._expires_of(row[1], connection) > tz_now()
            if live:
                value = self._decode(row[0], connection) + delta
                cursor.execute(
                    f"UPDATE {table} SET {value_column} = %s WHERE {cache_key} = %s",
                    [self._encode(value), key],
                )
        if not live:
            raise ValueError(f"Key '{key}' not found")
        return value

    def _names(self, connection) -> tuple[str, str, str, str]:
        quote_name = connection.ops.quote_name
        return tuple(quote_name(n) for n in (self._table, "cache_key", "value", "expires"))

    def _expiry(self, timeout) -> datetime:
        # As Django's _base_set: whole seconds, aware when USE_TZ.
        seconds = self.get_backend_timeout(timeout)
        if seconds is None:
            return datetime.max.replace(microsecond=0)
        return datetime.fromtimestamp(seconds, tz=UTC if settings.USE_TZ else None).replace(
            microsecond=0
        )

    def _encode(self, value) -> str:
        return base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")

    @staticmethod
    def _decode(raw, connection):
        return pickle.loads(base64.b64decode(connection.ops.process_clob(raw).encode()))

    @staticmethod
    def _expires_of(raw, connection) -> datetime:
        expression = models.Expression(output_field=models.DateTimeField())
        converters = connection.ops.get_db_converters(expression) + expression.get_db_converters(
            connection
        )
        for converter in converters:
            raw = converter(raw, expression, connection)
        return raw
