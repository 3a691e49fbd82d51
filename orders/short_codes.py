"""A drop's short code: what its label's barcode and QR code carry and a courier scans or
types (docs/contract.md §24). Random, 12 characters from [0-9A-Z], unique per environment.

Nothing is looked up to make one: the space is large enough that a code already taken is
astronomically rare, and the unique index `drop_short_code_once` (short_code, environment)
is the guard; a batch that meets it draws its codes afresh (orders.services).
"""

from __future__ import annotations

from base64 import b32encode
from secrets import token_bytes

from django.db.models import CharField, Func

SHORT_CODE_LENGTH = 12
# What the API promises of one (the OpenAPI descriptions say it with these).
SHORT_CODE_PATTERN = "^[0-9A-Z]{8,12}$"
SHORT_CODE_HELP = (
    "The drop's short code: 8 to 12 characters from 0-9 and A-Z, unique in its environment. "
    "Its label (GET /orders/{drop_id}/label.pdf) carries it as text, as a Code 128 barcode "
    "and as a QR code."
)
# The unique index that guards them (orders.models.Drop).
SHORT_CODE_UNIQUE = "drop_short_code_once"
# Two codes of base32 (A-Z, 2-7: no 0 or 1 to read as O or I) from 15 random bytes: 60 bits
# each, so among 100 million drops of one environment a repeat has a chance under 1 in 200.
_BYTES_PER_PAIR = 15


def new_short_codes(count: int) -> list[str]:
    """`count` fresh random codes: one call to the system's random source for all of them."""
    text = b32encode(token_bytes(_BYTES_PER_PAIR * ((count + 1) // 2))).decode()
    size = SHORT_CODE_LENGTH
    return [text[i : i + size] for i in range(0, size * count, size)]


class NewShortCode(Func):
    """The database's own short code, the column's default: for a drop written without one
    (the batch always sends its own) and for the drops that existed before codes did.

    12 upper-case hex digits (48 random bits): a subset of the codes' alphabet that both
    databases make without an extension."""

    output_field = CharField(max_length=SHORT_CODE_LENGTH)
    arity = 0

    def as_postgresql(self, compiler, connection, **extra):
        # gen_random_uuid() is built in since PostgreSQL 13; no extension needed.
        template = "upper(substr(md5(gen_random_uuid()::text), 1, 12))"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="upper(hex(randomblob(6)))", **extra)
