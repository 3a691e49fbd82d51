"""The CSV reader both spreadsheet uploads share (core/csv_files.py): the orders' and the
places' tests check each upload's own wording; these check what the reader promises both."""

import pytest

from core.csv_files import CsvUnreadable, read_table

NAMES = {"name": "name", "lat": "lat", "latitude": "lat", "city": "city"}


def table_of(data: bytes, **options):
    return read_table(
        data, names=NAMES, required=("name", "lat"), header_needed="Name the columns.", **options
    )


def test_rows_are_numbered_as_the_spreadsheet_numbers_them_past_blank_lines():
    table = table_of(b"Name;Latitude;Notes\r\nA;1,5\r\n;  ;\r\n\r\nB;2\r\n")

    assert table.columns == {"name": 0, "lat": 1}
    assert table.unknown == ["Notes"]
    assert [(number, table.cells(record)) for number, record in table.rows()] == [
        (2, {"name": "A", "lat": "1,5"}),  # `;` was the delimiter: the comma is a cell's
        (5, {"name": "B", "lat": "2"}),
    ]


def test_a_record_past_the_header_says_so_and_a_short_one_reads_empty():
    table = table_of(b"name,lat\nA,1,x\nB\n")
    (_, long), (_, short) = table.rows()

    assert table.overflow(long) == (
        "3 cells, but the header has 2 columns: a cell that contains the delimiter must be "
        "in double quotes."
    )
    assert table.overflow(short) is None
    assert table.cells(short) == {"name": "B", "lat": ""}


def test_every_problem_of_the_columns_is_said_at_once_with_the_callers_own():
    with pytest.raises(CsvUnreadable) as refused:
        table_of(
            b"name,Name,city\nA,A,X\n",
            column_rules=lambda columns: ["A rule of mine."] if "city" in columns else [],
        )

    assert refused.value.messages == [
        "The column name appears twice: keep one.",
        "The column lat is missing.",
        "A rule of mine.",
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\n\nname\n", "Name the columns."),
        (b"title,place\nx,y\n", "Name the columns. None of them was found."),
        (b"\xef\xbb\xbf \r\n", "The file is empty."),
    ],
    ids=["no header", "no known column", "only a byte order mark"],
)
def test_a_file_without_a_usable_header_is_refused_in_the_callers_words(data, message):
    with pytest.raises(CsvUnreadable) as refused:
        table_of(data)

    assert refused.value.messages == [message]
