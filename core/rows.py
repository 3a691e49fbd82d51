"""Row shapes declared once: a read's columns, each a name and the expression that reads it.

One declaration drives both the SQL (`expressions`, for values_list) and the row type the
driver's tuples become (`Row`, a named tuple: fields by name, the speed of a tuple). No
code outside the declaration knows where a column sits in the row.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from typing import Any


class Shape:
    """The columns of one read, in order: `name=expression`, an expression being a field
    name or a Django expression (core/functions.py's wire forms)."""

    __slots__ = ("Row", "columns", "expressions", "name")

    def __init__(self, name: str, /, **columns: Any) -> None:
        self.name = name
        self.columns = columns
        self.expressions = tuple(columns.values())
        self.Row = namedtuple(name, columns)  # noqa: PYI024 (fields are declared above)

    def extended(self, name: str, /, **columns: Any) -> Shape:
        """This shape's columns first, then these: a row of it is read wherever a row of
        this shape is (the same names at the same places)."""
        return Shape(name, **self.columns, **columns)

    def rows(self, raw: Iterable[tuple]) -> list:
        """The driver's tuples (in the order of `expressions`) as rows of this shape."""
        return list(map(self.Row._make, raw))

    def __repr__(self) -> str:
        return f"Shape({self.name})"
