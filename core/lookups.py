"""`field__any=[...]`: membership in a list sent as ONE parameter on PostgreSQL.

`field__in=[...]` with thousands of values makes Django prepare and the driver quote each
one. `= ANY(%s)` with a Python list sends a single array, but psycopg still builds its text
element by element in Python: ~3 ms for 1000 ids, more than finding their rows. So the list
goes as one text, its values joined by a separator, which PostgreSQL splits
(docs/decisions.md, "Hot statements are prepared on their connection"); a list whose values
hold the separator goes as JSON.
Other databases fall back to IN.

`field__among=(...)`: the opposite, for a fixed set of the code's own constants: written
into the SQL, so a partial index whose predicate names them serves a prepared statement."""

from __future__ import annotations

import re

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
        form, values = any_values(self.rhs)
        if form == "one":
            # One value is compared as one: a prepared statement's generic plan then costs
            # what a plan for the value would, so the server keeps it instead of planning
            # every call afresh (a list's length is unknown to a generic plan, which prices
            # it as ten: docs/decisions.md, "Hot statements are prepared on their
            # connection").
            return f"{lhs} = %s{cast}", [*lhs_params, values]
        if form == "text":
            # string_to_array of a bound value is folded when the statement is planned, so
            # the planner knows the list and its length, as it would know an array's.
            listed = f"string_to_array(%s, E'\\x1f'){cast and cast + '[]'}"
        else:  # a value holding the separator, or an empty one: the list goes as JSON
            listed = f"ARRAY(SELECT value{cast} FROM jsonb_array_elements_text(%s::jsonb) AS value)"
        return f"{lhs} = ANY({listed})", [*lhs_params, values]


@Field.register_lookup
class Among(Lookup):
    """`field__among=(A, B)`: membership in a fixed set of the code's own constants (statuses,
    kinds), written into the SQL as literals, not sent as parameters.

    A partial index's predicate (`WHERE status IN ('PENDING', …)`) can only be proven from
    literals. A statement prepared on its connection (config/settings.py: prepare_threshold)
    may be run with a generic plan, planned once for any parameters: with the constants as
    parameters, that plan cannot use the partial index and reads the whole table
    (docs/decisions.md, "Hot statements are prepared on their connection"). Only words of
    letters, digits and underscores are accepted, so nothing from outside can reach the SQL
    this way."""

    lookup_name = "among"
    prepare_rhs = False

    def get_prep_lookup(self):
        values = [str(value) for value in self.rhs]
        if not values or not all(_WORD.fullmatch(value) for value in values):
            raise ValueError(f"__among takes constant words, not {self.rhs!r}")
        return values

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        literals = ", ".join(f"'{value}'" for value in self.rhs)
        return f"{lhs} IN ({literals})", lhs_params


_WORD = re.compile(r"[A-Za-z0-9_]+")


def any_values(values) -> tuple[str, str]:
    """How field__any sends `values` on PostgreSQL: ("one", the value) for a single one,
    ("text", the values joined by the separator), or, when a value holds the separator or
    is empty, ("json", a JSON array): the one parameter, and the form that decides its SQL
    (core.reads.rows_compiled_once)."""
    texts = list(map(str, values))
    if len(texts) == 1:
        return "one", texts[0]
    joined = _SEPARATOR.join(texts)
    if all(texts) and joined.count(_SEPARATOR) == len(texts) - 1:
        return "text", joined
    return "json", orjson.dumps(texts).decode()


_SEPARATOR = "\x1f"  # ASCII unit separator: rare in text, never in a UUID or a number


__all__ = ["Among", "Any", "any_values"]
