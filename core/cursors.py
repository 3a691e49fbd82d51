"""Opaque page cursors: a position in a listing, signed, and bound to the filters it was made for.

A cursor is `django.core.signing` over a small JSON object: the sort key of the last row
a page returned, and a fingerprint of the listing's filters. The signature (SECRET_KEY,
SECRET_KEY_FALLBACKS, a salt per listing) makes any edit detectable; the fingerprint makes
a cursor sent with other filters, to another listing or by another account detectable
too. Both are refused, never reinterpreted: a sync client must not silently skip rows.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core import signing


class InvalidCursor(ValueError):
    """A cursor we did not give out, or gave out for another listing or other filters."""


def make_cursor(*, salt: str, position: list, filters: dict[str, Any]) -> str:
    return signing.dumps({"p": position, "f": _fingerprint(filters)}, salt=salt)


def read_cursor(token: str, *, salt: str, filters: dict[str, Any]) -> list:
    """The position a cursor holds; InvalidCursor for anything else."""
    try:
        payload = signing.loads(token, salt=salt)
    except (signing.BadSignature, ValueError) as exc:
        raise InvalidCursor(
            "Not a cursor this listing gave out: it was altered or cut short."
        ) from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("p"), list):
        raise InvalidCursor("Not a cursor this listing gave out.")
    if payload.get("f") != _fingerprint(filters):
        raise InvalidCursor(
            "This cursor belongs to a listing with other filters: send the same filters "
            "as the request it came from."
        )
    return payload["p"]


def _fingerprint(filters: dict[str, Any]) -> str:
    canonical = json.dumps(filters, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
