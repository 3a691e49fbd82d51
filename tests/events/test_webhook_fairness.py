"""One business's hostile receivers never delay another business's webhooks.

The attack's shape, with real parts: two real `manage.py db_worker` processes (the
production count, docs/scaling.md), business B with several endpoints whose receiver is a
socket server on loopback that accepts every connection and never answers, B asking for
test events and resends through the API over and over (each once lifted the pause a
timeout put on its endpoint, and held a worker for the whole timeout), while businesses A
and C's events go to healthy receivers. Each of A's and C's deliveries must arrive within
2 s of being due.

The timeout is lowered to 5 s to keep the test short; the retry schedule (1 s, 2 s) keeps
B's pauses short too, so B's receivers are probed nearly all the time: what keeps A and C
on time is that a business holds one worker at most, its turn (events.delivery), not a
long pause or a short timeout. Were B to hold both workers, A and C would wait up to 5 s.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
from django.utils import timezone

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
    alice, bob, make_tenant, api, start_receiver, silent_server, tmp_path
):
    carol = make_tenant(name="Carol")
    receivers = {}  # A's and C's healthy receivers
    for tenant in (alice, carol):
        receiver = start_receiver()
        receiver.trust(make_endpoint(tenant, receiver.url()).secret)
        receivers[tenant.business.pk] = receiver
    hostile = [make_endpoint(bob, silent_server.url()) for _ in range(5)]
    due_at: dict[str, float] = {}  # A's and C's event ids: when due (time.monotonic())
    b_sending = []  # whether B's turn was held, sampled all along

    with (
        db_worker(tmp_path / "one.log", env=ENV),
        db_worker(tmp_path / "two.log", env=ENV),
    ):
        started = time.monotonic()
        while time.monotonic() - started < ATTACK_SECONDS:
            for endpoint in hostile:  # B: a test event and a resend per endpoint, each round
                attack(api, bob, endpoint)
            for tenant in (alice, carol):  # A and C: an event each, due now
                stamp = time.monotonic()
                [event] = emit(tenant)
                due_at[event.public_id] = stamp
            b_sending.append(
                WebhookEndpoint.objects.filter(
                    business=bob.business, sending_until__gt=timezone.now()
                ).exists()
            )
            time.sleep(0.5)
        for receiver in receivers.values():
            receiver.wait_for(len(due_at) // 2, timeout=10)
        silent_server.stop()  # lets a worker stuck on B's receiver stop at once

    received = [r for receiver in receivers.values() for r in receiver.received]
    lateness = {r.id: r.arrived - due_at[r.id] for r in received}
    assert set(lateness) == set(due_at) and len(due_at) >= 16
    assert max(lateness.values()) < ON_TIME, sorted(lateness.values())
    assert all(r.verified for r in received)
    # B did hold its turn, nearly all along: the attack ran, and was contained.
    assert sum(b_sending) >= len(b_sending) // 2
    assert len(silent_server.accepted) >= 5  # its endpoints tried at once in its turn
    # Its asks were answered and queued.
    assert Delivery.objects.filter(endpoint__in=hostile).count() >= 10 * len(hostile)


def attack(api, tenant, endpoint: WebhookEndpoint) -> None:
    path = f"/webhook-endpoints/{endpoint.pk}"
    tested = api.post(f"{path}/test", {}, tenant.sandbox_key)
    assert tested.status_code == 200, tested.content
    delivery = Delivery.objects.filter(endpoint=endpoint).order_by("id").first()
    resent = api.post(f"{path}/deliveries/{delivery.pk}/resend", {}, tenant.sandbox_key)
    assert resent.status_code == 200, resent.content
