"""Many rows read as the driver gives them: tuples, taken in chunks as the server finds them.

Django's own iteration converts every value of every row (and rebuilds a row with a JSON
column); a read whose columns are already in their wire form (core/functions.py) needs none
of that. On PostgreSQL the rows are streamed in chunks (libpq's chunked rows mode), so
turning one chunk into tuples overlaps with the server finding the next: ~2 ms of 1000
tracking entries (docs/decisions.md, "Tracking entries are built from the driver's tuples
and the server's text"). Times arrive as the text the server wrote
(core.functions.TimeText), not as datetimes.

A read made on every request can keep the SQL Django compiled for it (rows_compiled_once):
building and compiling a query of twenty expressions costs Django more than PostgreSQL
takes to run it. A read its caller expects to be small (a page, a handful of ids) is
executed instead of streamed, so psycopg prepares it on the connection after its fifth
run (config/settings.py: prepare_threshold) and the server no longer plans it per call; a
stream is always planned afresh (docs/decisions.md, "Hot statements are prepared on their
connection").

These reads go where the router sends the application's reads (core/replica.py): to the
replica inside a lag-tolerant view, else to the primary.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Hashable, Sequence

from django.db import connections
from django.db.models import Model, QuerySet
from psycopg.types.string import TextLoader

from core.replica import read_alias

ROWS_PER_CHUNK = 100

# (vendor, key) -> the SQL Django compiled for it (rows_compiled_once).
_compiled: dict[tuple, str] = {}


def driver_rows(queryset: QuerySet) -> list[tuple]:
    """The rows of `queryset` (a values_list) as the driver's tuples, unconverted; a
    timestamp as the text the server wrote.

    The statement goes through Django's execute wrappers (the request's database timer)
    and into its query log like any other.
    """
    return _run(*queryset.query.sql_with_params())


def rows_compiled_once(
    key: Hashable,
    params: Sequence,
    queryset: Callable[[], QuerySet],
    *,
    expected: int | None = None,
) -> list[tuple]:
    """driver_rows(queryset()), sending the SQL Django compiled for `key` the first time.

    `params` are the values Django binds, in its order; `key` names everything else the SQL
    depends on (the columns, a list's length or form: core.lookups.any_values). Whenever
    Django compiles, its params are compared with `params`, and the SQL is kept only when
    they match: a wrong guess of Django's order costs the saving, not the answer. `expected`:
    about how many rows the caller expects; up to a chunk's (ROWS_PER_CHUNK) the read is
    executed (and prepared once run often), not streamed.
    """
    stream = expected is None or expected > ROWS_PER_CHUNK
    return _run(*compiled_once(key, params, queryset), stream=stream)


def row_compiled_once(
    key: Hashable, params: Sequence, queryset: Callable[[], QuerySet]
) -> tuple | None:
    """The first row of `queryset()` (a values_list) as the database driver types it (what
    Django's own iteration starts from on PostgreSQL), or None; the SQL kept as in
    rows_compiled_once. For a one-row read on every request: a plain execute through
    Django's cursor (its wrappers, its query log), no stream, times as datetimes."""
    with connections[read_alias()].cursor() as cursor:
        cursor.execute(*compiled_once(key, params, queryset))
        return cursor.fetchone()


def typed_rows_compiled_once(
    key: Hashable, params: Sequence, queryset: Callable[[], QuerySet]
) -> list[tuple]:
    """Every row of `queryset()` (a values_list) as the database driver types them, the SQL
    kept as in rows_compiled_once: for a read of a few rows on every request whose values
    are used as values (times as datetimes), not only sent on."""
    with connections[read_alias()].cursor() as cursor:
        cursor.execute(*compiled_once(key, params, queryset))
        return cursor.fetchall()


def instances_compiled_once(
    model: type[Model], key: Hashable, params: Sequence, queryset: Callable[[], QuerySet]
) -> list[Model]:
    """The instances of `queryset()` (a queryset of `model`, every concrete field), the SQL
    kept as in rows_compiled_once and the instances made from the driver's rows as Django
    makes them: each value through its field's converters (a JSON field's text parsed), then
    Model.from_db. For a read of a few rows on every request whose instances are used as
    such. On other databases (the embedded SQLite default) the ORM makes them."""
    alias = read_alias()
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return list(queryset())
    fields = [field.attname for field in model._meta.concrete_fields]
    rows = typed_rows_compiled_once(key, params, lambda: queryset().values_list(*fields))
    converting = _converters_of(model, connection)
    made = []
    for row in rows:
        if converting:
            row = list(row)
            for i, col, converters in converting:
                for convert in converters:
                    row[i] = convert(row[i], col, connection)
        made.append(model.from_db(alias, fields, row))
    return made


def _converters_of(model: type[Model], connection) -> list[tuple[int, object, list]]:
    """(place, column, converters) of each of the model's concrete fields that has any, in
    the order Django's compiler applies them (the backend's, then the field's own)."""
    found = []
    for i, field in enumerate(model._meta.concrete_fields):
        col = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
        if converters:
            found.append((i, col, converters))
    return found


def compiled_once(
    key: Hashable, params: Sequence, queryset: Callable[[], QuerySet]
) -> tuple[str, Sequence]:
    """The SQL kept for `key` with `params`; else what Django compiles now (kept if its
    params are `params`) with Django's own params. For a caller that sends the SQL itself,
    inside a larger statement (accounts.auth: the key's read and its rate counter in one)."""
    cache_key = (connections[read_alias()].vendor, key)
    sql = _compiled.get(cache_key)
    if sql is None:
        sql, compiled = queryset().query.sql_with_params()
        if list(compiled) == list(params):
            _compiled[cache_key] = sql
        params = compiled
    return sql, params


def _run(sql: str, params: Sequence, *, stream: bool = True) -> list[tuple]:
    rows: list[tuple] = []
    connection = connections[read_alias()]
    with connection.cursor() as cursor:

        def read(sql, params, many, context) -> None:
            connection.validate_no_broken_transaction()
            with connection.wrap_database_errors:
                if connection.vendor == "postgresql":
                    for time_type in ("timestamptz", "timestamp"):
                        cursor.cursor.adapters.register_loader(time_type, TextLoader)
                    if stream:
                        rows.extend(cursor.cursor.stream(sql, params, size=ROWS_PER_CHUNK))
                        return
                cursor.cursor.execute(sql, params)
                rows.extend(cursor.cursor.fetchall())

        execute = read
        for wrapper in reversed(connection.execute_wrappers):
            execute = functools.partial(wrapper, execute)
        started = time.monotonic()
        execute(sql, params, False, {"connection": connection, "cursor": cursor})
        if connection.queries_logged:
            connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows
