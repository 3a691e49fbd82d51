"""A request shape declared once: the table its parser reads and its OpenAPI schema is made of.

A `Shape` is an ordered table of `Field`s: a name, a `Kind` (what the value must be, with
its bounds), whether it is required, whether null counts as absent, a default and the
text the schema shows. `Shape.read` checks a JSON object against the table, noting every
problem in a `Problems` (the 400's details, in table order); `Shape.serializer` makes the
DRF serializer drf-spectacular describes. Neither is written by hand, so they cannot
disagree.

Not DRF's own validation, nor a library's: the bulk body is read once per drop on the hot
path (5000 drops in one call), and reading a table with a fast path for the usual value of
each kind costs what the hand-written parser did (bench/parse.py; docs/decisions.md).
A kind with a rule no table says (an address's free fields, a weight kept to the gram) is
a `Kind` subclass beside its shape: its check and its schema still sit in one place.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from core.api import MAX_ERROR_DETAILS
from core.serializers import optional_text, text

REQUIRED = "This field is required."
_EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
_LATEST = datetime(9998, 12, 31, tzinfo=UTC)


def path_of(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


class Problems:
    """The problems found: the first MAX_ERROR_DETAILS spelled out, the rest only counted."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []
        self.more = 0
        # Timestamps read so far, by their text: the drops of a batch mostly share theirs
        # (one window for a round, one pickup time), and reading one costs ~3 µs.
        self.moments: dict[str, datetime] = {}

    def add(self, field: str, message: str) -> None:
        if len(self.items) < MAX_ERROR_DETAILS:
            self.items.append({"field": field, "message": message})
        else:
            self.more += 1

    @property
    def count(self) -> int:
        return len(self.items) + self.more

    def unknown_fields(self, value: dict, where: str, known, allowed: str) -> bool:
        """Whether the object `value` has fields outside `known`; if so, says which and what
        is `allowed`."""
        unknown = sorted(set(value) - set(known))
        if unknown:
            self.add(where, f"Unknown field(s): {', '.join(unknown)[:200]}; {allowed}.")
        return bool(unknown)

    def moment(self, value: Any, where: str) -> datetime | None:
        """An ISO 8601 time with a zone, in UTC; None (and the problem noted) if it is not one."""
        if type(value) is str and (known := self.moments.get(value)) is not None:
            return known
        try:
            # fromisoformat stops reading at a NUL, so "…Z\x00garbage" would pass.
            if not isinstance(value, str) or "\x00" in value:
                raise ValueError
            moment = datetime.fromisoformat(value)
        except ValueError:
            self.add(where, "Must be an ISO 8601 timestamp with a time zone.")
            return None
        if moment.tzinfo is None:
            self.add(where, "Must carry a time zone, e.g. 2026-01-31T09:30:00Z.")
            return None
        # Years 1 and 9999 with an offset can't be moved to UTC or the service time zone.
        try:
            in_range = _EARLIEST <= moment.astimezone(UTC) <= _LATEST
        except OverflowError:
            in_range = False
        if not in_range:
            self.add(where, "Must be a timestamp between the years 0002 and 9998.")
            return None
        # In UTC from here on: PostgreSQL stores offsets up to ±15:59 only, and ISO 8601 allows
        # any under 24 hours (+23:59), which would reach the database as a 500.
        moment = self.moments[value] = moment.astimezone(UTC)
        return moment


# --- Kinds: what a value must be, read and described -------------------------------------


class Kind:
    """What a field's value must be. `read` gets a value that is not null and returns it as
    the program uses it, or notes the problem and returns None; `schema` is the DRF field
    that describes it (spectacular's `kwargs`: required, allow_null, help_text)."""

    missing = REQUIRED  # said when a required value is absent, or null where null is refused

    def fast(self, var: str, field: Field) -> str | None:
        """A Python expression, true when the value named `var` is good and read as itself:
        the usual case, checked inline by the shape's compiled reader; "True" if every
        value is; None if the value must always go through `read`."""
        return None

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        raise NotImplementedError

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        raise NotImplementedError


class Text(Kind):
    """A string of at most `max_length` characters, no NUL; a required one (or one that is
    not `blank`) not blank."""

    def __init__(
        self,
        max_length: int,
        *,
        blank: bool | None = None,
        missing: str = REQUIRED,
        doc: Callable[..., serializers.Field] | None = None,
    ) -> None:
        self.max_length = max_length
        self.blank = blank  # None: blank is refused where the field is required
        self.missing = missing
        self.doc = doc  # the schema's field, when it says more than the text rule

    def refuses_blank(self, field: Field) -> bool:
        return field.required if self.blank is None else not self.blank

    def fast(self, var: str, field: Field) -> str | None:
        usual = f"type({var}) is str and len({var}) <= {self.max_length} and '\\x00' not in {var}"
        return f"{usual} and {var}.strip()" if self.refuses_blank(field) else usual

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        refuses_blank = self.refuses_blank(field)
        if (
            type(value) is str
            and len(value) <= self.max_length
            and "\x00" not in value
            and (not refuses_blank or value.strip())
        ):
            return value  # the usual case, checked first
        if not isinstance(value, str):
            message = "Must be a string."
        elif refuses_blank and not value.strip():
            message = "Must not be empty."
        elif len(value) > self.max_length:
            message = f"Must be at most {self.max_length} characters."
        else:
            message = "Must not contain NUL characters."
        problems.add(path_of(parent, field.name), message)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        if self.doc is not None:
            return self.doc(**kwargs)
        if self.refuses_blank(field):
            return text(self.max_length, **kwargs)
        del kwargs["required"]
        return optional_text(self.max_length, **kwargs)


