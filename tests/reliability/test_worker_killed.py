"""A gunicorn worker SIGKILLed in the middle of a large batch leaves no partial rows, and the
retry with the same Idempotency-Key is processed fresh (docs/contract.md §4 "Atomicity").

The worker dies while its batch's transaction has written thousands of rows. PostgreSQL
never receives a COMMIT: as soon as the backend next talks to its client it finds the
socket closed and rolls the whole transaction back.
"""

from __future__ import annotations

import os
import signal
import uuid

import orjson
import pytest

from billing.models import Wallet
from orders.models import IdempotencyRecord
from tests.reliability.batch_hold import (
    HOLD_POINTS,
    Background,
    assert_processed_fresh_and_charged_once,
    backend_alive,
    backend_in_transaction,
    large_batch,
    stored_rows,
)
from tests.reliability.gunicorn_server import wait_for

# A gunicorn worker killed mid-batch: left out of the fast loop.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DROPS = 2000


@pytest.mark.parametrize("point", list(HOLD_POINTS))
def test_a_worker_killed_mid_batch_leaves_nothing_and_the_retry_is_processed_fresh(
    server, hold, shop, point
):
    wallet = Wallet.objects.get(business=shop.business, environment="sandbox")
    balance_before, before = wallet.balance, stored_rows()
    body = orjson.dumps(large_batch("KILLED"))
    idempotency_key = str(uuid.uuid4())
    worker = server.wait_ready()
    hold.hold(HOLD_POINTS[point])

    sent = Background(server.bulk, body, shop.sandbox_key, idempotency_key)
    held = hold.held_backend(sent)
    # Mid-transaction for real: rows written (a transaction id) on every table so far.
    assert held.has_written
    assert HOLD_POINTS[point].written <= held.locked_for_writing, held
    os.kill(worker, signal.SIGKILL)

    # The client sees the connection drop: no status line, no body.
    with pytest.raises(ConnectionError):
        sent.result()
    # The worker is gone, its transaction is not: still open, and nothing of it visible.
    assert backend_in_transaction(held.pid)
    assert stored_rows() == before

    # Let the statement finish: the backend answers a dead socket, reads EOF, rolls back.
    hold.release()
    wait_for("the orphaned transaction to be rolled back", lambda: not backend_alive(held.pid))
    assert stored_rows() == before
    assert not IdempotencyRecord.objects.filter(key=idempotency_key).exists()
    assert Wallet.objects.get(pk=wallet.pk).balance == balance_before

    hold.remove()
    assert server.wait_ready() != worker  # the master replaced the killed worker
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
