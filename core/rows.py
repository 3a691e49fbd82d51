"""Row shapes declared once: a read's columns, each a name and the expression that reads it.

One declaration drives both the SQL (`expressions`, for values_list) and the row type the
driver's tuples become (`Row`, a named tuple: fields by name, the speed of a tuple). No
code outside the declaration knows where a column sits in the row.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from typing import Any

from django.db.models import F


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


class Beside:
    """A read of `first`'s columns with those of the row `first` relates to through the
    foreign key `relation`, read as `second`, in one statement (a drop's columns, then its
    order's). A row has `first`'s names at `first`'s places, then the related row (a row of
    `second`) under the relation's name: it is read wherever a row of `first` is."""

    __slots__ = ("Row", "cut", "expressions", "name", "second")

    def __init__(self, name: str, first: Shape, second: Shape, relation: str) -> None:
        self.name = name
        self.second = second
        self.cut = len(first.expressions)
        self.expressions = first.expressions + tuple(
            _through(expression, relation) for expression in second.expressions
        )
        self.Row = namedtuple(name, [*first.columns, relation])  # noqa: PYI024

    def rows(self, raw: Iterable[tuple]) -> list:
        """The driver's tuples (in the order of `expressions`) as rows of this read."""
        cut, make, related = self.cut, self.Row._make, self.second.Row._make
        return [make((*values[:cut], related(values[cut:]))) for values in raw]

    def __repr__(self) -> str:
        return f"Beside({self.name})"


def _through(expression: Any, relation: str) -> Any:
    """`expression` (a field name or a Django expression) read from the row `relation`
    points to: every field it names is prefixed with `relation__`."""
    if isinstance(expression, str):
        return f"{relation}__{expression}"
    if isinstance(expression, F):
        return F(f"{relation}__{expression.name}")
    copy = expression.copy()
    copy.set_source_expressions(
        [_through(source, relation) for source in expression.get_source_expressions()]
    )
    return copy
