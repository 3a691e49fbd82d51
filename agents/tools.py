"""The MCP tools: each one an operation of the REST API, its schema and its answer.

A tool names the operation it mirrors (its operationId); the method, the path, the
description and the input schema come from the API's OpenAPI description
(agents/schemas.py), and a call is the API's own request (agents/rest.py). The answer is the
envelope's `data` as structured content; an error envelope is a tool error carrying the
API's `code`, `message` and `details` (docs/agents.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from django.http import HttpRequest

from agents.rest import Answer, call_api
from agents.schemas import Operation, operations

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_ARGUMENT = "idempotency_key"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    operation_id: str
    read_only: bool
    # create_orders only: the bulk call's Idempotency-Key header is an argument, made when
    # absent and returned with the answer.
    idempotent_by_key: bool = False

    @property
    def operation(self) -> Operation:
        return operations()[self.operation_id]


TOOLS = {
    spec.name: spec
    for spec in (
        ToolSpec("list_service_areas", "service_areas_list", read_only=True),
        ToolSpec("quote_orders", "orders_quote", read_only=True),
        ToolSpec("create_orders", "orders_bulk", read_only=False, idempotent_by_key=True),
        ToolSpec("track_orders", "orders_tracking", read_only=True),
        ToolSpec("list_orders", "orders_list", read_only=True),
        ToolSpec("cancel_orders", "orders_cancel", read_only=False),
        ToolSpec("get_account", "account_retrieve", read_only=True),
    )
}


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The request body's schema, or the query parameters as an object's properties."""
    operation = spec.operation
    if operation.body is not None:
        schema = dict(operation.body)
    else:
        schema = {"type": "object", "properties": dict(operation.query)}
        if operation.required_query:
            schema["required"] = list(operation.required_query)
    if spec.idempotent_by_key:
        header = operation.headers[IDEMPOTENCY_HEADER]
        argument = {
            **header,
            "description": (
                "Optional: the bulk call's Idempotency-Key. Without one, a new UUID is made "
                "and returned as `idempotency_key`; send it again to retry the same batch. "
                + header.get("description", "")
            ),
        }
        schema["properties"] = {**schema.get("properties", {}), IDEMPOTENCY_ARGUMENT: argument}
    return schema


def output_schema(spec: ToolSpec) -> dict[str, Any] | None:
    """The schema of the answer's `data`, plus what create_orders adds to it."""
    schema = spec.operation.answer
    if schema is None or not spec.idempotent_by_key:
        return schema
    added = {
        IDEMPOTENCY_ARGUMENT: {"type": "string", "description": "The batch's Idempotency-Key."},
        "replayed": {
            "type": "boolean",
            "description": "True when this is the stored answer of an earlier call with the key.",
        },
    }
    return {
        **schema,
        "properties": {**schema.get("properties", {}), **added},
        "required": [*schema.get("required", []), *added],
    }


def listed_tools() -> list[types.Tool]:
    tools = []
    for spec in TOOLS.values():
        operation = spec.operation
        tools.append(
            types.Tool(
                name=spec.name,
                title=operation.summary,
                description=f"{operation.summary}. {operation.description}".strip(),
                input_schema=input_schema(spec),
                output_schema=output_schema(spec),
                annotations=types.ToolAnnotations(
                    title=operation.summary,
                    read_only_hint=spec.read_only,
                    destructive_hint=spec.name == "cancel_orders",
                    idempotent_hint=spec.read_only or spec.idempotent_by_key,
                    open_world_hint=False,
                ),
            )
        )
    return tools


def call_tool(caller: HttpRequest, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run tool `name` (one of TOOLS) as `caller`: its API call, and the answer or the refusal."""
    spec = TOOLS[name]
    operation = spec.operation
    arguments = dict(arguments)
    headers, extra = {}, {}
    if spec.idempotent_by_key:
        key = arguments.pop(IDEMPOTENCY_ARGUMENT, None) or str(uuid.uuid4())
        headers[IDEMPOTENCY_HEADER] = str(key)
        extra[IDEMPOTENCY_ARGUMENT] = str(key)
    if operation.body is not None:
        answer = call_api(caller, operation.method, operation.path, body=arguments, headers=headers)
    else:
        query = {name: query_text(value) for name, value in arguments.items()}
        answer = call_api(caller, operation.method, operation.path, query=query, headers=headers)
    if not answer.ok:
        error = answer.envelope.get("error", {})
        return refusal(
            error.get("code", "ERROR"),
            error.get("message", ""),
            status=answer.status,
            details=error.get("details", []),
            request_id=error.get("request_id", ""),
            retry_after=answer.headers.get("retry-after"),
        )
    if spec.idempotent_by_key:
        extra["replayed"] = answer.headers.get("idempotent-replayed") == "true"
    return success(answer, extra)


def query_text(value: Any) -> str:
    """An argument as a query parameter's text: lists comma-joined (`status`), as the API reads."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(query_text(item) for item in value)
    return str(value)


def success(answer: Answer, extra: dict[str, Any]) -> types.CallToolResult:
    data = answer.envelope["data"]
    structured = {**data, **extra} if extra else data
    return types.CallToolResult(
        content=[types.TextContent(text=orjson.dumps(structured).decode())],
        structured_content=structured,
    )


def refusal(
    code: str,
    message: str,
    *,
    status: int,
    details: list | None = None,
    request_id: str = "",
    retry_after: str | None = None,
) -> types.CallToolResult:
    """A tool error carrying the API's error object, its HTTP status and, on a 429 or 503,
    its Retry-After: what a client of the API reads from the headers, an agent reads here."""
    error = {
        "code": code,
        "message": message,
        "details": details or [],
        "status": status,
        "request_id": request_id,
    }
    if retry_after is not None:
        error["retry_after_seconds"] = int(retry_after)
    return types.CallToolResult(
        content=[types.TextContent(text=orjson.dumps(error).decode())],
        structured_content=error,
        is_error=True,
    )
