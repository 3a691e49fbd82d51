"""Orders from a spreadsheet: a CSV file read into the body of POST /orders/bulk, and the
bulk pipeline's validation paths (`orders[0].dropoff[2].dropoff.phone`) mapped back to the
file's rows and columns.

No request here, and no query but parse_batch's one read of the active vehicle types:
dashboard/uploads.py sends the body through the same
`parse_batch` → `create_batch` pipeline as the API, so every rule, price and idempotency
guarantee is the API's. The columns and choices are documented in docs/csv.md. Problems are
said in the page's language, the parser's English messages mapped to its words where known.
"""

from __future__ import annotations

import hashlib
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Environment
from core.api import ApiError
from core.csv_files import CsvUnreadable, read_table
from core.shapes import REQUIRED
from dashboard.batches import drop_body, present
from orders.inputs import BatchIn, parse_batch
from orders.results import ResultEntry

# Problems listed on the page; past it they are only counted.
MAX_PROBLEMS_SHOWN = 100
ROWS_NAMED = 5  # in one problem of a pickup group; the others are counted

# Every column that is read, in the template's order (docs/sample-orders.csv).
COLUMNS = (
    "client_order_id",
    "external_waybill",
    "recipient_name",
    "recipient_phone",
    "dropoff_lat",
    "dropoff_long",
    "dropoff_address",
    "dropoff_city",
    "pickup_name",
    "pickup_phone",
    "pickup_lat",
    "pickup_long",
    "pickup_address",
    "pickup_scheduled_at",
    "dropoff_pin",
    "sandbox_scenario",
    "dropoff_window_start",
    "dropoff_window_end",
    "notes",
    "undeliverable_action",
    # docs/contract.md §18: the pickup group's vehicle (rows with the same pickup and vehicle
    # are one group), the parcel, the cash to collect.
    "vehicle",
    "parcel_size",
    "parcel_weight_kg",
    "parcel_description",
    "parcel_value",
    "cod_amount",
    # The recipient's email, for notifications (docs/notifications.md).
    "recipient_email",
    # The recipient's page and messages: en or km; empty, the business's setting (§26).
    "recipient_language",
)
REQUIRED_COLUMNS = (
    "client_order_id",
    "recipient_name",
    "recipient_phone",
    "pickup_name",
    "pickup_phone",
)
# Where to go: both coordinates, or an address (per side), as in the API.
LOCATIONS = (
    ("dropoff_lat", "dropoff_long", "dropoff_address", gettext_lazy("where to deliver")),
    ("pickup_lat", "pickup_long", "pickup_address", gettext_lazy("where to pick up")),
)
YES = frozenset({"yes", "y", "true", "1"})
NO = frozenset({"no", "n", "false", "0"})

# Fixed for good: changing it would make a file sent before the change a new batch.
UPLOAD_NAMESPACE = uuid.UUID("38bc9fa4-6085-4641-bb28-e3b0b115d4e9")

# A number as a spreadsheet writes it with a `.` decimal point: no exponent, no NaN.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_MORE = re.compile(r"… and (\d+) more")
_BULK_PATH = re.compile(
    r"orders\[(?P<group>\d+)\](?:\.dropoff\[(?P<drop>\d+)\])?(?:\.(?P<rest>.+))?"
)

