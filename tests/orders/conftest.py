"""Fixtures of the order tests: holding a batch inside its transaction."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from orders import services

WAIT_SECONDS = 20


@pytest.fixture
def first_batch_held(monkeypatch):
    """Hold the first batch that opens its till; the returned Event lets it go on, and its
    `holding` Event is set once that batch is held (its claims taken)."""
    release = threading.Event()
    release.holding = threading.Event()
    first = threading.Lock()
    open_till = services.open_till

    def held_open_till(**kwargs):
        till = open_till(**kwargs)
        if first.acquire(blocking=False):
            release.holding.set()
            release.wait(WAIT_SECONDS)
        return till

    monkeypatch.setattr(services, "open_till", held_open_till)
    yield release
    release.set()


def sessions_waiting_on_a_lock() -> int:
    return _sessions_where("wait_event_type = 'Lock'")


def sessions_in_transaction() -> int:
    """Sessions holding a transaction open between statements (e.g. a held batch)."""
    return _sessions_where("state = 'idle in transaction'")


def _sessions_where(condition: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            f"WHERE datname = current_database() AND {condition}"
        )
        return cursor.fetchone()[0]
