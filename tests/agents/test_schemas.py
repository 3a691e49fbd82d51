"""OpenAPI 3.0 to the JSON Schema of the tools (agents/schemas.py): refs inlined, nullable as
a "null" type, what is not JSON Schema left out."""

from __future__ import annotations

import pytest

from agents.schemas import json_schema

COMPONENTS = {
    "Pin": {"type": "object", "properties": {"lat": {"type": "number"}}, "example": {"lat": 1}},
    "Size": {"type": "string", "enum": ["S", "M"]},
    "Loop": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Loop"}}},
}


def test_refs_are_inlined_with_their_siblings():
    schema = {"$ref": "#/components/schemas/Pin", "description": "Where."}

    assert json_schema(schema, COMPONENTS) == {
        "type": "object",
        "properties": {"lat": {"type": "number"}},
        "description": "Where.",
    }


def test_nullable_becomes_a_null_type_and_a_null_choice():
    assert json_schema({"type": "string", "nullable": True}, COMPONENTS) == {
        "type": ["string", "null"]
    }
    size = {"allOf": [{"$ref": "#/components/schemas/Size"}], "nullable": True}
    assert json_schema(size, COMPONENTS) == {
        "anyOf": [{"allOf": [{"type": "string", "enum": ["S", "M"]}]}, {"type": "null"}]
    }
    assert json_schema({"type": "string", "enum": ["S"], "nullable": True}, COMPONENTS) == {
        "type": ["string", "null"],
        "enum": ["S", None],
    }


def test_a_discriminator_is_dropped_its_one_of_kept():
    schema = {
        "oneOf": [{"$ref": "#/components/schemas/Pin"}],
        "discriminator": {"propertyName": "kind", "mapping": {"p": "#/components/schemas/Pin"}},
    }

    assert json_schema(schema, COMPONENTS) == {
        "oneOf": [{"type": "object", "properties": {"lat": {"type": "number"}}}]
    }


def test_a_shape_that_holds_itself_is_refused_rather_than_inlined_forever():
    with pytest.raises(ValueError, match="refers to itself through Loop"):
        json_schema({"$ref": "#/components/schemas/Loop"}, COMPONENTS)
