"""The sandbox test driver (docs/contract.md §5): POST /sandbox/orders/advance and
run_test_driver."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from couriers.models import Driver
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.tracking.helpers import (
    THIS_AFTERNOON,
    advance,
    assert_legal_history,
    cancel,
    entries,
    error_code,
    history_of,
    place,
)

S = DropStatus
TEST_DRIVER = {
    "name": "Sandbox Test Driver",
    "phone": "+85512000000",
    "vehicle": "motorbike",
    "position": None,
}


@pytest.fixture
def sandbox(open_for_business, alice, api):
    """Alice's sandbox key, with the clock in business hours."""
    return alice.sandbox_key


def status_of(drop_id) -> str:
    return Drop.objects.get(pk=drop_id).status


def test_advance_moves_one_step_by_default(sandbox, api):
    ids = place(api, sandbox, "A-1")

    entry = entries(advance(api, sandbox, "A-1"))["A-1"]

    assert "error" not in entry
    assert entry["status"] == S.ASSIGNED == status_of(ids["A-1"])
    assert [e["status"] for e in entry["events"]] == [S.PENDING, S.ASSIGNED]
    assert history_of(ids["A-1"]) == [S.PENDING, S.ASSIGNED]
    assert DeliveryEvent.objects.get(drop_id=ids["A-1"], status=S.ASSIGNED).actor == (
        "sandbox test driver"
    )


def test_a_scheduled_drop_first_moves_to_pending(sandbox, api):
    ids = place(api, sandbox, "S-1", scheduled_at=THIS_AFTERNOON)

    entry = entries(advance(api, sandbox, "S-1"))["S-1"]

    assert entry["status"] == S.PENDING == status_of(ids["S-1"])
    assert entry["driver"] is None


def test_the_test_driver_is_assigned_at_assigned(sandbox, api):
    ids = place(api, sandbox, "A-1")

    entry = entries(advance(api, sandbox, "A-1", to=S.ASSIGNED))["A-1"]

    # On the way: the simulated courier waits at the pickup (tracking/sandbox_driver.py).
    assigned_at = entry["events"][-1]["at"]
    at_pickup = {"lat": entry["pickup"]["lat"], "long": entry["pickup"]["long"], "at": assigned_at}
    assert entry["driver"] == {**TEST_DRIVER, "position": at_pickup}
    order = Order.objects.get(drops__pk=ids["A-1"])
    assert order.driver.is_sandbox_test_driver
    tracked = entries(api.track(["A-1"], sandbox))["A-1"]
    assert tracked["driver"] == {**TEST_DRIVER, "position": at_pickup}


def test_to_walks_the_path_writing_every_intermediate_event_in_order(sandbox, api):
    ids = place(api, sandbox, "S-1", scheduled_at=THIS_AFTERNOON)

    entry = entries(advance(api, sandbox, "S-1", to=S.DELIVERED))["S-1"]

    expected = [S.SCHEDULED, S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert entry["status"] == S.DELIVERED
    assert [e["status"] for e in entry["events"]] == expected
    assert history_of(ids["S-1"]) == expected
    assert status_of(ids["S-1"]) == S.DELIVERED
    assert entry["driver"] == TEST_DRIVER


def test_to_failed_goes_via_picked_up(sandbox, api):
    ids = place(api, sandbox, "F-1")

    entry = entries(advance(api, sandbox, "F-1", to=S.FAILED))["F-1"]

    expected = [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED]
    assert [e["status"] for e in entry["events"]] == expected == history_of(ids["F-1"])
    assert status_of(ids["F-1"]) == S.FAILED


def test_steps_in_a_row_end_at_delivered_then_are_refused(sandbox, api):
    ids = place(api, sandbox, "A-1")
    for expected in (S.ASSIGNED, S.PICKED_UP, S.DELIVERED):
        assert entries(advance(api, sandbox, "A-1"))["A-1"]["status"] == expected

    entry = entries(advance(api, sandbox, "A-1"))["A-1"]

    assert error_code(entry) == "ILLEGAL_TRANSITION"
    assert entry["status"] == S.DELIVERED
    assert history_of(ids["A-1"]) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]


