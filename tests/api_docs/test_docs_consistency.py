"""The docs say what the code does, wherever a machine can tell.

The error codes the code can answer, read from its source, are the ones the OpenAPI
schema's error list and docs/api.md's Errors table name, each with its status; the limits
docs/api.md states are the code's; the integrators' guide is served by the API itself; and
no file points at a contract outside the repository.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import orjson
from django.conf import settings
from django.test import Client
from rest_framework import exceptions

from core.api import _DRF_CODES, MAX_JSON_DEPTH
from couriers.api import MOVE_REFUSAL_STATUS
from events.endpoints import EndpointRefused
from events.models import EventType
from orders.errors import BatchRefused
from orders.models import DropStatus
from tracking.api import refusal_status
from tracking.listing import SYNC_MARGIN

ROOT = Path(settings.BASE_DIR)
GUIDE = ROOT / "docs" / "api.md"
# The packages that answer API requests (dashboard and console answer pages, not the API).
API_PACKAGES = [
    "core", "accounts", "events", "billing", "orders", "tracking", "couriers", "geo", "config",
    "notifications",
]  # fmt: skip


def literal_errors_in(path: Path) -> set[tuple[int, str]]:
    """(status, code) of every `ApiError(status, "CODE", …)` and
    `error_response(request, status, "CODE", …)` written with literals."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
        first = {"ApiError": 0, "error_response": 1}.get(name)
        if first is None or len(node.args) < first + 2:
            continue
        status, code = node.args[first : first + 2]
        if isinstance(status, ast.Constant) and isinstance(code, ast.Constant):
            found.add((status.value, code.value))
    return found


def leaf_classes(base: type) -> list[type]:
    subclasses = base.__subclasses__()
    return [leaf for cls in subclasses for leaf in leaf_classes(cls)] if subclasses else [base]


def errors_the_api_answers() -> set[tuple[int, str]]:
    found: set[tuple[int, str]] = set()
    for package in API_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found |= literal_errors_in(path)
    # Domain refusals carry their code; the API layer gives the status (tracking/api.py's
    # REFUSAL_STATUS, events/api.py answers every endpoint refusal with 409).
    found |= {(refusal_status(cls), cls.code) for cls in leaf_classes(BatchRefused)}
    found |= {(409, cls.code) for cls in leaf_classes(EndpointRefused)}
    # The courier API's move refusals (couriers/api.py).
    found |= {(status, code) for code, status in MOVE_REFUSAL_STATUS.items()}
    # DRF's own exceptions, renamed by core.api.exception_handler.
    found |= {(cls.status_code, code) for cls, code in _DRF_CODES}
    return found


def schema_error_list() -> set[tuple[int, str]]:
    response = Client().get("/api/v1/schema/?format=json")
    description = orjson.loads(response.content)["info"]["description"]
    errors = description.split("**Errors.**", 1)[1]
    listed = set()
    for group in errors.split("·"):
        status, codes = group.strip().split(" ", 1)
        codes = re.sub(r"\(.*?\)", "", codes)  # a note beside a code is not a code
        listed |= {(int(status), code.strip(" .\n")) for code in codes.split(",")}
    return listed


def guide_section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def guide_error_table() -> set[tuple[int, str]]:
    listed = set()
    for status, codes in re.findall(r"^\| (\d{3}) \| (.*?) \|", guide_section("Errors"), re.M):
        listed |= {(int(status), code) for code in re.findall(r"`([A-Z][A-Z_]+)`", codes)}
    return listed


def test_the_source_is_read_for_error_codes():
    # The reading itself: codes raised in middleware, permissions, views and domain errors.
    answered = errors_the_api_answers()
    assert {
        (403, "HTTPS_REQUIRED"),
        (411, "LENGTH_REQUIRED"),
        (503, "SERVICE_UNAVAILABLE"),
        (403, "SANDBOX_ONLY"),
        (409, "QUOTE_EXPIRED"),
        (409, "QUOTE_MISMATCH"),
        (409, "QUOTE_USED"),
        (409, "ENDPOINT_DISABLED"),
        (429, "RATE_LIMITED"),
    } <= answered
    assert (exceptions.Throttled.status_code, "RATE_LIMITED") in answered


def test_the_schema_lists_every_error_code_the_api_answers_and_no_other():
    assert schema_error_list() == errors_the_api_answers()


def test_the_schema_lists_the_quote_length_and_availability_errors():
    listed = schema_error_list()
    for status, code in [
        (409, "QUOTE_EXPIRED"),
        (409, "QUOTE_MISMATCH"),
        (409, "QUOTE_USED"),
        (411, "LENGTH_REQUIRED"),
        (503, "SERVICE_UNAVAILABLE"),
    ]:
        assert (status, code) in listed


def test_the_guide_lists_every_error_code_the_api_answers_and_no_other():
    assert guide_error_table() == errors_the_api_answers()


def test_the_guide_states_the_servers_nesting_limit():
    limit = re.search(r"^\| JSON nesting \| (\d+) levels \|", guide_section("Limits"), re.M)
    assert limit and int(limit[1]) == MAX_JSON_DEPTH
    in_errors = re.search(r"nesting deeper than (\d+) levels", guide_section("Errors"))
    assert in_errors and int(in_errors[1]) == MAX_JSON_DEPTH


