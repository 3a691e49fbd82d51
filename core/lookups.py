"""`field__any=[...]`: membership in a list sent as ONE array parameter on PostgreSQL.

`field__in=[...]` with thousands of values makes Django prepare and the driver quote each
one; `= ANY(%s)` sends a single array. Other databases fall back to IN.
"""

from __future__ import annotations

from django.db.models import Field, Lookup
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
        return f"{lhs} = ANY(%s)", [*lhs_params, self.rhs]


__all__ = ["Any"]
