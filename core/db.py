"""A portable INSERT ... ON CONFLICT DO NOTHING RETURNING, for claiming unique slots."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import AutoField, BigAutoField, Model


def claim(obj: Model, *, unique: tuple[str, ...], where: str = "") -> Any | None:
    """Insert `obj` unless a row with the same `unique` fields exists; return its pk, or None.

    `where` is the condition of a partial unique index (SQL, as in its definition): only
    rows that meet it take the slot.

    On PostgreSQL an insert that meets an uncommitted row with the same key waits for
    that transaction: if it commits we get None (the slot is taken), if it rolls back
    our row goes in. That wait is what makes concurrent duplicates safe.
    """
    meta = obj._meta
    qn = connection.ops.quote_name
    fields = [f for f in meta.local_concrete_fields if not isinstance(f, AutoField | BigAutoField)]
    values = [f.get_db_prep_save(f.pre_save(obj, add=True), connection) for f in fields]
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"ON CONFLICT ({', '.join(qn(meta.get_field(n).column) for n in unique)}) "
        f"{f'WHERE {where} ' if where else ''}DO NOTHING "
        f"RETURNING {qn(meta.pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return None
    (pk,) = row  # the RETURNING's one column
    obj.pk = meta.pk.to_python(pk)
    return obj.pk