# The bulk body's fields, back to the columns they were read from.
_DROP_FIELDS = {
    "client_order_id": "client_order_id",
    "external_waybill": "external_waybill",
    "dropoff_verification": "dropoff_pin",
    "sandbox_scenario": "sandbox_scenario",
    "dropoff_window": "dropoff_window_start",
    "dropoff_window.start": "dropoff_window_start",
    "dropoff_window.end": "dropoff_window_end",
    "notes": "notes",
    "undeliverable_action": "undeliverable_action",
    "parcel": "parcel_size",
    "parcel.size": "parcel_size",
    "parcel.weight_kg": "parcel_weight_kg",
    "parcel.description": "parcel_description",
    "parcel.value": "parcel_value",
    "cod": "cod_amount",
    "recipient_language": "recipient_language",
    "dropoff.name": "recipient_name",
    "dropoff.phone": "recipient_phone",
    "dropoff.email": "recipient_email",
    "dropoff.lat": "dropoff_lat",
    "dropoff.long": "dropoff_long",
    "dropoff.address": "dropoff_address",
    "dropoff.address.complete_address": "dropoff_address",
    "dropoff.address.city": "dropoff_city",
}
_PICKUP_FIELDS = {
    "pickup.name": "pickup_name",
    "pickup.phone": "pickup_phone",
    "pickup.lat": "pickup_lat",
    "pickup.long": "pickup_long",
    "pickup.address": "pickup_address",
    "pickup.address.complete_address": "pickup_address",
    "pickup.pickup_scheduled_at": "pickup_scheduled_at",
    "vehicle": "vehicle",
}
# The bulk parser's English messages (the API's, which stay English: docs/api.md) that a
# file's cells can cause, in the page's language. The English is the API's own words (a
# missing field said in a spreadsheet's); a message not listed is shown as the API wrote it,
# still at its row and column (docs/decisions.md, "Languages").
_API_WORDING: tuple[tuple[re.Pattern[str], Promise], ...] = tuple(
    (re.compile(pattern), words)
    for pattern, words in [
        (re.escape(REQUIRED), gettext_lazy("Required, but the cell is empty.")),
        (
            r"Must be at most (?P<max>\d+) characters\.",
            gettext_lazy("Must be at most %(max)s characters."),
        ),
        (r"Must be one of (?P<values>.+)\.", gettext_lazy("Must be one of %(values)s.")),
        (
            r"Must be an ISO 8601 timestamp with a time zone\.",
            gettext_lazy("Must be an ISO 8601 timestamp with a time zone."),
        ),
        (
            r"Must carry a time zone, e\.g\. (?P<example>\S+)\.",
            gettext_lazy("Must carry a time zone, e.g. %(example)s."),
        ),
        (
            r"Must be a timestamp between the years (?P<first>\d+) and (?P<last>\d+)\.",
            gettext_lazy("Must be a timestamp between the years %(first)s and %(last)s."),
        ),
        (
            r"Must be a number of kg above 0 and at most (?P<max>[\d.]+) \(kept to the gram\)\.",
            gettext_lazy("Must be a number of kg above 0 and at most %(max)s (kept to the gram)."),
        ),
        (
            r"Must be a string of at most (?P<max>\d+) characters without NUL\.",
            gettext_lazy("Must be a string of at most %(max)s characters without NUL."),
        ),
        (
            r"At most (?P<max>\d+) characters in all; got (?P<got>\d+)\.",
            gettext_lazy("At most %(max)s characters in all; got %(got)s."),
        ),
        (
            r"Must be a vehicle type's code, such as (?P<example>\w+)\.",
            gettext_lazy("Must be a vehicle type's code, such as %(example)s."),
        ),
        (
            r'Must be a money string such as "(?P<example>[\d.]+)"\.',
            gettext_lazy('Must be a money string such as "%(example)s".'),
        ),
        (
            r"Must be one email address, (?P<max>\d+) characters at most\.",
            gettext_lazy("Must be one email address, %(max)s characters at most."),
        ),
    ]
)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing to fix, where it is: spreadsheet rows (header = row 1) and a column."""

    rows: tuple[int, ...]
    column: str | None
    message: str

    def __str__(self) -> str:
        # Said in the language of the page that shows it; the column keeps its header's name.
        where = [_rows_text(self.rows)] if self.rows else []
        if self.column:
            where.append(_("column %(column)s") % {"column": self.column})
        if not where:
            return self.message
        return _("%(where)s: %(message)s") % {"where": ", ".join(where), "message": self.message}

    @property
    def sort_key(self) -> tuple[int, int]:
        row = self.rows[0] if self.rows else sys.maxsize
        column = COLUMNS.index(self.column) if self.column in COLUMNS else len(COLUMNS)
        return row, column


class RowsInvalid(Exception):
    """Rows that break a request-level rule of the bulk body: nothing was sent."""

    def __init__(self, problems: list[Problem], uncounted: int = 0) -> None:
        super().__init__(f"{len(problems) + uncounted} problems")
        self.problems = sorted(problems, key=lambda problem: problem.sort_key)
        self.uncounted = uncounted  # found by parse_batch past the details it spells out

    @property
    def shown(self) -> list[Problem]:
        return self.problems[:MAX_PROBLEMS_SHOWN]

    @property
    def more(self) -> int:
        return max(0, len(self.problems) - MAX_PROBLEMS_SHOWN) + self.uncounted

    @property
    def total(self) -> int:
        return len(self.problems) + self.uncounted


@dataclass(frozen=True, slots=True)
class OrdersFile:
    """A CSV file read: the bulk body, and where each of its drops came from."""

    body: dict[str, Any]
    group_rows: list[list[int]]  # the rows of each pickup group, in body order
    unknown_columns: list[str]  # as written in the header; ignored
    problems: list[Problem]  # cells that could not become a body field (numbers, yes/no)
    idempotency_key: uuid.UUID

    @property
    def client_batch_id(self) -> str:
        return self.body["client_batch_id"]

    @property
    def drop_rows(self) -> list[int]:
        """The row of each drop in submission order (groups in order, drops within)."""
        return [row for rows in self.group_rows for row in rows]


@dataclass(frozen=True, slots=True)
class RowResult:
    """A row of the file with its drop's entry of the bulk answer."""

    row: int
    entry: ResultEntry


