"""Timestamps read through psycopg's C loader, not Django's Python one.

Django registers its own loader for `timestamptz` on every PostgreSQL connection (a subclass
of psycopg's pure-Python loader that replaces the result's tzinfo with the connection's), so
every timestamp the ORM reads is parsed in Python: ~13 µs each, 0.25 ms for a page of 20
drops' keys and a few hundredths of every call's key read (docs/decisions.md, "Timestamps
are parsed by psycopg's C loader").
With USE_TZ the connection's time zone is UTC, and so is the session's (Django sets it), so
psycopg's C loader gives the same datetimes, `tzinfo=datetime.timezone.utc`, ~12 µs sooner.
The loader keeps Django's `timezone` attribute, which Django compares with its own before
each cursor (else it would register its loader again on the cursor).
"""

from __future__ import annotations

from datetime import UTC, datetime

from psycopg._cmodule import _psycopg
from psycopg.adapt import Loader


class UtcTimestamptzLoader(Loader):
    """Django's `timezone` attribute, psycopg's C parsing (its class cannot be subclassed)."""

    timezone = UTC

    def __init__(self, oid: int, context=None) -> None:
        super().__init__(oid, context)
        self._parse = _psycopg.TimestamptzLoader(oid, context).load

    def load(self, data) -> datetime:
        return self._parse(data)


def use_c_timestamps(sender, connection, **kwargs) -> None:
    """On each new PostgreSQL connection whose time zone is UTC (USE_TZ's), in place of
    Django's loader; anything else keeps Django's."""
    if connection.vendor != "postgresql" or _psycopg is None or connection.timezone is not UTC:
        return
    connection.connection.adapters.register_loader("timestamptz", UtcTimestamptzLoader)