@pytest.mark.parametrize(
    ("setup", "to"),
    [
        ("delivered", None),
        ("delivered", S.FAILED),
        ("cancelled", None),
        ("cancelled", S.DELIVERED),
        ("failed", S.DELIVERED),
        ("assigned", S.PENDING),  # behind the current status
        ("assigned", S.ASSIGNED),  # already there
        ("picked_up", S.ASSIGNED),
    ],
)
def test_an_illegal_move_is_refused_per_identifier_while_others_move(sandbox, api, setup, to):
    ids = place(api, sandbox, "STUCK") | place(api, sandbox, "MOVER", scheduled_at=THIS_AFTERNOON)
    if setup == "cancelled":
        entries(cancel(api, sandbox, "STUCK"))
    else:
        entries(advance(api, sandbox, "STUCK", to=setup.upper()))
    stuck_status = status_of(ids["STUCK"])
    stuck_events = history_of(ids["STUCK"])

    answer = entries(advance(api, sandbox, "STUCK", "MOVER", to=to))

    assert error_code(answer["STUCK"]) == "ILLEGAL_TRANSITION"
    assert answer["STUCK"]["error"]["message"]
    assert answer["STUCK"]["status"] == stuck_status == status_of(ids["STUCK"])
    assert history_of(ids["STUCK"]) == stuck_events
    assert "error" not in answer["MOVER"]
    assert status_of(ids["MOVER"]) == answer["MOVER"]["status"] != S.SCHEDULED


def test_unknown_identifiers_answer_not_found(sandbox, api):
    place(api, sandbox, "A-1")

    response = advance(api, sandbox, "NOPE", "A-1")

    body = response.json()["data"]["orders"]
    assert [e["client_order_id"] for e in body] == ["NOPE", "A-1"]
    assert body[0]["status"] == "NOT_FOUND"
    assert error_code(body[0]) == "NOT_FOUND"
    assert body[1]["status"] == S.ASSIGNED


def test_a_repeated_identifier_moves_once(sandbox, api):
    ids = place(api, sandbox, "A-1")

    answer = advance(api, sandbox, "A-1", "A-1").json()["data"]["orders"]

    assert len(answer) == 1
    assert history_of(ids["A-1"]) == [S.PENDING, S.ASSIGNED]


@pytest.mark.parametrize("to", ["CANCELLED", "SCHEDULED", "delivered", "bogus", "", 5, True])
def test_an_invalid_to_is_400(sandbox, api, to):
    ids = place(api, sandbox, "A-1")

    response = api.post("/sandbox/orders/advance", {"identifiers": ["A-1"], "to": to}, sandbox)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"][0]["field"] == "to"
    assert status_of(ids["A-1"]) == S.PENDING


@pytest.mark.parametrize("to", [["DELIVERED"], {"status": "DELIVERED"}])
def test_a_to_that_is_not_a_string_is_400(sandbox, api, to):
    ids = place(api, sandbox, "A-1")

    response = api.post("/sandbox/orders/advance", {"identifiers": ["A-1"], "to": to}, sandbox)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert status_of(ids["A-1"]) == S.PENDING


def test_every_problem_of_an_advance_body_is_listed(sandbox, api):
    body = {"identifiers": ["A-1", " "], "to": "bogus"}
    response = api.post("/sandbox/orders/advance", body, sandbox)
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["error"]["details"]] == ["identifiers[1]", "to"]


@pytest.mark.parametrize("body", [{}, {"identifiers": []}, {"identifiers": [""]}, ["A-1"]])
def test_bad_identifiers_are_400(sandbox, api, body):
    response = api.post("/sandbox/orders/advance", body, sandbox)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("path", ["/sandbox/orders/advance", "/sandbox/orders/advance/"])
def test_a_live_key_gets_403_sandbox_only_and_nothing_moves(open_for_business, alice, api, path):
    ids = place(api, alice.live_key, "L-1")

    response = api.post(path, {"identifiers": ["L-1"], "to": S.DELIVERED}, alice.live_key)

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SANDBOX_ONLY"
    assert status_of(ids["L-1"]) == S.PENDING
    assert history_of(ids["L-1"]) == [S.PENDING]


def test_a_live_key_gets_403_even_for_a_malformed_body(open_for_business, alice, api):
    response = api.post("/sandbox/orders/advance", {"to": "nowhere"}, alice.live_key)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SANDBOX_ONLY"