def file_digest(data: bytes, *, business_id: Any, environment: str) -> str:
    """SHA-256 of (business, environment, file bytes): the same file in another account
    or environment is another batch."""
    return hashlib.sha256(f"{business_id}\n{environment}\n".encode() + data).hexdigest()


def upload_identity(data: bytes, *, business_id: Any, environment: str) -> tuple[uuid.UUID, str]:
    """The Idempotency-Key and client_batch_id of an upload: both follow from its bytes."""
    digest = file_digest(data, business_id=business_id, environment=environment)
    return uuid.uuid5(UPLOAD_NAMESPACE, digest), f"csv-{digest[:20]}"


def read_orders(data: bytes, *, business_id: Any, environment: str) -> OrdersFile:
    """The file's rows as one bulk body; raise CsvUnreadable for a file that is not usable.

    Cell problems that name a row (a number with a comma) are collected in `problems`,
    for `checked_batch` to report with the pipeline's own.
    """
    table = read_table(
        data,
        names={column: column for column in COLUMNS},
        required=REQUIRED_COLUMNS,
        header_needed=_header_needed(),
        column_rules=_location_problems,
    )
    key, client_batch_id = upload_identity(data, business_id=business_id, environment=environment)
    groups: dict[bytes, int] = {}
    body_groups: list[dict[str, Any]] = []
    group_rows: list[list[int]] = []
    problems: list[Problem] = []
    count = 0
    for row, record in table.rows():
        count += 1
        if count > settings.MAX_DROPS_PER_BATCH:
            continue  # only counted, for the message below
        if overflow := table.overflow(record):
            problems.append(Problem((row,), None, overflow))
        cells = _Cells(row, table.cells(record), problems)
        pickup, vehicle = cells.pickup(), cells.text("vehicle")
        group_key = orjson.dumps([pickup, vehicle], option=orjson.OPT_SORT_KEYS)
        if group_key not in groups:
            groups[group_key] = len(body_groups)
            body_groups.append(present({"pickup": pickup, "vehicle": vehicle, "dropoff": []}))
            group_rows.append([])
        index = groups[group_key]
        body_groups[index]["dropoff"].append(cells.drop())
        group_rows[index].append(row)
    limit = settings.MAX_DROPS_PER_BATCH
    if count > limit:
        raise CsvUnreadable(
            _(
                "The file has %(count)s orders; at most %(limit)s can be sent at once: "
                "split it into smaller files."
            )
            % {"count": count, "limit": limit}
        )
    if count == 0:
        raise CsvUnreadable(_("The file has a header but no orders under it."))
    return OrdersFile(
        body={"client_batch_id": client_batch_id, "orders": body_groups},
        group_rows=group_rows,
        unknown_columns=table.unknown,
        problems=problems,
        idempotency_key=key,
    )


def checked_batch(orders_file: OrdersFile, *, environment: str) -> BatchIn:
    """The body through orders.inputs.parse_batch (every request-level rule of the API);
    raise RowsInvalid naming the rows and columns of every problem."""
    problems = list(orders_file.problems)
    uncounted = 0
    batch = None
    try:
        batch = parse_batch(orders_file.body)
    except ApiError as error:
        for detail in error.details:
            if more := _MORE.fullmatch(detail["message"]):
                uncounted += int(more[1])  # core.api.bounded_details' last entry
            else:
                problems.append(problem_at(detail["field"], detail["message"], orders_file))
    if environment == Environment.LIVE:
        # The API's rule for live keys (orders.inputs.batch_of), whatever else is wrong.
        message = _("sandbox_scenario is for the sandbox only: leave it empty for live orders.")
        problems += [
            Problem((row,), "sandbox_scenario", message)
            for row, drop in zip(orders_file.drop_rows, _drops_of(orders_file.body), strict=True)
            if "sandbox_scenario" in drop
        ]
    if problems or uncounted or batch is None:
        raise RowsInvalid(problems, uncounted)
    return batch


