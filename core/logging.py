"""Structured logs: one JSON object per line, carrying the id of the request being served
(production); or one readable line per record (LOG_FORMAT=text, as `make run` asks)."""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token
from datetime import UTC, datetime

import orjson

# Set by RequestIdMiddleware for the length of a request; each thread (and each task) has its own.
_request_id: ContextVar[str] = ContextVar("request_id", default="")

# Extra attributes a record may carry (logger.info(..., extra={...})) that we keep, in this order.
EXTRA_FIELDS = (
    "request_id",
    "method",
    "path",
    "status",
    "duration_ms",
    "db_ms",
    "environment",
    "business_id",
)


def bind_request_id(request_id: str) -> Token:
    return _request_id.set(request_id)


def unbind_request_id(token: Token) -> None:
    _request_id.reset(token)


def current_request_id() -> str:
    return _request_id.get()


class RequestIdFilter(logging.Filter):
    """Give every record the current request's id (empty outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = current_request_id()
        return True


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, the known extras, and exc_info as one string."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in EXTRA_FIELDS:
            value = getattr(record, field, None)
            if value not in (None, ""):
                entry[field] = value
        # django.request and django.server log the answer's status as status_code.
        if "status" not in entry and isinstance(getattr(record, "status_code", None), int):
            entry["status"] = record.status_code
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        # orjson escapes newlines inside strings: a traceback stays on its one line.
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """`HH:MM:SS LEVEL logger: message [request id]`, one line a record: what `make run`
    prints beside its banner. A traceback, when there is one, follows its line."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        request_id = getattr(record, "request_id", "")
        return f"{line} [{request_id}]" if request_id else line
