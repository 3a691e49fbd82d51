"""Input.parse (core/serializers.py): one serializer per shape and thread, no state between
bodies.

Making a DRF serializer deep-copies its declared fields, so each shape's serializer is made
once per thread and validates every body after. These tests hold that reusing it changes no
answer: a body's errors are its own, never a previous body's nor another thread's.
"""

from __future__ import annotations

import threading

import pytest
from rest_framework.fields import empty

import events.inputs  # noqa: F401 (every shape is checked for its defaults)
import orders.inputs  # noqa: F401
from core.api import ApiError
from core.serializers import Input
from tracking.inputs import AdvanceRequest, IdentifiersRequest


def errors_of(shape, body) -> list[dict]:
    with pytest.raises(ApiError) as raised:
        shape.parse(body)
    assert raised.value.status_code == 400 and raised.value.code == "VALIDATION_ERROR"
    return raised.value.details


def test_each_body_gets_its_own_answer_from_the_one_serializer():
    assert IdentifiersRequest.parse({"identifiers": ["A", "B"]}) == {"identifiers": ["A", "B"]}
    assert errors_of(IdentifiersRequest, {"identifiers": ["A", ""]}) == [
        {
            "field": "identifiers[1]",
            "message": errors_of(IdentifiersRequest, {"identifiers": [""]})[0]["message"],
        }
    ]
    assert IdentifiersRequest.parse({"identifiers": ["C"]}) == {"identifiers": ["C"]}
    assert errors_of(IdentifiersRequest, {}) == [
        {"field": "identifiers", "message": "Must be an array of 1 to 1000 strings."}
    ]
    assert errors_of(IdentifiersRequest, []) == [
        {"field": "", "message": "The body must be a JSON object."}
    ]


def test_a_subclass_has_its_own_serializer_and_fields():
    assert AdvanceRequest.parse({"identifiers": ["A"], "to": "PICKED_UP"})["to"] == "PICKED_UP"
    assert IdentifiersRequest.parse({"identifiers": ["A"], "to": "PICKED_UP"}) == {
        "identifiers": ["A"]
    }
    assert AdvanceRequest.parse({"identifiers": ["B"], "to": "DELIVERED"})["to"] == "DELIVERED"


def test_threads_parsing_at_once_each_get_their_own_answers():
    """Four threads parse their own bodies at once, good and bad in turn: every answer and
    every error's field is the thread's own body's."""
    start, wrong = threading.Barrier(4), []

    def parse_many(n: int) -> None:
        start.wait(10)
        for i in range(200):
            good = {"identifiers": [f"T{n}-{i}"]}
            if (answer := IdentifiersRequest.parse(good)) != good:
                wrong.append((n, answer))
            bad = {"identifiers": ["A"] * n + [""]}  # the empty one at index n
            if (fields := [e["field"] for e in errors_of(IdentifiersRequest, bad)]) != [
                f"identifiers[{n}]"
            ]:
                wrong.append((n, fields))

    threads = [threading.Thread(target=parse_many, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def shapes(cls=Input) -> list[type[Input]]:
    return [cls, *(s for sub in cls.__subclasses__() for s in shapes(sub))]


def fields_of(field) -> list:
    inner = [field.child] if hasattr(field, "child") else []
    inner += list(field.fields.values()) if hasattr(field, "fields") else []
    return [field, *(f for child in inner for f in fields_of(child))]


def test_no_shape_hands_one_mutable_default_to_every_request():
    """The serializer serves every request, so a list or dict default must be a new one each
    time: one request changing its data must not change the next one's."""
    found = 0
    for shape in shapes()[1:]:
        for field in fields_of(shape()):
            if field.default is empty:
                continue
            first = field.get_default()
            if isinstance(first, list | dict | set):
                found += 1
                assert field.get_default() is not first, (shape, field.field_name)
    assert found, "the check saw no mutable default (events' event_types has one)"
