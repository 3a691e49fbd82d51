"""The batch's database connection terminated mid-transaction (pg_terminate_backend, as an
operator or a failover would) answers a JSON 503 SERVICE_UNAVAILABLE with Retry-After (the
database went away under the request: PostgreSQL says 57P01 for a terminated backend as for a
shutdown), leaves no partial rows, and the retry with the same Idempotency-Key is processed
fresh (docs/contract.md §3, §4 "Atomicity", §16).
"""

from __future__ import annotations

import uuid

import orjson
import pytest
from django.db import connection

from billing.models import Wallet
from orders.models import IdempotencyRecord
from tests.reliability.batch_hold import (
    HOLD_POINTS,
    Background,
    assert_processed_fresh_and_charged_once,
    backend_alive,
    large_batch,
    stored_rows,
)
from tests.reliability.gunicorn_server import WAIT_SECONDS

# Gunicorn, its connection terminated mid-batch: left out of the fast loop.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DROPS = 2000
# What an error must never show a client: a traceback, the driver, the SQL, the database.
LEAKS = (b"Traceback", b'File "', b"psycopg", b"terminating", b"administrator", b"orders_")


def terminate_backend(pid: int) -> bool:
    """pg_terminate_backend, waiting (PostgreSQL 14+) until the backend has exited."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, %s)", [pid, WAIT_SECONDS * 1000])
        return cursor.fetchone()[0]


@pytest.mark.parametrize("point", list(HOLD_POINTS))
def test_a_connection_terminated_mid_batch_is_a_json_503_that_leaves_nothing(
    server, hold, shop, point
):
    wallet = Wallet.objects.get(business=shop.business, environment="sandbox")
    balance_before, before = wallet.balance, stored_rows()
    body = orjson.dumps(large_batch("TERMINATED"))
    idempotency_key = str(uuid.uuid4())
    worker = server.wait_ready()
    hold.hold(HOLD_POINTS[point])

    sent = Background(server.bulk, body, shop.sandbox_key, idempotency_key)
    held = hold.held_backend(sent)
    assert held.has_written
    assert HOLD_POINTS[point].written <= held.locked_for_writing, held
    assert terminate_backend(held.pid)
    crashed = sent.result()

    assert crashed.status == 503, crashed.body[:1000]
    assert crashed.headers["content-type"] == "application/json"
    assert int(crashed.headers["retry-after"]) > 0
    envelope = crashed.json()
    assert envelope["statusCode"] == 503
    assert envelope["success"] is False
    assert envelope["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert envelope["error"]["request_id"] == crashed.headers["x-request-id"]
    for leak in LEAKS:
        assert leak not in crashed.body
    assert not backend_alive(held.pid)
    assert stored_rows() == before
    assert not IdempotencyRecord.objects.filter(key=idempotency_key).exists()
    assert Wallet.objects.get(pk=wallet.pk).balance == balance_before

    hold.remove()
    # A lost database connection costs one request, not the worker: the same one retries.
    assert server.wait_ready() == worker
    retried = server.bulk(body, shop.sandbox_key, idempotency_key)
    assert_processed_fresh_and_charged_once(
        retried,
        wallet=wallet,
        balance_before=balance_before,
        idempotency_key=idempotency_key,
        drops=DROPS,
    )
    replayed = server.bulk(body, shop.sandbox_key, idempotency_key)
    assert replayed.headers.get("idempotent-replayed") == "true"
    assert replayed.body == retried.body
