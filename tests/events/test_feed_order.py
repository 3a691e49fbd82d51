"""GET /events pages by seq: within one feed, seq order must be commit order, or a client's
cursor could pass an event that commits later with a smaller seq (events.services.lock_feeds).
Real threads on PostgreSQL."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import transaction
from django.utils import timezone

from events.models import Event
from events.services import record_events
from tests.helpers import in_own_connection, wait_until
from tests.orders.conftest import sessions_waiting_on_a_lock

pytestmark = pytest.mark.django_db(transaction=True)


def write_event(tenant, name: str, hold: threading.Event | None = None):
    def work():
        with transaction.atomic():
            record_events(
                business_id=tenant.business.pk,
                environment="sandbox",
                event_type="batch.created",
                payloads=[{"name": name}],
                at=timezone.now(),
            )
            if hold is not None:
                hold.wait(20)

    return lambda: in_own_connection(work)


def names(tenant) -> list[str]:
    feed = Event.objects.filter(business=tenant.business, environment="sandbox").order_by("seq")
    return [e.data["name"] for e in feed]


def test_a_later_writer_of_the_same_feed_commits_after_the_earlier_one(db, alice, bob):
    hold = threading.Event()
    with ThreadPoolExecutor(max_workers=3) as pool:
        first = pool.submit(write_event(alice, "first", hold))
        time.sleep(0.3)  # first holds its transaction, event written, uncommitted
        second = pool.submit(write_event(alice, "second"))
        wait_until(lambda: sessions_waiting_on_a_lock() >= 1)
        # Another business's feed is not held up.
        pool.submit(write_event(bob, "bob")).result(timeout=10)
        assert names(bob) == ["bob"]
        assert names(alice) == []  # nothing committed yet: nothing a cursor could pass
        assert not second.done()

        hold.set()
        first.result(timeout=10)
        second.result(timeout=10)

    assert names(alice) == ["first", "second"]