class Bool(Kind):
    """true or false."""

    def fast(self, var: str, field: Field) -> str | None:
        return f"type({var}) is bool"

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if type(value) is bool:
            return value
        problems.add(path_of(parent, field.name), "Must be true or false.")
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.BooleanField(default=field.default, **kwargs)


class Choice(Kind):
    """One of `values` (null too, where null counts as absent)."""

    def __init__(self, values: Sequence[str]) -> None:
        self.values = tuple(values)
        self.missing = f"Must be one of {', '.join(self.values)}."

    def fast(self, var: str, field: Field) -> str | None:
        return f"{var} in {self.values!r}"

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        if value in self.values:
            return value
        problems.add(path_of(parent, field.name), self.missing)
        return None

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.ChoiceField(choices=list(self.values), **kwargs)


class Timestamp(Kind):
    """An ISO 8601 time with a zone, read as its UTC moment."""

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        return problems.moment(value, path_of(parent, field.name))

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return serializers.DateTimeField(**kwargs)


class Passed(Kind):
    """Taken as sent: its worth is a rule of the drop, judged later (a 200 `rejected` entry,
    not a 400), or compared by the service. The description is the OpenAPI `schema` given,
    or the DRF field `doc` makes."""

    missing = ""  # not even null is refused

    def __init__(
        self,
        schema: dict[str, Any] | None = None,
        doc: Callable[..., serializers.Field] | None = None,
    ) -> None:
        self.described = schema
        self.doc = doc

    def fast(self, var: str, field: Field) -> str | None:
        return "True"

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        return value

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        if self.doc is not None:
            return self.doc(**kwargs)
        from core.openapi import schema_field  # core.openapi reads settings at import

        return schema_field(self.described)(**kwargs)


class Object(Kind):
    """A JSON object of `shape`'s fields; anything else is `message`."""

    def __init__(self, shape: Shape, message: str) -> None:
        self.shape = shape
        self.missing = message

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        return self.read_at(problems, value, path_of(parent, field.name))

    def read_at(self, problems: Problems, value: Any, where: str) -> Any:
        """The object at path `where` (an array's element is read so)."""
        if not isinstance(value, dict):
            problems.add(where, self.missing)
            return None
        return self.shape.read(problems, value, where)

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        return self.shape.serializer()(**kwargs)


class Array(Kind):
    """A non-empty JSON array of `item`s; `before` may refuse the whole array first."""

    def __init__(self, item: Object, message: str, before: Callable[[list], None] | None = None):
        self.item = item
        self.missing = message
        self.before = before

    def read(self, problems: Problems, value: Any, parent: str, field: Field) -> Any:
        where = path_of(parent, field.name)
        if not isinstance(value, list) or not value:
            problems.add(where, self.missing)
            value = []
        if self.before is not None:
            self.before(value)
        read_at = self.item.read_at
        if type(self.item) is Object:  # a plain object: its shape's reader, directly
            read = self.item.shape.read
            return [
                read(problems, element, f"{where}[{i}]")
                if type(element) is dict
                else read_at(problems, element, f"{where}[{i}]")
                for i, element in enumerate(value)
            ]
        return [read_at(problems, element, f"{where}[{i}]") for i, element in enumerate(value)]

    def schema(self, field: Field, kwargs: dict[str, Any]) -> serializers.Field:
        kwargs.pop("allow_null", None)
        child = self.item.schema(Field("", self.item, required=True), {})
        return serializers.ListField(child=child, min_length=1, **kwargs)


# --- Fields and shapes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a shape: its name, kind, and what absent or null means."""

    name: str
    kind: Kind
    required: bool = False
    null: bool = True  # null counts as absent (when not required)
    default: Any = None  # the value read when absent
    help: str = ""

    def read(self, problems: Problems, obj: dict, parent: str) -> Any:
        value = obj.get(self.name)
        if value is None:
            return self.absent(problems, obj, parent)
        return self.kind.read(problems, value, parent, self)

    def absent(self, problems: Problems, obj: dict, parent: str) -> Any:
        """The value read when the field is absent or null (the problem noted, if any)."""
        if (self.required or (not self.null and self.name in obj)) and self.kind.missing:
            problems.add(path_of(parent, self.name), self.kind.missing)
        return self.default

    def serializer_field(self) -> serializers.Field:
        kwargs: dict[str, Any] = {"required": self.required}
        if not self.required:
            kwargs["allow_null"] = self.null
        if self.help:
            kwargs["help_text"] = self.help
        return self.kind.schema(self, kwargs)


