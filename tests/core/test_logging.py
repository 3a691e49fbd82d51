"""Structured logs: one JSON object per line with the request id; one access line per API call."""

from __future__ import annotations

import io
import logging
import sys

import orjson
import pytest

from core.logging import (
    JsonFormatter,
    RequestIdFilter,
    TextFormatter,
    bind_request_id,
    unbind_request_id,
)
from tests.helpers import assert_error


@pytest.fixture
def json_log():
    """The settings' handler setup (JSON formatter, request id filter) on a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [orjson.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


def format_record(record: logging.LogRecord) -> str:
    RequestIdFilter().filter(record)
    return JsonFormatter().format(record)


def test_a_record_is_one_json_line_with_the_known_fields():
    record = logging.makeLogRecord(
        {"name": "api.access", "levelno": logging.INFO, "levelname": "INFO", "msg": "a\nb"}
    )
    record.method, record.status, record.duration_ms = "GET", 200, 1.5

    line = format_record(record)

    assert "\n" not in line
    entry = orjson.loads(line)
    assert entry["time"].endswith("+00:00")
    assert {k: v for k, v in entry.items() if k != "time"} == {
        "level": "INFO",
        "logger": "api.access",
        "message": "a\nb",
        "method": "GET",
        "status": 200,
        "duration_ms": 1.5,
    }


def test_an_exception_is_one_string_on_the_same_line():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed", (), exc_info=sys.exc_info()
        )

    line = format_record(record)

    assert "\n" not in line
    entry = orjson.loads(line)
    assert entry["exc_info"].startswith("Traceback (most recent call last):")
    assert "RuntimeError: boom" in entry["exc_info"]


def test_records_inside_a_request_carry_its_id():
    record = logging.makeLogRecord({"msg": "inside"})
    token = bind_request_id("req-123")
    try:
        assert orjson.loads(format_record(record))["request_id"] == "req-123"
    finally:
        unbind_request_id(token)
    outside = orjson.loads(format_record(logging.makeLogRecord({"msg": "outside"})))
    assert "request_id" not in outside


def test_the_settings_log_json_with_the_request_id():
    from django.conf import settings

    handler = settings.LOGGING["handlers"]["console"]
    assert settings.LOGGING["formatters"][handler["formatter"]]["()"] == (
        "core.logging.JsonFormatter"
    )
    assert [settings.LOGGING["filters"][f]["()"] for f in handler["filters"]] == [
        "core.logging.RequestIdFilter"
    ]


def test_the_text_format_is_one_readable_line_with_the_request_id():
    """LOG_FORMAT=text, as `make run` asks: no JSON, the request id at the end when there is one."""
    record = logging.LogRecord("api", logging.WARNING, __file__, 1, "slow: %s ms", (812,), None)
    RequestIdFilter().filter(record)
    assert TextFormatter().format(record).split(" ", 1)[1] == "WARNING api: slow: 812 ms"
    record.request_id = "abc123"
    line = TextFormatter().format(record)
    assert line.endswith("WARNING api: slow: 812 ms [abc123]") and "\n" not in line


def test_each_api_call_writes_one_access_line(alice, api, json_log):
    response = api.get("/account", alice.sandbox_key, {"X-Request-Id": "trace-42"})

    access = [e for e in json_log() if e["logger"] == "api.access"]
    assert len(access) == 1
    entry = access[0]
    assert entry["request_id"] == "trace-42" == response["X-Request-Id"]
    assert (entry["method"], entry["path"], entry["status"]) == ("GET", "/api/v1/account", 200)
    assert entry["environment"] == "sandbox"
    assert entry["business_id"] == str(alice.business.pk)
    assert isinstance(entry["duration_ms"], float)
    # The time spent in the database's statements: some, and never more than the whole.
    assert 0 < entry["db_ms"] <= entry["duration_ms"]


def test_the_access_line_never_holds_the_key(alice, api, json_log):
    secret = alice.sandbox_key[len("svc_test_") :]
    api.get("/account", alice.sandbox_key)
    api.get("/account", f"svc_test_{secret[::-1]}")  # a wrong key is somebody's secret too

    text = orjson.dumps(json_log()).decode()
    assert [e["status"] for e in json_log() if e["logger"] == "api.access"] == [200, 401]
    assert secret[:12] not in text and secret[::-1][:12] not in text
    assert "Bearer" not in text and "uthorization" not in text


def test_failures_are_logged_with_the_request_id(alice, api, json_log):
    response = api.get("/account", None)
    assert_error(response, 401, "UNAUTHENTICATED")
    (entry,) = [e for e in json_log() if e["logger"] == "api.access"]
    assert entry["status"] == 401
    assert entry["request_id"] == response["X-Request-Id"]
    assert "environment" not in entry


def test_an_unhandled_error_is_logged_with_the_request_id(alice, api, json_log, monkeypatch):
    import billing.api

    def broken(**kwargs):
        raise RuntimeError("the summary is broken")

    monkeypatch.setattr(billing.api, "account_answer", broken)
    response = api.get("/account", alice.sandbox_key)

    assert_error(response, 500, "INTERNAL_ERROR")
    (error,) = [e for e in json_log() if e["level"] == "ERROR" and e["logger"] == "api"]
    assert error["request_id"] == response["X-Request-Id"]
    assert "RuntimeError: the summary is broken" in error["exc_info"]
