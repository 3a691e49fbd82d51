"""The gazetteer's places loaded in bulk from a CSV file: read and checked row by row
(a preview, no write), then saved in one transaction with set-based writes.

The columns and their rules are in docs/operator.md ("Loading places from a CSV file").
A row whose name and city match a place already in the list replaces that place: a
corrected file can be loaded again.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection, transaction

from core.csv_files import CsvTable, CsvUnreadable, read_table
from core.writes import insert_rows
from geo.geocoders import forget_cached_results, normalise
from geo.models import Place

ALIAS_SEPARATOR = "|"
REQUIRED_COLUMNS = ("name", "lat", "long")
# Other spellings of the columns, as spreadsheets and other tools write them.
COLUMN_NAMES = {
    "name": "name",
    "aliases": "aliases",
    "alias": "aliases",
    "city": "city",
    "lat": "lat",
    "latitude": "lat",
    "long": "long",
    "lon": "long",
    "lng": "long",
    "longitude": "long",
}
NAME_LENGTH = Place._meta.get_field("name").max_length
CITY_LENGTH = Place._meta.get_field("city").max_length
# A number as a spreadsheet writes it with a `.` decimal point: no exponent, no NaN.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")


@dataclass(slots=True)
class PlaceRow:
    """One row of the file: the place it describes, or what is wrong with it."""

    row: int  # as the spreadsheet numbers it: the header is row 1
    name: str
    aliases: list[str]
    city: str
    lat: float | None
    long: float | None
    problems: list[str] = field(default_factory=list)
    replaces: list[tuple[float, float]] = field(default_factory=list)  # pins of the old places

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def key(self) -> tuple[str, str]:
        """What makes two places the same for the gazetteer: the name and the city."""
        return normalise(self.name), normalise(self.city)


@dataclass(slots=True)
class PlacesFile:
    """A file read and checked: every row, the columns it ignored."""

    rows: list[PlaceRow]
    unknown_columns: list[str]

    @property
    def valid(self) -> list[PlaceRow]:
        return [row for row in self.rows if row.valid]

    @property
    def invalid(self) -> list[PlaceRow]:
        return [row for row in self.rows if not row.valid]

    @property
    def replacing(self) -> int:
        return sum(1 for row in self.valid if row.replaces)


def read_places(data: bytes) -> PlacesFile:
    """Every row of the file with its problems, and what each valid row would replace.

    One query: the places already in the list. Raises core.csv_files.CsvUnreadable.
    """
    places_file = read_rows(data)
    _mark_replaced(places_file, _places_by_key())
    return places_file


@dataclass(frozen=True, slots=True)
class LoadedPlaces:
    added: list[Place]  # as saved, with their ids
    replaced: int  # places of the list that rows replaced
    left_out: int  # rows with problems, not saved


@transaction.atomic
def load_places(*, data: bytes) -> LoadedPlaces:
    """Save every valid row of the file in one transaction: a place with the same name and
    city is replaced. Set-based: a fixed number of statements whatever the row count."""
    if connection.vendor == "postgresql":
        # Two loads at once would both see a name as new and both add it; edits wait too.
        # Reads (the gazetteer) are not blocked.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE geo_place IN SHARE ROW EXCLUSIVE MODE")
    places_file = read_rows(data)
    existing = _places_by_key()
    _mark_replaced(places_file, existing)
    valid = places_file.valid
    replaced_ids = [pk for row in valid for pk, _ in existing.get(row.key, [])]
    if replaced_ids:
        Place.objects.filter(pk__any=replaced_ids).delete()
    # Ids only grow and the lock keeps other writers out: the new places are those past it.
    last_id = max((pk for same in existing.values() for pk, _ in same), default=0)
    insert_rows(
        Place,
        ("name", "aliases", "city", "lat", "long"),
        [(r.name, "\n".join(r.aliases), r.city, r.lat, r.long) for r in valid],
    )
    added = list(Place.objects.filter(pk__gt=last_id).order_by("pk")) if valid else []
    if valid:
        forget_cached_results()  # cached "not found" answers may now be found
    return LoadedPlaces(added=added, replaced=len(replaced_ids), left_out=len(places_file.invalid))


def _places_by_key() -> dict[tuple[str, str], list[tuple[int, tuple[float, float]]]]:
    """The list's places by (name, city) as the gazetteer compares them: id and pin."""
    found: dict[tuple[str, str], list[tuple[int, tuple[float, float]]]] = defaultdict(list)
    for pk, name, city, lat, long in Place.objects.values_list("pk", "name", "city", "lat", "long"):
        found[normalise(name), normalise(city)].append((pk, (lat, long)))
    return found


