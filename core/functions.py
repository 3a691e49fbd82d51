"""Database functions that give values already in their wire format.

Reading thousands of timestamps and UUIDs as Python objects only to format them again
costs more than the query that fetches them; these let the database hand over the text.
Both have PostgreSQL and SQLite forms, so the same query serves tests and `make run`.
"""

from __future__ import annotations

from django.db.models import Func, Sum, TextField


class IsoZ(Func):
    """A timestamp as ISO 8601 in UTC with milliseconds and Z, like core.formats.iso_z."""

    output_field = TextField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra):
        # MS truncates, as Python's isoformat(timespec="milliseconds") does.
        template = (
            "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        )
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # Django stores UTC there; substr keeps the first three fraction digits (truncation).
        template = (
            "(substr(%(expressions)s, 1, 10) || 'T' || substr(%(expressions)s, 12, 8) || '.' || "
            "substr(substr(%(expressions)s, 21, 3) || '000', 1, 3) || 'Z')"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


class UuidText(Func):
    """A UUID as its canonical 36-character text."""

    output_field = TextField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="(%(expressions)s)::text", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # Django keeps UUIDs there as 32 hex digits without dashes.
        parts = " || '-' || ".join(
            f"substr(%(expressions)s, {start}, {length})"
            for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
        )
        return self.as_sql(compiler, connection, template=f"({parts})", **extra)


class MoneyText(Func):
    """A money amount (two decimals) as its wire text, like core.formats.money."""

    output_field = TextField()
    arity = 1

    def as_postgresql(self, compiler, connection, **extra):
        # A numeric(12, 2) prints with exactly its two decimals.
        return self.as_sql(compiler, connection, template="(%(expressions)s)::text", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # Stored as a REAL there. "%%%%" survives this template's formatting as "%%", which
        # the SQLite backend turns into the "%" of printf's format.
        # printf() prints NULL as 0.00: a missing amount (a drop without COD) stays NULL.
        template = "printf('%%%%.2f', %(expressions)s)"
        sql, params = self.as_sql(compiler, connection, template=template, **extra)
        value, value_params = compiler.compile(self.source_expressions[0])
        return f"CASE WHEN {value} IS NULL THEN NULL ELSE {sql} END", (*value_params, *params)


class TimeText(Func):
    """A timestamp as the database writes it, for core.reads.driver_rows, which reads it as
    text: on PostgreSQL `2026-11-23 08:55:47.848225+00` (ISO DateStyle, which psycopg needs
    anyway, and the connection's UTC), on SQLite as stored. core.formats.WireTimes turns each
    distinct value into iso_z's form once: the drops of a batch share theirs, and the
    server's own output costs a third of to_char's (docs/decisions.md, "Tracking entries are
    built from the driver's tuples and the server's text")."""

    output_field = TextField()
    arity = 1
    template = "%(expressions)s"

    def as_sqlite(self, compiler, connection, **extra):
        # A plain column would meet Django's converter for its declared type (a datetime).
        return self.as_sql(compiler, connection, template="CAST(%(expressions)s AS TEXT)", **extra)


class MoneySum(Sum):
    """The sum of money amounts, exact on both databases: SQLite stores a decimal as a REAL
    and sums it as one (0.00999999999999979 for 0.01), so its sum is rounded back to cents
    there; PostgreSQL's numeric sum is exact already."""

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = self.as_sql(compiler, connection, **extra)
        return f"ROUND({sql}, 2)", params
