"""`field__any=[...]`: membership in a list sent as ONE parameter on PostgreSQL.

`field__in=[...]` with thousands of values makes Django prepare and the driver quote each
one. `= ANY(%s)` with a Python list sends a single array, but psycopg still builds its text
element by element in Python: ~3 ms for 1000 ids, more than finding their rows. So the list
goes as one text, its values joined by a separator, which PostgreSQL splits
(docs/decisions.md, issue 18); a list whose values hold the separator goes as JSON.
Other databases fall back to IN."""

from __future__ import annotations

import orjson
from django.db.models import CharField, Field, Lookup, TextField
from django.db.models.lookups import In


@Field.register_lookup
class Any(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def get_prep_lookup(self):
        return list(self.rhs)

    def as_sql(self, compiler, connection):
        if connection.vendor != "postgresql":
            return In(self.lhs, self.rhs).as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        field = self.lhs.output_field
        # Text compares with text as it is: a cast to varchar(n) would cut longer values
        # short, and could make them match. Other types (uuid, integers) are cast.
        cast = "" if isinstance(field, CharField | TextField) else f"::{field.db_type(connection)}"
        texts = [str(value) for value in self.rhs]
        if all(t and _SEPARATOR not in t for t in texts):
            # string_to_array of a bound value is folded when the statement is planned, so
            # the planner knows the list and its length, as it would know an array's.
            values = f"string_to_array(%s, E'\\x1f'){cast and cast + '[]'}"
            return f"{lhs} = ANY({values})", [*lhs_params, _SEPARATOR.join(texts)]
        # A value holding the separator, or an empty one: the list goes as JSON instead.
        values = f"ARRAY(SELECT value{cast} FROM jsonb_array_elements_text(%s::jsonb) AS value)"
        return f"{lhs} = ANY({values})", [*lhs_params, orjson.dumps(texts).decode()]


_SEPARATOR = "\x1f"  # ASCII unit separator: rare in text, never in a UUID or a number


__all__ = ["Any"]
