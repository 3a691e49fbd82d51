"""Webhooks delivered by real `manage.py db_worker` processes on PostgreSQL
(docs/contract.md §11, §15).

The workers run the production settings in their own processes (tests/workers.py), so each
test passes what it changes as environment variables: loopback allowed (the receiver is on
127.0.0.1; the SSRF test keeps production's refusal), a short retry schedule. The receiver
(tests/webhook_receiver.py) verifies every signature with the `standardwebhooks` library.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from django.db import connection
from django.utils import timezone

from events.models import Delivery, DeliveryStatus, Event, EventType
from events.tasks import send_due_deliveries_of, sweep_deliveries
from tests.events.webhooks import deliveries_of, emit, make_endpoint
from tests.reliability.batch_hold import large_batch, open_all_day
from tests.reliability.gunicorn_server import wait_for
from tests.tracking.helpers import advance, entries
from tests.workers import Worker, db_worker, wait_until_idle

# Real task workers against a receiver, some waiting out a 10 s timeout: left out of the
# fast loop.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LOOPBACK = {"WEBHOOK_ALLOW_PRIVATE_URLS": "true", "WEBHOOK_RETRY_SCHEDULE": "1,2"}


@pytest.fixture
def shop(make_tenant):
    """A sandbox account that can afford 1000 drops, in an area open at any real hour."""
    open_all_day()
    return make_tenant(name="Big Shop", sandbox_balance="10000.00")


def settled(endpoint) -> bool:
    return not Delivery.objects.filter(endpoint=endpoint, status=DeliveryStatus.PENDING).exists()


def test_1000_drops_give_one_batch_created_then_1000_status_changes_each_delivered_once(
    shop, api, webhook_receiver, tmp_path
):
    endpoint = make_endpoint(shop, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret)

    with (
        db_worker(tmp_path / "one.log", env=LOOPBACK),
        db_worker(tmp_path / "two.log", env=LOOPBACK),
    ):
        response = api.bulk(large_batch("WH", groups=10, drops_per_group=100), shop.sandbox_key)
        assert response.json()["data"]["counts"]["accepted"] == 1000
        [created] = webhook_receiver.wait_for(1)
        wait_until_idle()
        assert len(webhook_receiver.received) == 1  # one event for the batch, none per drop
        assert created.verified and created.json["type"] == EventType.BATCH_CREATED
        assert created.json["data"]["counts"] == {"total": 1000, "accepted": 1000, "rejected": 0}

        orders = response.json()["data"]["orders"]
        moved = entries(advance(api, shop.sandbox_key, *[o["client_order_id"] for o in orders]))
        assert {entry["status"] for entry in moved.values()} == {"ASSIGNED"}
        received = webhook_receiver.wait_for(1001, timeout=60)
        wait_until_idle()
        wait_for("every delivery settled", lambda: settled(endpoint))

    received = webhook_receiver.received
    status_changes = [r for r in received if r.json["type"] == EventType.ORDER_STATUS_CHANGED]
    assert len(status_changes) == 1000 == len(received) - 1
    assert all(r.verified for r in received)
    # Exactly once per webhook-id, and each is one of the events written.
    assert set(Counter(r.id for r in received).values()) == {1}
    written = Event.objects.filter(business=shop.business).values_list("public_id", flat=True)
    assert {r.id for r in received} == set(written)
    assert {r.json["data"]["previous_status"] for r in status_changes} == {"PENDING"}
    assert {r.json["data"]["status"] for r in status_changes} == {"ASSIGNED"}
    assert {d.status for d in deliveries_of(endpoint)} == {DeliveryStatus.SUCCEEDED}


def test_the_worker_retries_on_schedule_until_the_receiver_answers(
    alice, webhook_receiver, tmp_path
):
    endpoint = make_endpoint(alice, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret).answer(500, 500)  # then 200

    with db_worker(tmp_path / "worker.log", env=LOOPBACK):
        [event] = emit(alice)
        first, second, third = webhook_receiver.wait_for(3, timeout=30)
        wait_for("the delivery to settle", lambda: settled(endpoint))

    assert [r.id for r in (first, second, third)] == [event.public_id] * 3
    assert all(r.verified for r in (first, second, third))
    # The schedule is 1 s then 2 s after each failure (plus a worker's poll): never sooner;
    # the default schedule's 5 s then 300 s would not have brought all three in time.
    assert second.arrived - first.arrived >= 1
    assert third.arrived - second.arrived >= 2
    [delivery] = deliveries_of(endpoint)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SUCCEEDED, 3)
    assert [a.status_code for a in delivery.log.all()] == [500, 500, 200]
    assert len(webhook_receiver.received) == 3


def test_a_worker_killed_mid_delivery_loses_nothing(alice, webhook_receiver, tmp_path):
    # A 2 s timeout makes the leases 10 s (events.delivery.lease_seconds): the wait below.
    env = {**LOOPBACK, "WEBHOOK_TIMEOUT_SECONDS": "2"}
    endpoint = make_endpoint(alice, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret).hang()
    first = Worker(connection.settings_dict, tmp_path / "first.log", env=env).start()
    try:
        [event] = emit(alice)
        webhook_receiver.wait_for(1)  # the request is in flight...
    finally:
        first.kill()  # ...when the worker is SIGKILLed
    webhook_receiver.release()  # from now on it answers 200

    [delivery] = deliveries_of(endpoint)
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 0
    assert delivery.next_attempt_at > timezone.now()  # still leased to the dead worker
    assert send_due_deliveries_of(endpoint.pk) == 0 and sweep_deliveries.call() == 0

    with db_worker(tmp_path / "second.log", env=env):
        wait_for("the lease to run out", lambda: is_due(delivery), timeout=20)
        sweep_deliveries.enqueue()  # the minute's sweep (core/schedule.py)
        webhook_receiver.wait_for(2)
        wait_for("the delivery to settle", lambda: settled(endpoint))

    # At least once: the killed attempt reached the receiver, the second one was answered.
    assert webhook_receiver.ids() == [event.public_id] * 2
    assert all(r.verified for r in webhook_receiver.received)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SUCCEEDED, 1)
    assert [a.status_code for a in delivery.log.all()] == [200]


def test_a_hanging_receiver_delays_neither_the_api_nor_other_businesses(
    shop, alice, api, start_receiver, tmp_path
):
    hanging, healthy, elsewhere = start_receiver().hang(), start_receiver(), start_receiver()
    stuck = make_endpoint(shop, hanging.url())
    fine = make_endpoint(shop, healthy.url())
    other = make_endpoint(alice, elsewhere.url())
    hanging.trust(stuck.secret)
    healthy.trust(fine.secret)
    elsewhere.trust(other.secret)

    with (
        db_worker(tmp_path / "one.log", env=LOOPBACK),
        db_worker(tmp_path / "two.log", env=LOOPBACK),
    ):
        started = time.monotonic()
        bulk(api, shop, "first")
        hanging.wait_for(1)  # one worker is now held by the hanging endpoint
        healthy.wait_for(1, timeout=8)
        # While it hangs: the API answers, its business's other endpoint gets each batch's
        # event, and another business's events reach it, though every batch also asks for
        # tasks for the hanging endpoint (they wake a worker's sender, which has the hanging
        # attempt in flight beside the others). "While": the hanging attempt, 10 s long,
        # is not recorded yet when they are all in (bounds by order, not by the clock).
        for n in range(1, 5):
            bulk(api, shop, f"batch-{n}")
            [event] = emit(alice)
            assert elsewhere.wait_for(n, timeout=8)[-1].id == event.public_id
            healthy.wait_for(n + 1, timeout=8)
        assert not stuck.deliveries.exclude(attempts=0).exists()  # the first still hangs
        assert len(hanging.received) == 1
        wait_for("the timeout", lambda: stuck.deliveries.filter(attempts=1).exists(), timeout=30)
        took = time.monotonic() - started
        # As the timeout left them (the pause is 2 s here: a probe may follow at any time).
        attempts = list(stuck.deliveries.order_by("id").values_list("attempts", flat=True))
        stuck.refresh_from_db()
        paused_when_timed_out = stuck.paused_until > timezone.now()

    attempt = stuck.deliveries.order_by("id").first().log.first()
    assert attempt.status_code is None and attempt.error == "Timed out after 10 s."
    # It waited out the timeout, and no longer than the test watched it.
    assert 10_000 <= attempt.duration_ms <= took * 1000
    assert all(r.verified for r in healthy.received) and len(healthy.received) == 5
    assert [r.json["data"]["client_batch_id"] for r in healthy.received] == [
        "first-batch",
        *[f"batch-{n}-batch" for n in range(1, 5)],
    ]
    # The others wait, due, for the pause to end: one probe then, not one hang per event.
    assert paused_when_timed_out and attempts == [1, 0, 0, 0, 0]


def test_a_hanging_endpoint_never_delays_its_business_other_endpoints_on_one_worker(
    shop, api, start_receiver, tmp_path
):
    hanging, healthy = start_receiver().hang(), start_receiver()
    stuck = make_endpoint(shop, hanging.url())
    fine = make_endpoint(shop, healthy.url())
    healthy.trust(fine.secret)

    with db_worker(tmp_path / "worker.log", env=LOOPBACK):  # one worker, one sender
        bulk(api, shop, "first")
        hanging.wait_for(1)
        healthy.wait_for(1, timeout=8)
        for n in range(1, 6):  # each batch's event, due at once, arrives
            bulk(api, shop, f"batch-{n}")
            healthy.wait_for(n + 1, timeout=8)
            time.sleep(0.5)
        assert len(hanging.received) == 1
        # All while the first attempt still hangs (its 10 s timeout not recorded yet), and
        # none of its endpoint's others tried meanwhile: bounds by order, not by the clock.
        assert not stuck.deliveries.exclude(attempts=0).exists()

    assert all(r.verified for r in healthy.received)
    assert [r.json["data"]["client_batch_id"] for r in healthy.received] == [
        "first-batch",
        *[f"batch-{n}-batch" for n in range(1, 6)],
    ]


def test_a_worker_asked_to_stop_mid_flight_stops_after_the_attempts_under_way(
    alice, webhook_receiver, tmp_path
):
    """A graceful stop (SIGTERM) waits for the attempts in flight, records them, and starts
    no more: what is left stays due for the next worker."""
    endpoint = make_endpoint(alice, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret).slow(1.0)  # 20 answers would take 20 s
    worker = Worker(connection.settings_dict, tmp_path / "worker.log", env=LOOPBACK).start()
    try:
        emit(alice, 20)
        webhook_receiver.wait_for(1)
        asked = time.monotonic()
        worker.stop()  # fails the test if the worker has not exited in STOP_SECONDS
        took = time.monotonic() - asked
    finally:
        worker.kill()

    # The rest would be 19 answers of 1 s each, 5 at a time: the stop waits for far less.
    assert took < 10, f"the stop took {took:.1f} s"
    sent = len(webhook_receiver.received)
    assert 1 <= sent < 12
    assert Delivery.objects.filter(endpoint=endpoint).exclude(attempts=0).count() == sent
    pending = Delivery.objects.filter(endpoint=endpoint, status=DeliveryStatus.PENDING)
    assert pending.count() == 20 - sent  # none lost: the unsent are left to the next worker
    # and none is left leased to the stopped worker: due at once for the next one
    assert not pending.filter(next_attempt_at__gt=timezone.now()).exists()


def is_due(delivery: Delivery) -> bool:
    """Due, or already sent: a worker's sender sends it the moment its lease ends."""
    due = Delivery.objects.get(pk=delivery.pk).next_attempt_at
    return due is None or due <= timezone.now()


