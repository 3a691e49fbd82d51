"""Set-based writes: inserts as one COPY per table on PostgreSQL (bulk_create elsewhere), and
updates of many rows as one UPDATE from arrays (update_rows; bulk_update elsewhere).

The batch pipeline writes thousands of rows per call. Building a Django model instance
per row and letting bulk_create prepare every field costs more than the database work
itself, so the pipeline hands us plain tuples and PostgreSQL gets them through COPY.

The COPY text is made here, not by psycopg's Copy.write_row: write_row looks up a dumper
for every value of every row, which for a 1000-drop batch took ~7 ms against ~1.5 ms for
one f-string per row compiled for the table's columns (docs/decisions.md, "Drops are written
with COPY through a compiled encoder, streamed in chunks").
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from itertools import chain
from typing import Any

import orjson
from django.db import connection, models
from django.db.models import Model
from psycopg.copy import LibpqWriter

# COPY's text format: a backslash, tab, newline or carriage return inside a value is
# written as a backslash escape; NUL cannot be stored in text at all (inputs refuse it).
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_json(value: object) -> str:
    return orjson.dumps(value).decode().translate(_COPY_ESCAPES)


# Most text needs no escape; finding that out by a regex search is ~5x cheaper than
# str.translate, which looks every character up in a dict.
_NEEDS_ESCAPE = re.compile(r"[\\\t\n\r]").search


class _Column:
    """One column's encoder, remembering its last value: a batch repeats many values (its
    business, environment, currency, status, time) on every row."""

    __slots__ = ("encode", "text", "value")

    def __init__(self, encode: Callable[[Any], str]) -> None:
        self.encode = encode
        self.value: object = _Column  # matches no value
        self.text = ""

    def __call__(self, value: Any) -> str:
        if value is not self.value:
            self.value, self.text = value, self.encode(value)
        return self.text


def _escaped(value: str) -> str:
    return value.translate(_COPY_ESCAPES) if _NEEDS_ESCAPE(value) else value


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def insert_rows(
    model: type[Model],
    fields: Sequence[str],
    rows: Sequence[tuple],
) -> None:
    """Insert `rows` (tuples in the order of `fields`) into `model`'s table; JSON columns
    are known from the model."""
    insert_chunks(model, fields, [rows])


def insert_chunks(
    model: type[Model],
    fields: Sequence[str],
    chunks: Iterable[Sequence[tuple]],
) -> int:
    """Insert rows that arrive in chunks (tuples in the order of `fields`); how many.

    On PostgreSQL each chunk is sent as soon as it is made, into one COPY: the server stores
    one chunk while the caller builds the next, so making the rows and storing them overlap
    on two cores instead of taking turns (docs/decisions.md, "Drops are written with COPY
    through a compiled encoder, streamed in chunks"). A chunk builder that raises aborts
    the COPY, and the error is the builder's. No rows, no statement.
    """
    if connection.vendor != "postgresql":
        objects = [model(**dict(zip(fields, row, strict=True))) for c in chunks for row in c]
        if objects:
            model.objects.bulk_create(objects)
        return len(objects)
    chunks = iter(chunks)
    first = next((chunk for chunk in chunks if chunk), None)
    if first is None:
        return 0
    sql, encode = _copy_plan(model, tuple(fields))
    started = time.monotonic()
    count = 0
    # wrap_database_errors: a refused row raises Django's IntegrityError, as any insert does.
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(sql, writer=_SendingWriter(cursor.cursor)) as copy,
    ):
        for chunk in chain([first], chunks):
            if chunk:
                copy.write(encode(chunk))
                count += len(chunk)
    if connection.queries_logged:
        # COPY bypasses Django's cursor wrapper; log it so query counts stay honest.
        connection.queries_log.append(
            {"sql": f"{sql} -- {count} rows", "time": f"{time.monotonic() - started:.3f}"}
        )
    return count


class _SendingWriter(LibpqWriter):
    """psycopg's COPY writer, pushing each chunk towards the server as soon as it is written.

    libpq keeps what is not a multiple of 8 KB in its buffer until more comes, and psycopg
    only waits for the buffer to drain once 1 MB is queued. A non-blocking flush after each
    write sends whatever the socket takes now and never waits: waiting on every chunk
    (psycopg's flush_threshold=0) cost ~1 ms per 1000 drops (bench/ab.py).
    """

    def write(self, data) -> None:
        super().write(data)
        self.connection.pgconn.flush()


@lru_cache(maxsize=64)
def _copy_plan(model: type[Model], fields: tuple[str, ...]) -> tuple[str, Callable]:
    """The COPY statement for these columns and a function that encodes rows for it."""
    meta = model._meta
    qn = connection.ops.quote_name
    columns = [meta.get_field(name) for name in fields]
    sql = f"COPY {qn(meta.db_table)} ({', '.join(qn(f.column) for f in columns)}) FROM STDIN"
    names = [f"v{i}" for i in range(len(columns))]
    encoders: dict[str, Callable[[Any], str]] = {}
    parts = "\\t".join(
        _format(field, name, encoders) for field, name in zip(columns, names, strict=True)
    )
    # One f-string per row, compiled once per (model, fields): the only per-value work left
    # is what each column's type needs. Each call makes its own _Column memories, so
    # threads encoding at once share nothing.
    memories = "".join(f"    _{n} = _Column(_encode_{n})\n" for n in encoders)
    source = (
        f"def encode(rows):\n{memories}"
        f"    return ''.join([f\"{parts}\\n\" for {', '.join(names)}, in rows]).encode()\n"
    )
    scope: dict[str, Any] = {"_Column": _Column, "_NULL": "\\N"}  # 3.11: no \\ in braces
    scope.update({f"_encode_{n}": encoder for n, encoder in encoders.items()})
    exec(source, scope)  # noqa: S102 (the source is built above from the model's fields only)
    return sql, scope["encode"]


def _format(field: models.Field, name: str, encoders: dict[str, Callable]) -> str:
    """The f-string replacement field that writes one value of `field` in COPY text.

    Text, JSON and times go through a _Column of theirs; their encoders go in `encoders`.
    """
    target = field.target_field if field.is_relation else field
    encoder: Callable[[Any], str] | None = None
    if isinstance(target, models.JSONField):
        encoder = copy_json
    elif isinstance(target, models.DateTimeField):
        encoder = _iso
    elif isinstance(target, models.CharField | models.TextField):
        encoder = _escaped
    if encoder is not None:
        encoders[name] = encoder
        expression = f"_{name}({name})"
    elif isinstance(target, models.BooleanField):
        expression = f"('t' if {name} else 'f')"
    elif isinstance(target, models.FloatField):
        expression = f"repr({name})"
    else:  # UUIDs (object or text), integers, Decimals: their str() is COPY's input form
        expression = name
    if field.null:
        expression = f"(_NULL if {name} is None else {expression})"
    return "{" + expression + "}"


def update_rows(model: type[Model], fields: tuple[str, ...], rows: Sequence[tuple]) -> int:
    """Set `fields` of many rows, each (pk, *values), in one statement; how many rows.

    PostgreSQL gets one UPDATE … FROM unnest(one array per column): Django's bulk_update
    builds a CASE per field with a WHEN per row, whose making cost ~1.6 ms a row (500
    orders' 2,750 drops: 4.4 s, bench/dispatch.py). Elsewhere bulk_update.
    """
    if not rows:
        return 0
    if connection.vendor != "postgresql":
        objects = [model(pk=pk, **dict(zip(fields, values, strict=True))) for pk, *values in rows]
        return model.objects.bulk_update(objects, fields)
    meta = model._meta
    columns = [meta.pk, *(meta.get_field(name) for name in fields)]
    names = [field.column for field in columns]
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in columns)
    assignments = ", ".join(f'"{name}" = v."{name}"' for name in names[1:])
    key = names[0]
    aliases = ", ".join(f'"{name}"' for name in names)
    sql = (
        f'UPDATE "{meta.db_table}" AS t SET {assignments} '
        f"FROM unnest({arrays}) AS v({aliases}) "
        f'WHERE t."{key}" = v."{key}"'
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(column) for column in zip(*rows, strict=True)])
        return cursor.rowcount
