"""How values look on the wire: UTC timestamps with Z, money as two-place strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

CENT = Decimal("0.01")


def iso_z(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is not UTC:  # most are UTC already: no conversion for them
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" -> "Z"


class WireTimes:
    """Times read as the database's text (core.functions.TimeText) in iso_z's form, each
    distinct text parsed once: for one answer, whose rows share a handful of times."""

    __slots__ = ("texts",)

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def iso_z(self, stored: str) -> str:
        text = self.texts.get(stored)
        if text is None:
            text = self.texts[stored] = iso_z(moment_of(stored))
        return text

    def each(self, *stored: str | None) -> list[str | None]:
        """iso_z's form of each of these times, None where there is none: all of a row's
        times turned at once."""
        return [None if text is None else self.iso_z(text) for text in stored]


def moment_of(stored: str) -> datetime:
    """A time as the database's text (an offset on PostgreSQL, none on SQLite: UTC)."""
    moment = datetime.fromisoformat(stored)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def money(value: Decimal | None) -> str | None:
    if value is None:
        return None
    return format(value.quantize(CENT), "f")


class MoneyTexts(dict):
    """money() of each amount met so far: a batch's thousand prices are a few dozen
    amounts, and a dict lookup costs a third of formatting one (docs/decisions.md, "The
    answer is built once, stored compressed with lz4, and replayed as bytes").
    For amounts of at least zero: -0 and 0 are one key."""

    def __missing__(self, value: Decimal) -> str:
        text = self[value] = format(value.quantize(CENT), "f")
        return text


def zone_label(local: datetime) -> str:
    """The zone's own abbreviation (CET, ICT) when it has one, else its UTC offset (UTC+7)."""
    name = local.tzname() or ""
    if name[:1].isalpha():
        return name
    offset = local.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    hours, rest = divmod(minutes, 60)
    return f"UTC{sign}{hours}" + (f":{rest:02d}" if rest else "")