def bulk(api, shop, client_batch_id: str) -> None:
    response = api.bulk(large_batch(client_batch_id, groups=1, drops_per_group=2), shop.sandbox_key)
    assert response.status_code == 200, response.content


def test_internal_addresses_are_refused_at_delivery_with_production_settings(
    alice, webhook_receiver, tmp_path
):
    port = webhook_receiver.port
    urls = [
        f"http://127.0.0.1:{port}/hooks",
        "http://10.0.0.1/hooks",
        f"http://[::1]:{port}/hooks",
        "https://169.254.169.254/latest/meta-data",
        f"https://localhost:{port}/hooks",
    ]
    endpoints = [make_endpoint(alice, url) for url in urls]

    with db_worker(tmp_path / "worker.log"):  # WEBHOOK_ALLOW_PRIVATE_URLS unset: production
        emit(alice)
        # The tasks only wake the worker's sender: wait for the attempts themselves.
        attempted = Delivery.objects.filter(endpoint__in=endpoints).exclude(attempts=0)
        wait_for("every delivery attempted", lambda: attempted.count() == len(endpoints))

    for endpoint in endpoints:
        [delivery] = deliveries_of(endpoint)
        attempt = delivery.log.get()
        assert attempt.status_code is None and attempt.error.startswith("Refused: "), attempt
    assert webhook_receiver.received == []
