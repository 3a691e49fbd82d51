"""How values look on the wire: UTC timestamps with Z, money as two-place strings."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

CENT = Decimal("0.01")


def iso_z(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def money(value: Decimal | None) -> str | None:
    if value is None:
        return None
    return format(value.quantize(CENT), "f")
