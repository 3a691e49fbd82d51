"""A task worker asked to stop between tasks (core/management/commands/db_worker.py).

django_tasks_db's worker exits from its signal handler at once when no task runs; a signal
landing inside its claiming transaction (or that transaction's commit) left the connection in
the transaction and the worker exited 1. Ours stops the loop there instead, and exits at once
anywhere else, as the library does.
"""

from __future__ import annotations

import signal

import pytest
from django.db import transaction

from core import stopping
from core.management.commands.db_worker import ResilientWorker


@pytest.fixture
def worker():
    # A forced exit resets the signals' handlers (the library's reset_signals): this
    # process's own are put back after the test.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    made = ResilientWorker(
        queue_names=["default"],
        interval=1,
        batch=False,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
    )
    yield made
    stopping.requested.clear()
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


@pytest.mark.django_db(transaction=True)
def test_a_stop_inside_the_claim_ends_the_loop_after_it(worker):
    with transaction.atomic():
        worker.shutdown(signal.SIGTERM, None)  # no SystemExit inside the transaction
        assert not worker.running
    assert stopping.requested.is_set()


@pytest.mark.django_db(transaction=True)
def test_a_stop_between_claims_exits_at_once(worker):
    from django.db import connection

    connection.ensure_connection()  # open, in autocommit: the worker asleep
    with pytest.raises(SystemExit) as exited:
        worker.shutdown(signal.SIGTERM, None)
    assert exited.value.code == 0


@pytest.mark.django_db(transaction=True)
def test_a_second_stop_inside_the_claim_still_forces_the_exit(worker):
    with transaction.atomic():
        worker.shutdown(signal.SIGTERM, None)
        with pytest.raises(SystemExit) as exited:
            worker.shutdown(signal.SIGTERM, None)  # the library's "press Ctrl+C again"
        assert exited.value.code == 1
