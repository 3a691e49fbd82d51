"""Sandbox scenarios (docs/contract.md §14): the test driver walks drops by itself.

The runner (tracking/scenarios.py) is driven here on fixed clocks, step by step; then real
`manage.py db_worker` processes walk whole scenarios on the real clock, webhooks included,
one of them killed with SIGKILL halfway.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import override_settings
from django_tasks_db.models import DBTaskResult

from billing.models import EntryKind, LedgerEntry, Wallet
from events.models import Event, EventType
from orders.models import DeliveryEvent, Drop, DropStatus, UndeliverableAction
from tests.events.webhooks import make_endpoint
from tests.factories import batch, drop, group
from tests.reliability.batch_hold import open_all_day
from tests.reliability.gunicorn_server import wait_for
from tests.tracking.helpers import (
    THIS_AFTERNOON,
    advance,
    assert_legal_history,
    cancel,
    history_of,
    ledger_sum,
)
from tests.webhook_receiver import start_receiver, webhook_receiver
from tests.workers import db_worker
from tracking.scenarios import EN_ROUTE_AT, PICKED_UP_AT, SAMPLE_PHOTO, run_due_scenarios
from tracking.selectors import entries_by_drop_id
from tracking.tasks import run_sandbox_scenarios

__all__ = ["start_receiver", "webhook_receiver"]  # fixtures

S = DropStatus
STEP = 10  # SANDBOX_STEP_SECONDS's default


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def sandbox(open_for_business, alice):
    return alice.sandbox_key


def start(api, key, *scenarios: str, pin: bool = False, **pickup) -> dict[str, str]:
    """One drop per scenario (client_order_id = the scenario); client_order_id → drop id."""
    extra = {"dropoff_verification": {"pin": True}} if pin else {}
    drops = [{**drop(s), "sandbox_scenario": s, **extra} for s in scenarios]
    response = api.bulk(batch(group(*drops, **pickup)), key)
    assert response.status_code == 200, response.content
    return {o["client_order_id"]: o["drop_id"] for o in response.json()["data"]["orders"]}


def step(clock, times: int = 1) -> None:
    """Move the clock one step on and run the scenarios, `times` over."""
    for _ in range(times):
        clock.shift(timedelta(seconds=STEP))
        run_due_scenarios()


def row(drop_id) -> Drop:
    return Drop.objects.get(pk=drop_id)


def test_deliver_walks_to_delivered_one_step_each_time_with_the_courier_moving(sandbox, api, clock):
    drop_id = start(api, sandbox, "deliver", pin=True)["deliver"]

    run_due_scenarios()  # not due yet: nothing moves
    assert row(drop_id).status == S.PENDING
    seen = []
    for _ in range(4):
        step(clock)
        current = row(drop_id)
        seen.append((current.status, current.courier_progress))

    assert seen == [
        (S.ASSIGNED, 0.0),
        (S.PICKED_UP, PICKED_UP_AT),
        (S.PICKED_UP, EN_ROUTE_AT),
        (S.DELIVERED, None),
    ]
    done = row(drop_id)
    assert done.scenario_next_at is None
    assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert_legal_history(drop_id)
    entry = entries_by_drop_id([drop_id])[drop_id]
    assert entry["proof_of_delivery"]["method"] == "pin"  # the test driver had the PIN
    assert entry["proof_of_delivery"]["received_by"] == "Sandbox recipient"
    assert entry["proof_of_delivery"]["photo_url"]
    assert done.pod_photo.name == SAMPLE_PHOTO
    # One order.status_changed per move, none for the courier moving on.
    changes = Event.objects.filter(type=EventType.ORDER_STATUS_CHANGED).order_by("seq")
    assert [e.data["status"] for e in changes] == [S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert [e.data["sequence"] for e in changes] == [2, 3, 4]
    step(clock, 2)  # a finished scenario stays finished
    assert history_of(drop_id)[-1] == S.DELIVERED and len(history_of(drop_id)) == 4


def test_fail_fails_recipient_unavailable_then_walks_back_to_returned_and_charges_the_return(
    sandbox, api, clock, alice
):
    wallet = Wallet.objects.get(business=alice.business, environment="sandbox")
    drop_id = start(api, sandbox, "fail")["fail"]
    charged = Wallet.objects.get(pk=wallet.pk).balance

    step(clock, 4)

    assert row(drop_id).status == S.FAILED
    entry = entries_by_drop_id([drop_id])[drop_id]
    assert entry["failure"]["reason"] == "RECIPIENT_UNAVAILABLE"
    assert Wallet.objects.get(pk=wallet.pk).balance == charged < Decimal("100.00")
    step(clock)
    assert (row(drop_id).status, row(drop_id).courier_progress) == (S.RETURNING, None)
    step(clock)
    done = row(drop_id)
    assert (done.status, done.scenario_next_at) == (S.RETURNED, None)
    assert done.return_received_by == "Sandbox pickup desk"
    assert history_of(drop_id) == [
        S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED, S.RETURNING, S.RETURNED,
    ]  # fmt: skip
    assert_legal_history(drop_id)
    fee = (done.price / 2).quantize(Decimal("0.01"))
    assert LedgerEntry.objects.get(kind=EntryKind.RETURN_FEE).amount == -fee
    assert Wallet.objects.get(pk=wallet.pk).balance == charged - fee == ledger_sum(wallet)
    step(clock, 2)  # a returned scenario stays returned
    assert len(history_of(drop_id)) == 6


def test_fail_of_a_drop_to_dispose_of_ends_at_failed(sandbox, api, clock):
    drop_id = start(api, sandbox, "fail")["fail"]
    Drop.objects.filter(pk=drop_id).update(undeliverable_action=UndeliverableAction.DISPOSE)

    step(clock, 6)

    done = row(drop_id)
    assert (done.status, done.scenario_next_at) == (S.FAILED, None)
    assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PICKED_UP, S.FAILED]
    assert not LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE).exists()


def test_cancel_by_courier_cancels_after_assigned_and_refunds(sandbox, api, clock, alice):
    wallet = Wallet.objects.get(business=alice.business, environment="sandbox")
    before = wallet.balance
    drop_id = start(api, sandbox, "cancel_by_courier")["cancel_by_courier"]
    assert Wallet.objects.get(pk=wallet.pk).balance < before

    step(clock, 2)

    assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.CANCELLED]
    after = Wallet.objects.get(pk=wallet.pk)
    assert after.balance == before == ledger_sum(after)
    assert row(drop_id).scenario_next_at is None and row(drop_id).courier_progress is None


def test_a_scheduled_scenario_drop_starts_walking_at_its_pickup_time(sandbox, api, clock):
    ids = start(api, sandbox, "deliver", "fail", pickup_scheduled_at=THIS_AFTERNOON)
    pickup_at = datetime.fromisoformat(THIS_AFTERNOON)
    assert {row(i).scenario_next_at for i in ids.values()} == {pickup_at}

    step(clock, 5)
    clock.move_to(pickup_at - timedelta(seconds=1))
    run_due_scenarios()

    assert {row(i).status for i in ids.values()} == {S.SCHEDULED}
    clock.move_to(pickup_at)
    run_due_scenarios()
    assert {row(i).status for i in ids.values()} == {S.PENDING}
    step(clock, 4)
    assert row(ids["deliver"]).status == S.DELIVERED
    assert row(ids["fail"]).status == S.FAILED
    moves = DeliveryEvent.objects.filter(drop_id__in=ids.values()).exclude(status=S.SCHEDULED)
    assert min(moves.values_list("at", flat=True)) >= pickup_at


def test_the_runs_wait_for_the_first_step_due_not_one_every_step(sandbox, api, clock):
    start(api, sandbox, "deliver", pickup_scheduled_at=THIS_AFTERNOON)
    DBTaskResult.objects.all().delete()

    run_sandbox_scenarios.call()  # as the minute's sweep runs it

    queued = DBTaskResult.objects.filter(task_path=run_sandbox_scenarios.module_path)
    assert list(queued.values_list("run_after", flat=True)) == [
        datetime.fromisoformat(THIS_AFTERNOON)
    ]


def test_manual_and_plain_drops_are_never_walked(sandbox, api, clock):
    ids = start(api, sandbox, "manual")
    ids |= {
        "plain": api.bulk(batch(group(drop("plain"))), sandbox).json()["data"]["orders"][0][
            "drop_id"
        ]
    }

    step(clock, 5)

    assert {row(i).status for i in ids.values()} == {S.PENDING}


def test_a_drop_the_business_moved_meanwhile_is_taken_from_where_it_is(sandbox, api, clock):
    ids = start(api, sandbox, "deliver", "fail")
    advance(api, sandbox, "deliver", to="PICKED_UP")  # by hand, before the first step
    cancel(api, sandbox, "fail")

    step(clock)

    assert row(ids["deliver"]).status == S.PICKED_UP
    assert row(ids["deliver"]).courier_progress == EN_ROUTE_AT  # went on from PICKED_UP
    assert row(ids["fail"]).status == S.CANCELLED and row(ids["fail"]).scenario_next_at is None
    step(clock)
    assert row(ids["deliver"]).status == S.DELIVERED
    assert_legal_history(ids["deliver"])


def test_another_business_s_live_drop_without_a_scenario_is_never_stepped(sandbox, api, clock, bob):
    mine = start(api, sandbox, "deliver")["deliver"]
    theirs = api.bulk(batch(group(drop("B-1"))), bob.live_key).json()["data"]["orders"][0]

    step(clock, 4)

    assert row(mine).status == S.DELIVERED
    assert row(theirs["drop_id"]).status == S.PENDING


@pytest.mark.django_db(transaction=True)
def test_two_runners_at_once_step_each_drop_once(open_for_business, make_tenant, api, clock):
    rich = make_tenant(sandbox_balance="10000.00")
    body = batch(group(*[{**drop(f"R-{i}"), "sandbox_scenario": "deliver"} for i in range(200)]))
    assert api.bulk(body, rich.sandbox_key).json()["data"]["counts"]["accepted"] == 200
    clock.shift(timedelta(seconds=STEP))
    barrier = threading.Barrier(2)
    stepped = []

    def runner():
        try:
            barrier.wait()
            stepped.append(run_due_scenarios().stepped)
        finally:
            connection.close()

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sum(stepped) == 200  # SKIP LOCKED: the two split the drops, none twice
    assigned = DeliveryEvent.objects.filter(status=S.ASSIGNED).values_list("drop_id", flat=True)
    assert len(assigned) == 200 == len(set(assigned))
    changes = Event.objects.filter(type=EventType.ORDER_STATUS_CHANGED)
    assert changes.count() == 200


LOOPBACK = {
    "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
    "WEBHOOK_RETRY_SCHEDULE": "1,2",
    "SANDBOX_STEP_SECONDS": "0.4",
}


@pytest.mark.django_db(transaction=True)
@override_settings(SANDBOX_STEP_SECONDS=0.4)
def test_a_worker_walks_every_scenario_to_its_end_and_each_step_is_a_signed_webhook(
    make_tenant, api, webhook_receiver, tmp_path
):
    open_all_day()
    shop = make_tenant(name="Scenario Shop", sandbox_balance="50.00")
    endpoint = make_endpoint(shop, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret)
    wallet = Wallet.objects.get(business=shop.business, environment="sandbox")

    with db_worker(tmp_path / "worker.log", env=worker_env(tmp_path)):
        ids = start(api, shop.sandbox_key, "deliver", "fail", "cancel_by_courier", pin=True)
        wait_for("every scenario to end", scenarios_over, timeout=60)
        # batch.created, then 3 + 5 + 2 status changes, and where the simulated courier
        # moved (order.courier_position: tracking/sandbox_driver.py).
        positions = Event.objects.filter(type=EventType.ORDER_COURIER_POSITION).count()
        assert positions >= 2  # picked up and en route, at least once each
        received = webhook_receiver.wait_for(11 + positions, timeout=30)

    assert {i: row(d).status for i, d in ids.items()} == {
        "deliver": S.DELIVERED,
        "fail": S.RETURNED,
        "cancel_by_courier": S.CANCELLED,
    }
    changes = [r.json for r in received if r.json["type"] == EventType.ORDER_STATUS_CHANGED]
    assert all(r.verified for r in received)
    assert set(Counter(r.id for r in received).values()) == {1}
    by_drop: dict[str, list[dict]] = {}
    for change in changes:
        by_drop.setdefault(change["data"]["client_order_id"], []).append(change["data"])
    for client_order_id, seen in by_drop.items():
        seen.sort(key=lambda data: data["sequence"])
        assert [d["sequence"] for d in seen] == list(range(2, 2 + len(seen))), client_order_id
    assert [d["status"] for d in by_drop["deliver"]] == [S.ASSIGNED, S.PICKED_UP, S.DELIVERED]
    assert by_drop["deliver"][-1]["proof_of_delivery"]["method"] == "pin"
    assert [d["status"] for d in by_drop["fail"]] == [
        S.ASSIGNED, S.PICKED_UP, S.FAILED, S.RETURNING, S.RETURNED,
    ]  # fmt: skip
    assert by_drop["fail"][-1]["failure"]["reason"] == "RECIPIENT_UNAVAILABLE"
    assert by_drop["fail"][-1]["return"]["received_by"] == "Sandbox pickup desk"
    assert [d["status"] for d in by_drop["cancel_by_courier"]] == [S.ASSIGNED, S.CANCELLED]
    after = Wallet.objects.get(pk=wallet.pk)
    assert after.balance == ledger_sum(after) >= 0


@pytest.mark.django_db(transaction=True)
@override_settings(SANDBOX_STEP_SECONDS=0.4)
def test_a_scenario_goes_on_after_its_worker_is_killed(make_tenant, api, tmp_path):
    open_all_day()
    shop = make_tenant(name="Killed Shop", sandbox_balance="50.00")

    with db_worker(tmp_path / "first.log", env=worker_env(tmp_path)) as first:
        ids = start(api, shop.sandbox_key, "deliver", "cancel_by_courier")
        wait_for("a first step", lambda: row(ids["deliver"]).status != S.PENDING, timeout=30)
        first.kill()  # SIGKILL, wherever it is: between runs or inside one
    with db_worker(tmp_path / "second.log", env=worker_env(tmp_path)):
        wait_for("every scenario to end", scenarios_over, timeout=60)

    assert row(ids["deliver"]).status == S.DELIVERED
    assert row(ids["cancel_by_courier"]).status == S.CANCELLED
    for drop_id in ids.values():
        assert_legal_history(drop_id)
        # No step taken twice, whatever the kill interrupted.
        assert len(history_of(drop_id)) == len(set(history_of(drop_id)))


def worker_env(tmp_path) -> dict[str, str]:
    return {
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "WEBHOOK_RETRY_SCHEDULE": "1,2",
        "SANDBOX_STEP_SECONDS": "0.4",
        "MEDIA_ROOT": str(tmp_path / "media"),
    }


def scenarios_over() -> bool:
    return not Drop.objects.filter(scenario_next_at__isnull=False).exists()
