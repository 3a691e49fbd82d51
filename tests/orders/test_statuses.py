"""The named sets of a drop's statuses (orders/statuses.py): each pinned against the product's
definitions (docs/contract.md §6, §17, §19, §20), the state machine's legal moves naming them,
and no hand-written copy of a set anywhere else in the apps."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from orders import statuses
from orders.models import initial_status
from orders.statuses import DropStatus
from tracking.lifecycle import ADVANCE_TARGETS, ALLOWED, CANCELLABLE

ROOT = Path(__file__).resolve().parents[2]
S = DropStatus
ALL = set(DropStatus)

EXPECTED = {
    "HAPPY_PATH": [S.SCHEDULED, S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED],
    "RETURN_PATH": [S.FAILED, S.RETURNING, S.RETURNED],
    "ACTIVE_STATUSES": (S.SCHEDULED, S.PENDING, S.ASSIGNED, S.PICKED_UP, S.RETURNING),
    "FINISHED_STATUSES": (S.DELIVERED, S.FAILED, S.RETURNED, S.CANCELLED),
    "INITIAL_STATUSES": (S.SCHEDULED, S.PENDING),
    "EDITABLE_LOCATION": {S.SCHEDULED, S.PENDING},
    "NOT_PICKED_UP": {S.SCHEDULED, S.PENDING, S.ASSIGNED},
    "ON_THE_WAY": {S.ASSIGNED, S.PICKED_UP},
    "STILL_TO_CARRY": (S.ASSIGNED, S.PICKED_UP, S.RETURNING),
    "NO_DROP_OFF_AHEAD": {S.DELIVERED, S.FAILED, S.RETURNING, S.RETURNED, S.CANCELLED},
    "FAILED_ONCE": {S.FAILED, S.RETURNING, S.RETURNED},
    "TO_RETURN": (S.FAILED, S.RETURNING),
    "RETURN_STEPS": {S.RETURNING, S.RETURNED},
    "FAILURE_OUTCOMES": {S.FAILED, S.RETURNED},
    "MOVES_MONEY": {S.CANCELLED, S.RETURNED},
    "COURIER_MOVES": (S.PICKED_UP, S.DELIVERED, S.FAILED, S.RETURNING, S.RETURNED),
    "WINDOW_MILESTONES": (S.PENDING, S.PICKED_UP),
    "COURIER_PAID": (S.DELIVERED, S.RETURNED),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_named_set_has_its_members(name):
    named = getattr(statuses, name)
    expected = EXPECTED[name]
    if isinstance(expected, set):
        assert named == expected
    else:  # an ordered one: its order too
        assert list(named) == list(expected)


def test_every_named_set_of_the_module_is_pinned():
    named = {n for n in vars(statuses) if n.isupper() and not n.startswith("_")}
    assert named == set(EXPECTED)


def _contract_statuses(after: str, until: str) -> set[str]:
    """The `STATUS`es the contract names between two phrases (its lines joined)."""
    text = " ".join((ROOT / "docs" / "contract.md").read_text(encoding="utf-8").split())
    start = text.index(after) + len(after)
    return set(re.findall(r"`([A-Z_]+)`", text[start : text.index(until, start)]))


def test_active_is_the_contracts_definition():
    """§6 and §19: Active = SCHEDULED, PENDING, ASSIGNED, PICKED_UP, RETURNING."""
    assert _contract_statuses("Active = ", ". Illegal moves") == set(statuses.ACTIVE_STATUSES)
    assert set(statuses.FINISHED_STATUSES) == ALL - set(statuses.ACTIVE_STATUSES)


def test_cancellable_is_the_contracts_and_the_state_machines():
    """§6: CANCELLED from SCHEDULED, PENDING or ASSIGNED; the legal moves name that set."""
    said = _contract_statuses("`CANCELLED` from ", ". A drop without")
    assert said == CANCELLABLE == statuses.NOT_PICKED_UP
    assert {s for s, moves in ALLOWED.items() if S.CANCELLED in moves} == CANCELLABLE
    before_pickup = statuses.HAPPY_PATH[: statuses.HAPPY_PATH.index(S.PICKED_UP)]
    assert set(before_pickup) == statuses.NOT_PICKED_UP


def test_the_location_is_editable_where_the_contract_says():
    """§17: the location, window, parcel and cash change only in SCHEDULED or PENDING."""
    said = _contract_statuses("`cod` (§18) only in ", ". A field sent")
    assert said == statuses.EDITABLE_LOCATION


def test_the_paths_are_the_legal_moves():
    for path in (statuses.HAPPY_PATH, statuses.RETURN_PATH):
        for here, there in zip(path, path[1:], strict=False):
            assert there in ALLOWED[here]
    assert set(ALLOWED) == ALL
    assert ALL - {S.SCHEDULED, S.CANCELLED} == ADVANCE_TARGETS


def test_the_sets_that_follow_from_others():
    assert set(statuses.INITIAL_STATUSES) == {initial_status(scheduled=b) for b in (True, False)}
    assert ALL - statuses.NOT_PICKED_UP - {S.PICKED_UP} == statuses.NO_DROP_OFF_AHEAD
    assert set(statuses.RETURN_PATH) == statuses.FAILED_ONCE
    assert list(statuses.TO_RETURN) == statuses.RETURN_PATH[:-1]
    assert set(statuses.RETURN_PATH[1:]) == statuses.RETURN_STEPS
    assert set(statuses.ON_THE_WAY) < set(statuses.STILL_TO_CARRY) <= set(statuses.ACTIVE_STATUSES)


# The apps' code (tests and benchmarks may spell statuses out; migrations record history).
APPS = [
    "core", "geo", "fleet", "accounts", "events", "billing", "orders", "couriers", "tracking",
    "dispatch", "notifications", "dashboard", "console", "agents", "config",
]  # fmt: skip
STATUS = "(SCHEDULED|PENDING|ASSIGNED|PICKED_UP|DELIVERED|FAILED|RETURNING|RETURNED|CANCELLED)"
LITERAL = rf"(DropStatus\.{STATUS}(\.value)?|[\"']{STATUS}[\"'])"
# Two status literals side by side in one collection: (A, B), [A, B], {{A, B}}, IN ('A', 'B').
SIDE_BY_SIDE = rf"{LITERAL}\s*,\s*{LITERAL}"
# A status literal alone on its line: one member of a collection written a line per member.
ALONE = rf"^\s*{LITERAL}\s*,?\s*$"
# Not a collection: names bound to plain strings at once (`_A, _B = DropStatus.A.value, ...`).
PARALLEL_ASSIGNMENT = re.compile(r"^\s*\w+(\s*,\s*\w+)+\s*=\s*")
# The state machine's table of legal moves: each status's next ones (tracking/lifecycle.py).
MOVES_TABLE = re.compile(r"^\s*DropStatus\.[A-Z_]+: frozenset\(\{")


def _grep(pattern: str, *revision: str) -> list[tuple[str, int, str]]:
    """(path, line number, line) of each match in the apps' Python, HTML and JavaScript."""
    paths = [f"{app}/*.{ext}" for app in APPS for ext in ("py", "html", "js")]  # any depth
    # The work tree's new files too (--untracked), or a revision's files as committed.
    where = revision or ("--untracked",)
    args = ["git", "grep", "-n", "-E", "--no-color", pattern, *where, "--", *paths]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False).stdout
    found = []
    for line in out.splitlines():
        where, number, text = line.removeprefix(f"{revision[0]}:" if revision else "").split(":", 2)
        if where != "orders/statuses.py" and "/migrations/" not in where:
            found.append((where, int(number), text))
    return found