def test_the_guide_states_how_long_the_sync_order_holds_changes_back():
    held = re.search(r"listed once it is at least\s+(\d+) seconds old", GUIDE.read_text())
    assert held and int(held[1]) == SYNC_MARGIN.total_seconds()


def test_the_guide_is_served_beside_the_schema():
    client = Client()
    guide = client.get("/api/v1/guide/")
    assert guide.status_code == 200
    assert guide["Content-Type"] == "text/html; charset=utf-8"  # a page (test_guide_pages.py)
    assert client.get("/api/v1/guide").content == guide.content  # no redirect either
    # The Markdown it is written in, beside it, as are the other guides'.
    markdown = client.get("/api/v1/guide/api.md")
    assert markdown["Content-Type"] == "text/plain; charset=utf-8"
    assert markdown.content == GUIDE.read_bytes()
    assert "(webhooks.md)" in GUIDE.read_text()
    webhooks = client.get("/api/v1/guide/webhooks.md")
    assert webhooks.content == (ROOT / "docs" / "webhooks.md").read_bytes()
    changelog = client.get("/api/v1/guide/changelog.md")
    assert changelog.content == (ROOT / "docs" / "changelog.md").read_bytes()
    assert "(changelog.md)" in GUIDE.read_text()
    missing = client.get("/api/v1/guide/deployment.md")  # an operator's, not an integrator's
    assert missing.status_code == 404
    assert orjson.loads(missing.content)["error"]["code"] == "NOT_FOUND"

    index = orjson.loads(client.get("/api/v1/").content)["data"]
    assert index["guide_url"] == "http://testserver/api/v1/guide/"
    description = orjson.loads(client.get("/api/v1/schema/?format=json").content)["info"]
    assert "/api/v1/guide/" in description["description"]
    assert "in the repository" not in description["description"]


# Split so that this file does not match itself.
OUTSIDE = re.compile(r"\.\./shared/|\b(?:DESIGN|SPEC)" + r"\.md\b")


def test_no_tracked_file_points_outside_the_repository():
    """A clone has no ../shared: the contract's sections are docs/contract.md's. Only the
    history in docs/decisions.md keeps the old names (contract.md says how they map)."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    pointing = []
    for name in tracked:
        if name == "docs/decisions.md" or not (ROOT / name).is_file():
            continue
        try:
            text = (ROOT / name).read_text()
        except UnicodeDecodeError:
            continue  # images
        pointing += [f"{name}: {m[0]}" for m in OUTSIDE.finditer(text)]
    assert pointing == []


def test_the_webhook_walkthroughs_receiver_is_clear_of_make_runs_ports():
    """webhooks.md's receiver runs beside `make run`: not on a port README suggests for it."""
    walkthrough = (ROOT / "docs" / "webhooks.md").read_text()
    receiver = re.findall(r'HTTPServer\(\("127\.0\.0\.1", (\d+)\)', walkthrough)
    endpoint = re.findall(r'"url": "http://127\.0\.0\.1:(\d+)/webhooks"', walkthrough)
    assert receiver and endpoint == receiver
    make_run = {"8000"} | set(re.findall(r"make run PORT=(\d+)", (ROOT / "README.md").read_text()))
    assert "9000" in make_run
    assert not make_run & set(receiver)


def test_the_readme_starts_with_the_two_commands_and_keeps_history_elsewhere():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert readme.index("```sh\n") < readme.index("\n## ")  # before any section
    assert [line.split()[:2] for line in first_block.splitlines()] == [
        ["make", "run"],
        ["make", "test"],
    ]
    assert "docs/performance.md" in readme and (ROOT / "docs" / "performance.md").is_file()


def test_base_means_the_api_root_in_every_guide():
    """`BASE` is `…/api/v1` wherever a guide sets it, so one guide's examples work in another."""
    guides = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    settings_of_base = [
        (path.name, value)
        for path in guides
        for value in re.findall(r"\bBASE(?:, \w+)? ?= ?\(?\"?([^\s\",]+)", path.read_text())
    ]
    assert len(settings_of_base) >= 4  # README, api.md, sandbox.md, webhooks.md
    assert [s for s in settings_of_base if not s[1].endswith("/api/v1")] == []


def test_the_changelog_names_every_status_event_and_error_a_client_can_meet():
    """A client reading the change log meets every status, event type and error code that
    came after the first version (they are all named in it, with what an older client sees)."""
    text = (ROOT / "docs" / "changelog.md").read_text()
    first_version = {
        "SCHEDULED", "PENDING", "ASSIGNED", "PICKED_UP", "DELIVERED", "FAILED", "CANCELLED",
        "batch.created", "order.status_changed", "wallet.balance_low", "invoice.issued",
        "webhook.test",
    }  # fmt: skip
    later = [s.value for s in DropStatus] + [e.value for e in EventType]
    missing = [name for name in later if name not in first_version and name not in text]
    assert missing == [], f"docs/changelog.md does not name {missing}"
    for code in ("NOT_EDITABLE", "EDIT_REJECTED", "INVALID_TIME_WINDOW"):
        assert code in text