def _mark_replaced(places_file: PlacesFile, existing: dict) -> None:
    for row in places_file.valid:
        row.replaces = [pin for _, pin in existing.get(row.key, [])]


# --- Reading the file: no query ------------------------------------------------------------


def read_rows(data: bytes) -> PlacesFile:
    """The file's rows, each checked on its own and against the others (duplicates)."""
    table = read_table(
        data, names=COLUMN_NAMES, required=REQUIRED_COLUMNS, header_needed=_HEADER_NEEDED
    )
    rows = [_row(number, record, table) for number, record in table.rows()]
    if not rows:
        raise CsvUnreadable("The file has a header but no places under it.")
    _mark_duplicates(rows)
    return PlacesFile(rows=rows, unknown_columns=table.unknown)


_HEADER_NEEDED = (
    "The first row must be the header: the column names name, aliases, lat, long "
    "(and city, if you like)."
)


def _row(number: int, record: list[str], table: CsvTable) -> PlaceRow:
    cells = table.cells(record)

    def cell(name: str) -> str:
        return cells.get(name, "")

    name, city = " ".join(cell("name").split()), " ".join(cell("city").split())
    overflow = table.overflow(record)
    problems: list[str] = [overflow] if overflow else []
    if not name:
        problems.append("The name is empty.")
    elif len(name) > NAME_LENGTH:
        problems.append(f"The name is longer than {NAME_LENGTH} characters.")
    if len(city) > CITY_LENGTH:
        problems.append(f"The city is longer than {CITY_LENGTH} characters.")
    lat = _coordinate(cell("lat"), "lat", 90.0, problems)
    long = _coordinate(cell("long"), "long", 180.0, problems)
    if lat == 0.0 and long == 0.0:
        problems.append("lat 0 and long 0 is not a place: were the cells empty in the sheet?")
    return PlaceRow(
        row=number,
        name=name,
        aliases=_aliases(cell("aliases"), name),
        city=city,
        lat=lat,
        long=long,
        problems=problems,
    )


def _coordinate(text: str, column: str, limit: float, problems: list[str]) -> float | None:
    if not text:
        problems.append(f"{column} is empty.")
        return None
    if not _NUMBER.fullmatch(text):
        problems.append(
            f"{column} {text!r} is not a number: write it with a dot for decimals, e.g. 11.5765."
        )
        return None
    value = float(text)
    if not math.isfinite(value) or abs(value) > limit:
        problems.append(
            f"{column} {text} is out of range: it must be from -{limit:g} to {limit:g}."
        )
        return None
    return value


def _aliases(text: str, name: str) -> list[str]:
    """The other names, each once and none the same as the name (as the gazetteer compares)."""
    seen = {normalise(name)}
    aliases = []
    for alias in (" ".join(part.split()) for part in text.split(ALIAS_SEPARATOR)):
        if normalise(alias) and normalise(alias) not in seen:
            seen.add(normalise(alias))
            aliases.append(alias)
    return aliases


def _mark_duplicates(rows: list[PlaceRow]) -> None:
    """Rows naming the same place (name and city, as the gazetteer compares them) are all
    refused: which one is right is the operator's call, not ours."""
    by_key: dict[tuple[str, str], list[PlaceRow]] = defaultdict(list)
    for row in rows:
        if row.name:
            by_key[row.key].append(row)
    for same in by_key.values():
        if len(same) > 1:
            numbers = ", ".join(str(row.row) for row in same[:-1]) + f" and {same[-1].row}"
            for row in same:
                row.problems.append(
                    f"The name {row.name!r} (city {row.city or 'none'}) is on rows {numbers}: "
                    "keep one."
                )
