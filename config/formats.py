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


def iso_z_text(stored: str | None) -> str | None:
    """A timestamp read as text ("2026-11-23 03:00:00.5+00" on PostgreSQL, with the session
    in UTC; "2026-11-23 03:00:00.500000" on SQLite) in the wire format of iso_z()."""
    if stored is None:
        return None
    fraction = stored[20:23]
    if len(stored) < 20 or stored[19] != ".":
        fraction = "000"
    elif not fraction.isdigit():  # fewer than three digits: "…00.5+00"
        fraction = (fraction.split("+", 1)[0].split("-", 1)[0] + "00")[:3]
    return f"{stored[:10]}T{stored[11:19]}.{fraction}Z"
