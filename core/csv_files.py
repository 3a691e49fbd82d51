"""A spreadsheet's CSV file, read the same way wherever one is uploaded (the dashboard's
orders, docs/csv.md; the operator console's places, docs/operator.md): the bytes checked
and decoded, the delimiter chosen, the header's columns found, and the rows numbered as
the spreadsheet numbers them. What a row means is the caller's business. Its messages are
in the request's language (the dashboard's page, or English in the console).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from django.utils.translation import gettext as _

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_FILE_LABEL = "5 MB"

_HEADER_SPACES = re.compile(r"[\s\-]+")


class CsvUnreadable(Exception):
    """The file as a whole can't be used (size, encoding, header...): no row of it is used."""

    def __init__(self, *messages: str) -> None:
        super().__init__(*messages)
        self.messages = list(messages)


@dataclass(slots=True)
class CsvTable:
    """A file whose header was understood, with its records still to be read."""

    columns: dict[str, int]  # a known column → its index in a record
    unknown: list[str]  # the header's other columns, as written; ignored
    width: int  # the header's cells
    records: Iterator[list[str]]  # after the header; raises CsvUnreadable on garbled CSV

    def rows(self) -> Iterator[tuple[int, list[str]]]:
        """Each record with its number as the spreadsheet shows it (the header is row 1).
        A blank line is passed over, and the rows after it keep their numbers."""
        for number, record in enumerate(self.records, start=2):
            if any(cell.strip() for cell in record):
                yield number, record

    def cells(self, record: list[str]) -> dict[str, str]:
        """The known columns' cells of a record, stripped; a short record's missing ones empty."""
        return {
            name: record[index].strip() if index < len(record) else ""
            for name, index in self.columns.items()
        }

    def overflow(self, record: list[str]) -> str | None:
        """What is wrong with a record that fills cells past the header's, if it does."""
        if not any(cell.strip() for cell in record[self.width :]):
            return None
        return _(
            "%(cells)s cells, but the header has %(columns)s columns: a cell that "
            "contains the delimiter must be in double quotes."
        ) % {"cells": len(record), "columns": self.width}


def read_table(
    data: bytes,
    *,
    names: Mapping[str, str],
    required: Sequence[str],
    header_needed: str,
    column_rules: Callable[[dict[str, int]], list[str]] = lambda columns: [],
) -> CsvTable:
    """The file's header understood; raises CsvUnreadable for a file that can't be used.

    `names` maps a header cell (lower case, spaces and dashes as `_`) to the column it
    names; `header_needed` says what the first row must be; `column_rules` adds the
    caller's own problems with the columns found (reported with the missing ones).
    """
    text = _text_of(data)
    first_line = text.split("\n", 1)[0]
    # `;` when the header has more of them than commas: Excel's CSV in many locales.
    delimiter = ";" if first_line.count(";") > first_line.count(",") else ","
    records = _records(text, delimiter)
    header = next(records, None)
    if header is None or not any(cell.strip() for cell in header):
        raise CsvUnreadable(header_needed)
    columns, unknown, errors = _columns_of(header, names)
    if not columns:
        raise CsvUnreadable(f"{header_needed} {_('None of them was found.')}")
    errors += [
        _("The column %(name)s is missing.") % {"name": name}
        for name in required
        if name not in columns
    ]
    errors += column_rules(columns)
    if errors:
        raise CsvUnreadable(*errors)
    return CsvTable(columns=columns, unknown=unknown, width=len(header), records=records)


def _text_of(data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise CsvUnreadable(
            _("The file is larger than %(size)s: split it into smaller files.")
            % {"size": MAX_FILE_LABEL}
        )
    if data.startswith(b"PK\x03\x04") or data.startswith(b"\xd0\xcf\x11\xe0"):
        raise CsvUnreadable(
            _(
                "This is a spreadsheet workbook (.xlsx or .xls), not a CSV file: "
                "in your spreadsheet, save it as “CSV UTF-8” and upload that."
            )
        )
    try:
        text = data.decode("utf-8-sig")  # a byte order mark, as Excel writes, is dropped
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CsvUnreadable(
            _(
                "The file is not UTF-8 text (the first problem is on line %(line)s): "
                "save it as “CSV UTF-8”."
            )
            % {"line": line}
        ) from error
    if "\x00" in text:
        raise CsvUnreadable(_("This is not a CSV file: it contains binary data."))
    if not text.strip():
        raise CsvUnreadable(_("The file is empty."))
    return text


def _records(text: str, delimiter: str) -> Iterator[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            # e.g. a cell larger than the csv module's limit (128 KiB).
            raise CsvUnreadable(
                _("The file could not be read as CSV near line %(line)s: %(error)s.")
                % {"line": reader.line_num, "error": error}
            ) from error
        yield record


def _columns_of(
    header: list[str], names: Mapping[str, str]
) -> tuple[dict[str, int], list[str], list[str]]:
    """Known column → its index, the unknown columns as written, and the columns named twice."""
    columns: dict[str, int] = {}
    unknown: list[str] = []
    errors: list[str] = []
    for index, cell in enumerate(header):
        written = _HEADER_SPACES.sub("_", cell.strip().lower())
        if not written:
            continue  # an unnamed column (trailing delimiters): nothing to read
        name = names.get(written)
        if name is None:
            unknown.append(cell.strip())
        elif name in columns:
            errors.append(_("The column %(name)s appears twice: keep one.") % {"name": name})
        else:
            columns[name] = index
    return columns, unknown, errors