def test_a_sandbox_key_never_moves_a_live_drop_with_the_same_id(open_for_business, alice, api):
    live = place(api, alice.live_key, "SAME")
    sandbox = place(api, alice.sandbox_key, "SAME")

    entry = entries(advance(api, alice.sandbox_key, "SAME", to=S.DELIVERED))["SAME"]

    assert entry["drop_id"] == sandbox["SAME"]
    assert entry["environment"] == "sandbox"
    assert status_of(sandbox["SAME"]) == S.DELIVERED
    assert status_of(live["SAME"]) == S.PENDING
    assert history_of(live["SAME"]) == [S.PENDING]
    assert Order.objects.get(drops__pk=live["SAME"]).driver is None
    assert entries(api.track(["SAME"], alice.live_key))["SAME"]["status"] == S.PENDING


def test_a_sandbox_key_can_neither_see_nor_move_a_live_only_drop(open_for_business, alice, api):
    live = place(api, alice.live_key, "LIVE-ONLY")

    moved = entries(advance(api, alice.sandbox_key, "LIVE-ONLY"))["LIVE-ONLY"]
    tracked = entries(api.track(["LIVE-ONLY"], alice.sandbox_key))["LIVE-ONLY"]

    assert moved["status"] == tracked["status"] == "NOT_FOUND"
    assert error_code(moved) == "NOT_FOUND"
    assert "drop_id" not in moved and "drop_id" not in tracked
    assert status_of(live["LIVE-ONLY"]) == S.PENDING


def test_one_business_cannot_move_anothers_sandbox_drop(open_for_business, alice, bob, api):
    ids = place(api, bob.sandbox_key, "B-1")

    entry = entries(advance(api, alice.sandbox_key, "B-1"))["B-1"]

    assert entry["status"] == "NOT_FOUND"
    assert status_of(ids["B-1"]) == S.PENDING


def test_the_test_driver_is_one_row_however_often_it_drives(sandbox, api):
    place(api, sandbox, "A-1", "A-2")
    advance(api, sandbox, "A-1")
    advance(api, sandbox, "A-2", to=S.DELIVERED)

    assert Driver.objects.filter(is_sandbox_test_driver=True).count() == 1
    assert Order.objects.get().driver.name == "Sandbox Test Driver"


def test_run_test_driver_moves_sandbox_drops_two_steps_and_leaves_live_alone(
    open_for_business, alice, api
):
    sandbox = place(api, alice.sandbox_key, "P-1", "P-2")
    scheduled = place(api, alice.sandbox_key, "S-1", scheduled_at=THIS_AFTERNOON)
    almost = place(api, alice.sandbox_key, "NEAR")
    entries(advance(api, alice.sandbox_key, "NEAR", to=S.PICKED_UP))
    done = place(api, alice.sandbox_key, "DONE")
    entries(cancel(api, alice.sandbox_key, "DONE"))
    live = place(api, alice.live_key, "P-1", "L-2")
    out = StringIO()

    call_command("run_test_driver", "--iterations", "2", "--interval", "0", stdout=out)

    assert status_of(sandbox["P-1"]) == status_of(sandbox["P-2"]) == S.PICKED_UP
    assert history_of(sandbox["P-1"]) == [S.PENDING, S.ASSIGNED, S.PICKED_UP]
    assert status_of(scheduled["S-1"]) == S.ASSIGNED
    assert status_of(almost["NEAR"]) == S.DELIVERED  # one step, then nothing left to do
    assert history_of(almost["NEAR"])[-1] == S.DELIVERED
    assert status_of(done["DONE"]) == S.CANCELLED
    for drop_id in live.values():
        assert status_of(drop_id) == S.PENDING
        assert history_of(drop_id) == [S.PENDING]
        assert Order.objects.get(drops__pk=drop_id).driver is None
    for drop_id in [*sandbox.values(), *scheduled.values(), *almost.values()]:
        assert_legal_history(drop_id)
    assert Order.objects.get(drops__pk=sandbox["P-1"]).driver.is_sandbox_test_driver
    assert out.getvalue().splitlines() == [
        "Moved 4 sandbox drop(s) one step.",  # P-1, P-2, S-1, NEAR
        "Moved 3 sandbox drop(s) one step.",  # NEAR is DELIVERED now
    ]
