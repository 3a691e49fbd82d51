"""Set-based inserts: one COPY per table on PostgreSQL, bulk_create elsewhere.

The batch pipeline writes thousands of rows per call. Building a Django model instance
per row and letting bulk_create prepare every field costs more than the database work
itself, so the pipeline hands us plain tuples and PostgreSQL gets them through COPY.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.db import connection
from django.db.models import Model
from psycopg.types.json import Jsonb


def insert_rows(
    model: type[Model],
    fields: Sequence[str],
    rows: Sequence[tuple],
    json_fields: Sequence[str] = (),
) -> None:
    """Insert `rows` (tuples in the order of `fields`) into `model`'s table."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create([model(**dict(zip(fields, row, strict=True))) for row in rows])
        return
    meta = model._meta
    qn = connection.ops.quote_name
    columns = ", ".join(qn(meta.get_field(name).column) for name in fields)
    sql = f"COPY {qn(meta.db_table)} ({columns}) FROM STDIN"
    json_at = [fields.index(name) for name in json_fields]
    started = time.monotonic()
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            if json_at:
                row = list(row)
                for i in json_at:
                    row[i] = None if row[i] is None else Jsonb(row[i])
            copy.write_row(row)
    if connection.queries_logged:
        # COPY bypasses Django's cursor wrapper; log it so query counts stay honest.
        connection.queries_log.append(
            {"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - started:.3f}"}
        )
