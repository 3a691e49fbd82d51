"""Hostile receivers hold sockets, not the worker (docs/contract.md §28).

The attack, with real parts and ONE real `manage.py db_worker` (as `make run` runs it): ten
businesses with five endpoints each, all pointing at a socket server on loopback that
accepts every connection and never says a word, asking for test events and resends through
the API all along; and another business whose events go to a healthy receiver. Each of its
deliveries must arrive within 1 s of being due, and the worker must still run its other
tasks meanwhile.

The timeout is lowered to 5 s and the retry schedule to 1 s, 2 s to keep the test short and
the hostile endpoints probed nearly all the time: what keeps the other business on time is
the worker's sender keeping every hanging attempt in flight beside its deliveries
(events.delivery), not a long pause or a short timeout. A sender that sent one attempt at a
time, or a business at a time, would keep it waiting 5 s.
"""

from __future__ import annotations

import itertools
import time

import pytest

from events.models import Delivery, WebhookEndpoint
from events.tasks import sweep_deliveries
from tests.events.webhooks import emit, make_endpoint
from tests.webhook_receiver import SilentServer
from tests.workers import db_worker, wait_for_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ENV = {
    "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
    "WEBHOOK_RETRY_SCHEDULE": "1,2",
    "WEBHOOK_TIMEOUT_SECONDS": "5",
}
HOSTILE_BUSINESSES = 10
ENDPOINTS_EACH = 5
ATTACK_SECONDS = 20
ON_TIME = 1.0  # seconds from due to arrival, for each of the healthy business's deliveries


@pytest.fixture
def silent_server():
    server = SilentServer()
    yield server
    server.stop()


def test_fifty_hanging_endpoints_delay_no_other_business_on_one_worker(
    alice, make_tenant, api, webhook_receiver, silent_server, tmp_path
):
    webhook_receiver.trust(make_endpoint(alice, webhook_receiver.url()).secret)
    hostile = []  # (tenant, endpoint)
    for b in range(HOSTILE_BUSINESSES):
        tenant = make_tenant(name=f"Hostile {b}")
        for e in range(ENDPOINTS_EACH):
            hostile.append((tenant, make_endpoint(tenant, silent_server.url(f"/hooks/{b}/{e}"))))
    for tenant in {t.business.pk: t for t, _ in hostile}.values():
        emit(tenant)  # a first delivery to each of its endpoints, before the worker starts
    due_at: dict[str, float] = {}  # the healthy business's event ids: when due (monotonic)
    other_tasks = []  # how long the worker took to run another task, under attack
    in_turn = itertools.cycle(hostile)

    with db_worker(tmp_path / "worker.log", env=ENV) as worker:
        started = time.monotonic()
        while time.monotonic() - started < ATTACK_SECONDS:
            for _ in range(5):  # a test event and a resend, for five endpoints a round
                attack(api, *next(in_turn))
            stamp = time.monotonic()
            [event] = emit(alice)  # due now
            due_at[event.public_id] = stamp
            if len(due_at) % 5 == 0:
                asked = time.monotonic()
                finished = wait_for_task(sweep_deliveries.enqueue().id, timeout=10)
                other_tasks.append((finished.status, time.monotonic() - asked))
            time.sleep(0.3)
        webhook_receiver.wait_for(len(due_at), timeout=10)
        silent_server.stop()  # the hanging attempts end at once: the worker stops sooner

    assert "Traceback" not in worker.log_text(), worker.log_tail()
    lateness = {r.id: r.arrived - due_at[r.id] for r in webhook_receiver.received}
    assert set(lateness) == set(due_at) and len(due_at) >= 20
    assert max(lateness.values()) < ON_TIME, sorted(lateness.values())
    assert all(r.verified for r in webhook_receiver.received)
    # The worker ran its other tasks meanwhile, none waiting for a timeout (5 s).
    assert other_tasks and all(s == "SUCCESSFUL" and t < 2.5 for s, t in other_tasks), other_tasks
    # The attack ran: every hostile endpoint was connected to, all of them at once at first
    # (each held by the server for far longer than the test took to start them)...
    assert len(silent_server.accepted) >= HOSTILE_BUSINESSES * ENDPOINTS_EACH
    # ...and its asks were answered and queued.
    hostile_deliveries = Delivery.objects.filter(endpoint__in=[e for _, e in hostile])
    assert hostile_deliveries.count() >= 2 * len(hostile)


def attack(api, tenant, endpoint: WebhookEndpoint) -> None:
    path = f"/webhook-endpoints/{endpoint.pk}"
    tested = api.post(f"{path}/test", {}, tenant.sandbox_key)
    assert tested.status_code == 200, tested.content
    delivery = Delivery.objects.filter(endpoint=endpoint).order_by("id").first()
    resent = api.post(f"{path}/deliveries/{delivery.pk}/resend", {}, tenant.sandbox_key)
    assert resent.status_code == 200, resent.content
