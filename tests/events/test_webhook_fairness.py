"""One business's hostile receivers never delay another business's webhooks (issue 27).

The attack's shape, with real parts: two real `manage.py db_worker` processes (the
production count, docs/scaling.md), business B with several endpoints whose receiver is a
socket server on loopback that accepts every connection and never answers, B asking for
test events and resends through the API over and over (each once lifted the pause a
timeout put on its endpoint, and held a worker for the whole timeout), while business A's
events go to a healthy receiver. Each of A's deliveries must arrive within 2 s of being due.

The timeout is lowered to 5 s to keep the test short; the retry schedule (1 s, 2 s) keeps
B's pauses short too, so B's receivers are probed nearly all the time: what keeps A on
time is the per-business limit on senders (events.delivery.SENDERS_PER_BUSINESS), not a
long pause or a short timeout. With no limit, B holds both workers and A waits up to 5 s.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
from django.utils import timezone

from events.delivery import SENDERS_PER_BUSINESS
from events.models import Delivery, WebhookEndpoint
from tests.events.webhooks import emit, make_endpoint
from tests.workers import db_worker

pytestmark = pytest.mark.django_db(transaction=True)

ENV = {
    "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
    "WEBHOOK_RETRY_SCHEDULE": "1,2",
    "WEBHOOK_TIMEOUT_SECONDS": "5",
}
ATTACK_SECONDS = 20
ON_TIME = 2.0  # seconds from due to arrival, for each of A's deliveries


class SilentServer:
    """A TCP server on loopback that accepts every connection and never says a word."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed by stop()
            while True:
                connection, _ = self._listener.accept()
                self.accepted.append(connection)  # held open, never read, never answered

    def stop(self) -> None:
        self._listener.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent_server():
    server = SilentServer()
    yield server
    server.stop()


def test_a_business_with_hanging_receivers_never_delays_another(
    alice, bob, api, webhook_receiver, silent_server, tmp_path
):
    healthy = make_endpoint(alice, webhook_receiver.url())
    webhook_receiver.trust(healthy.secret)
    hostile = [make_endpoint(bob, silent_server.url()) for _ in range(5)]
    due_at: dict[str, float] = {}  # A's event id: when it was due (time.monotonic())
    senders_of_b = []  # how many of B's endpoints had a sender, sampled all along

    with (
        db_worker(tmp_path / "one.log", env=ENV),
        db_worker(tmp_path / "two.log", env=ENV),
    ):
        started = time.monotonic()
        while time.monotonic() - started < ATTACK_SECONDS:
            for endpoint in hostile:  # B: a test event and a resend per endpoint, each round
                attack(api, bob, endpoint)
            stamp = time.monotonic()
            [event] = emit(alice)  # A: an event, due now
            due_at[event.public_id] = stamp
            senders_of_b.append(
                WebhookEndpoint.objects.filter(
                    business=bob.business, sending_until__gt=timezone.now()
                ).count()
            )
            time.sleep(0.5)
        webhook_receiver.wait_for(len(due_at), timeout=10)
        silent_server.stop()  # lets a worker stuck on B's receiver stop at once

    lateness = {r.id: r.arrived - due_at[r.id] for r in webhook_receiver.received}
    assert set(lateness) == set(due_at) and len(due_at) >= 8
    assert max(lateness.values()) < ON_TIME, sorted(lateness.values())
    assert all(r.verified for r in webhook_receiver.received)
    # B did hold a sender, each time one at most: the attack ran, and was contained.
    assert max(senders_of_b) == SENDERS_PER_BUSINESS == 1
    assert len(silent_server.accepted) >= 3
    # Its asks were answered and queued; its endpoints are still tried, one after another.
    assert Delivery.objects.filter(endpoint__in=hostile).count() >= 10 * len(hostile)


def attack(api, tenant, endpoint: WebhookEndpoint) -> None:
    path = f"/webhook-endpoints/{endpoint.pk}"
    tested = api.post(f"{path}/test", {}, tenant.sandbox_key)
    assert tested.status_code == 200, tested.content
    delivery = Delivery.objects.filter(endpoint=endpoint).order_by("id").first()
    resent = api.post(f"{path}/deliveries/{delivery.pk}/resend", {}, tenant.sandbox_key)
    assert resent.status_code == 200, resent.content