def _drops_of(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    return (drop for group in body["orders"] for drop in group["dropoff"])


def problem_at(path: str, message: str, orders_file: OrdersFile) -> Problem:
    """A bulk validation path and message, as the file's rows and column."""
    message = in_page_words(message)
    match = _BULK_PATH.fullmatch(path)
    if match is None:
        return Problem((), None, message)
    group, rest = int(match["group"]), match["rest"] or ""
    if group >= len(orders_file.group_rows):
        return Problem((), None, message)
    rows = orders_file.group_rows[group]
    if match["drop"] is None:
        # A pickup's problem is every row of its group: they share the pickup's cells.
        return Problem(tuple(rows), _PICKUP_FIELDS.get(rest), message)
    drop = int(match["drop"])
    if drop >= len(rows):
        return Problem((), None, message)
    return Problem((rows[drop],), _DROP_FIELDS.get(rest), message)


def in_page_words(message: str) -> str:
    """The bulk parser's English message in the page's language, where it is one we know."""
    for pattern, words in _API_WORDING:
        if match := pattern.fullmatch(message):
            return str(words) % match.groupdict()
    return message


def results_by_row(orders_file: OrdersFile, entries: list[ResultEntry]) -> list[RowResult]:
    """The bulk answer's entries (submission order) beside their rows, in file order."""
    paired = zip(orders_file.drop_rows, entries, strict=True)
    return sorted((RowResult(row, entry) for row, entry in paired), key=lambda r: r.row)


# --- Reading --------------------------------------------------------------------------------


def _header_needed() -> str:
    return _("The first row must be the header: the column names, e.g. %(columns)s.") % {
        "columns": ", ".join(REQUIRED_COLUMNS)
    }


def _location_problems(columns: dict[str, int]) -> list[str]:
    """Each side needs both coordinates or an address, as in the API."""
    errors = []
    for lat, long, address, purpose in LOCATIONS:
        if (lat in columns) != (long in columns):
            given, absent = (lat, long) if lat in columns else (long, lat)
            errors.append(
                _("The column %(given)s needs %(absent)s beside it.")
                % {"given": given, "absent": absent}
            )
        elif lat not in columns and address not in columns:
            errors.append(
                _("The columns %(lat)s and %(long)s, or %(address)s, are missing (%(purpose)s).")
                % {"lat": lat, "long": long, "address": address, "purpose": purpose}
            )
    return errors


def _rows_text(rows: tuple[int, ...]) -> str:
    if len(rows) == 1:
        return _("Row %(row)s") % {"row": rows[0]}
    named = ", ".join(str(row) for row in rows[:ROWS_NAMED])
    if len(rows) > ROWS_NAMED:
        return _("Rows %(rows)s and %(more)s more") % {
            "rows": named,
            "more": len(rows) - ROWS_NAMED,
        }
    head, last = named.rsplit(", ", 1)
    return _("Rows %(rows)s and %(last)s") % {"rows": head, "last": last}


class _Cells:
    """One row's cells as the fields of a bulk body; empty cells are absent fields."""

    def __init__(self, row: int, values: dict[str, str], problems: list[Problem]) -> None:
        self.row = row
        self.values = values
        self.problems = problems

    def text(self, column: str) -> str | None:
        return self.values.get(column) or None

    def number(self, column: str) -> float | None:
        value = self.text(column)
        if value is None:
            return None
        if not _NUMBER.fullmatch(value):
            self.problems.append(
                Problem(
                    (self.row,),
                    column,
                    _(
                        "“%(value)s” is not a number: write it with a . as the decimal point, "
                        "e.g. 11.5564."
                    )
                    % {"value": value[:40]},
                )
            )
            return None
        return float(value)

    def yes(self, column: str) -> bool:
        value = (self.text(column) or "no").lower()
        if value not in YES | NO:
            self.problems.append(Problem((self.row,), column, _("Must be yes or no (or empty).")))
            return False
        return value in YES

    def place(self, prefix: str, *, with_city: bool) -> dict[str, Any]:
        fields = {"lat": self.number(f"{prefix}_lat"), "long": self.number(f"{prefix}_long")}
        address = {"complete_address": self.text(f"{prefix}_address")}
        if with_city:
            address["city"] = self.text(f"{prefix}_city")
        fields["address"] = present(address) or None
        return fields

    def pickup(self) -> dict[str, Any]:
        return present(
            {
                "name": self.text("pickup_name"),
                "phone": self.text("pickup_phone"),
                **self.place("pickup", with_city=False),
                "pickup_scheduled_at": self.text("pickup_scheduled_at"),
            }
        )

    def drop(self) -> dict[str, Any]:
        recipient = {
            "name": self.text("recipient_name"),
            "phone": self.text("recipient_phone"),
            "email": self.text("recipient_email"),
            **self.place("dropoff", with_city=True),
        }
        return drop_body(
            client_order_id=self.text("client_order_id"),
            external_waybill=self.text("external_waybill"),
            recipient=recipient,
            ask_pin=self.yes("dropoff_pin"),
            sandbox_scenario=self.text("sandbox_scenario"),
            window_start=self.text("dropoff_window_start"),
            window_end=self.text("dropoff_window_end"),
            notes=self.text("notes"),
            undeliverable_action=self.text("undeliverable_action"),
            parcel={
                "size": self.text("parcel_size"),
                "weight_kg": self.number("parcel_weight_kg"),
                "description": self.text("parcel_description"),
                "value": self.text("parcel_value"),
            },
            cod_amount=self.text("cod_amount"),
            recipient_language=self.text("recipient_language"),
        )