class Shape:
    """An object's fields, in the order they are read (and listed in the schema).

    `closed`: unknown fields are refused, the message saying what is `closed` (e.g. "only
    start and end"); or `unknown` notes them (and the rest is read); else they are ignored.
    `sent_only`: the value is a dict of the fields the object has (null included), for a
    change that names only what changes. `stops`: the field whose problem ends the
    reading of the object (the rest would only repeat it). `build` makes the program's value
    from the fields read, given in table order (its parameters are the fields' names);
    without it the value is a dict of the fields read.
    """

    def __init__(
        self,
        name: str,
        fields: Sequence[Field],
        *,
        doc: str = "",
        closed: str | None = None,
        unknown: Callable[[Problems, dict, str, dict], None] | None = None,
        sent_only: bool = False,
        stops: str | None = None,
        build: Callable[..., Any] | None = None,
    ) -> None:
        self.name = name
        self.fields = tuple(fields)
        if build is not None and sent_only:
            raise TypeError("A sent_only shape's value is the dict of what was sent.")
        if build is not None and list(inspect.signature(build).parameters) != [
            field.name for field in self.fields
        ]:
            raise TypeError(f"{build.__name__} must take {name}'s fields, in their order.")
        self.by_name = {field.name: field for field in self.fields}
        self.doc = doc
        self.closed = closed
        self.unknown = unknown
        self.sent_only = sent_only
        self.stops = stops
        self.build = build
        # The object's value (built from the fields read, or those by name); None if it is
        # refused as a whole. A field's problem is noted, and the field read as None.
        self.read: Callable[[Problems, dict, str], Any] = self._compile()
        self._serializer: type[serializers.Serializer] | None = None

    def _compile(self) -> Callable[[Problems, dict, str], Any]:
        """The reader of this table as one function, compiled once: each field's usual value
        is checked inline (Kind.fast), anything else goes through its kind's `read`. The
        same steps as a loop over the fields, at the cost of the hand-written parser (a
        call per field would double the bulk body's parse time: bench/parse.py)."""
        scope: dict[str, Any] = {
            "KNOWN": self.by_name,
            "CLOSED": self.closed,
            "UNKNOWN": self.unknown,
            "BUILD": self.build,
        }
        lines = ["def read(problems, obj, where):"]
        if self.closed is not None:
            lines.append("    if problems.unknown_fields(obj, where, KNOWN, CLOSED): return None")
        if self.unknown is not None:
            lines.append("    UNKNOWN(problems, obj, where, KNOWN)")
        lines.append("    get = obj.get")
        if self.sent_only:
            lines.append("    values = {}")
        for i, field in enumerate(self.fields):
            scope[f"F{i}"], scope[f"K{i}"], scope[f"D{i}"] = field, field.kind, field.default
            if field.kind.__class__ is Object:
                scope[f"R{i}"] = field.kind.shape.read
            if self.sent_only:
                lines.append(f"    if {field.name!r} in obj:")
                lines.extend(f"    {line}" for line in self._field_lines(i, field))
                lines.append(f"        values[{field.name!r}] = v{i}")
            else:
                lines.extend(self._field_lines(i, field))
        if self.sent_only:
            lines.append("    return values")
        elif self.build is None:
            values = ", ".join(f"{field.name!r}: v{i}" for i, field in enumerate(self.fields))
            lines.append(f"    return {{{values}}}")
        else:
            lines.append(f"    return BUILD({', '.join(f'v{i}' for i in range(len(self.fields)))})")
        exec(compile("\n".join(lines), f"<shape {self.name}>", "exec"), scope)  # noqa: S102
        return scope["read"]

    def _field_lines(self, i: int, field: Field) -> list[str]:
        """The lines that read field `i` into v{i}."""
        value = f"v{i}"
        lines = [f"    {value} = get({field.name!r})", f"    if {value} is None:"]
        if field.required or not field.null:
            lines.append(f"        {value} = F{i}.absent(problems, obj, where)")
        else:
            lines.append(f"        {value} = D{i}")
        fast = field.kind.fast(value, field)
        if field.kind.__class__ is Object:  # a plain object: its shape's reader, directly
            at = f'(where + ".{field.name}" if where else "{field.name}")'
            lines.append(f"    elif type({value}) is dict:")
            lines.append(f"        {value} = R{i}(problems, {value}, {at})")
        if fast != "True":
            lines.append(f"    elif not ({fast}):" if fast else "    else:")
            lines.append(f"        {value} = K{i}.read(problems, {value}, where, F{i})")
        if field.name == self.stops:
            lines.append(f"    if {value} is None: return None")
        return lines

    def serializer(self) -> type[serializers.Serializer]:
        """The DRF serializer that describes this shape (made once: one component)."""
        if self._serializer is None:
            attributes: dict[str, Any] = {f.name: f.serializer_field() for f in self.fields}
            attributes["__doc__"] = self.doc or None
            attributes["__module__"] = __name__
            self._serializer = type(self.name, (serializers.Serializer,), attributes)
        return self._serializer