def hand_written_sets(*revision: str) -> list[str]:
    """Every place an app spells out two or more statuses together, outside orders/statuses.py."""
    found = [
        f"{where}:{number}: {text.strip()}"
        for where, number, text in _grep(SIDE_BY_SIDE, *revision)
        if not PARALLEL_ASSIGNMENT.match(text)
        and not (where == "tracking/lifecycle.py" and MOVES_TABLE.match(text))
    ]
    alone = {(where, number): text for where, number, text in _grep(ALONE, *revision)}
    found += [
        f"{where}:{number}: {text.strip()}"
        for (where, number), text in sorted(alone.items())
        if (where, number + 1) in alone or (where, number - 1) in alone
    ]
    return found


def test_no_app_spells_out_a_set_of_statuses():
    """A set of statuses is named once, in orders/statuses.py, and imported from there."""
    assert hand_written_sets() == []


def test_the_check_finds_a_hand_written_set(tmp_path):
    """The patterns find each way a copy was written before the sets were named."""
    lines = [
        "ON_THE_WAY = frozenset({DropStatus.ASSIGNED, DropStatus.PICKED_UP})",
        "if to in (DropStatus.RETURNING, DropStatus.RETURNED):",
        "x = frozenset({DropStatus.FAILED.value, DropStatus.RETURNING.value, _RETURNED})",
        "    WHERE status IN ('ASSIGNED', 'PICKED_UP', 'RETURNING')",
    ]
    for line in lines:
        assert re.search(SIDE_BY_SIDE, line), line
    assert re.search(ALONE, "    DropStatus.DELIVERED,")
    assert PARALLEL_ASSIGNMENT.match("_A, _B = DropStatus.PICKED_UP.value, DropStatus.FAILED.value")
    assert not PARALLEL_ASSIGNMENT.match("X = (DropStatus.PICKED_UP, DropStatus.PENDING)")
