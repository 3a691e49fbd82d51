"""The tools' input schemas, read from the API's own OpenAPI description (docs/agents.md).

drf-spectacular builds the schema from the request serializers and each app's schema.py;
a tool's input is the request body of the operation it mirrors, or its query parameters.
Copying those shapes by hand would let the two drift; reading them makes a new field of
the API a new argument of the tool. The description is OpenAPI 3.0, so what JSON Schema
reads differently is translated: `nullable` becomes a "null" type, and every `$ref` is
inlined, since MCP clients before 2026-07-28 read only `type`/`properties`/`required`
reliably (our request shapes hold no cycle, so inlining ends).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from drf_spectacular.generators import SchemaGenerator

COMPONENT_PREFIX = "#/components/schemas/"
JSON = "application/json"
# OpenAPI keywords that are not JSON Schema: examples, and the discriminator, whose mapping
# names components that inlining leaves behind (the oneOf it annotates still decides).
_DROPPED = frozenset(
    {"readOnly", "writeOnly", "example", "examples", "xml", "externalDocs", "discriminator"}
)


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the API as its description gives it."""

    method: str  # upper case, as HTTP writes it
    path: str
    summary: str
    description: str
    body: dict[str, Any] | None  # JSON Schema of the request body, refs inlined
    query: dict[str, dict[str, Any]]  # query parameter → JSON Schema (with its description)
    required_query: tuple[str, ...]
    headers: dict[str, dict[str, Any]]  # request header → JSON Schema (with its description)
    answer: dict[str, Any] | None  # JSON Schema of the 200 envelope's `data`


@cache
def openapi() -> dict[str, Any]:
    """The public schema, as GET /api/v1/schema/ serves it; built once per process."""
    return SchemaGenerator().get_schema(request=None, public=True)


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the schema by its operationId."""
    document = openapi()
    components = document.get("components", {}).get("schemas", {})
    found = {}
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            found[spec["operationId"]] = _operation(method, path, spec, components)
    return found


def _operation(method: str, path: str, spec: dict, components: dict) -> Operation:
    content = spec.get("requestBody", {}).get("content", {})
    body = content[JSON]["schema"] if JSON in content else None
    query, headers, required = {}, {}, []
    for parameter in spec.get("parameters", []):
        schema = json_schema(parameter.get("schema", {}), components)
        if parameter.get("description"):
            schema = {**schema, "description": parameter["description"]}
        if parameter["in"] == "query":
            query[parameter["name"]] = schema
            if parameter.get("required"):
                required.append(parameter["name"])
        elif parameter["in"] == "header":
            headers[parameter["name"]] = schema
    return Operation(
        method=method.upper(),
        path=path,
        summary=spec.get("summary", ""),
        description=spec.get("description", ""),
        body=json_schema(body, components) if body is not None else None,
        query=query,
        required_query=tuple(required),
        headers=headers,
        answer=_answer(spec, components),
    )


def _answer(spec: dict, components: dict) -> dict[str, Any] | None:
    """The schema of `data` in the operation's 200 envelope, if it documents one."""
    content = spec.get("responses", {}).get("200", {}).get("content", {})
    if JSON not in content:
        return None
    envelope = json_schema(content[JSON]["schema"], components)
    return envelope.get("properties", {}).get("data")


def json_schema(schema: Any, components: dict, seen: tuple[str, ...] = ()) -> Any:
    """`schema` (OpenAPI 3.0) as plain JSON Schema: refs inlined, `nullable` as a type."""
    if isinstance(schema, list):
        return [json_schema(item, components, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(COMPONENT_PREFIX):
        name = ref.removeprefix(COMPONENT_PREFIX)
        if name in seen:
            raise ValueError(f"The schema of {seen[0]} refers to itself through {name}.")
        inlined = json_schema(components[name], components, (*seen, name))
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**inlined, **json_schema(rest, components, seen)}
    converted = {
        key: json_schema(value, components, seen)
        for key, value in schema.items()
        if key not in _DROPPED and key != "nullable"
    }
    return _nullable(converted) if schema.get("nullable") else converted


def _nullable(schema: dict) -> dict:
    """OpenAPI 3.0's `nullable: true` in JSON Schema's words."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}
