"""Assertions and constants shared across the suite's test modules."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from django.db import connection

from billing.models import LedgerEntry
from orders.models import Batch, DeliveryEvent, Drop, DropStatus, IdempotencyRecord, Order

# A gazetteer place of the demo region (docs/contract.md §8), as an address object.
ROYAL_PALACE = {
    "complete_address": "Royal Palace, Phnom Penh",
    "city": "Phnom Penh",
    "country": "KH",
}

# The fields of a found tracking entry (docs/contract.md §5).
TRACKING_ENTRY_KEYS = {
    "tracking_url",
    "proof_of_delivery",
    "failure",
    "return",
    "dropoff_window",
    "window_status",
    "notes",
    "undeliverable_action",
    "recipient_language",
    "parcel",
    "cod",
    "price_breakdown",
    "stop_sequence",
    "client_order_id",
    "status",
    "drop_id",
    "short_code",
    "pass_order_id",
    "batch_id",
    "external_waybill",
    "environment",
    "pickup",
    "dropoff",
    "driver",
    "price",
    "currency",
    "created_at",
    "updated_at",
    "events",
    "sequence",
    "eta",
}


def assert_error(response, status: int, code: str) -> dict:
    """The error envelope of docs/contract.md §3; returns its `error` object."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"statusCode", "success", "error"}
    assert body["statusCode"] == status
    assert body["success"] is False
    error = body["error"]
    assert set(error) == {"code", "message", "details", "request_id"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], list)
    assert error["request_id"] == response["X-Request-Id"]
    return error


def assert_nothing_stored() -> None:
    """No batch left any row behind."""
    assert Batch.objects.count() == 0
    assert Order.objects.count() == 0
    assert Drop.objects.count() == 0
    assert DeliveryEvent.objects.count() == 0
    assert IdempotencyRecord.objects.count() == 0
    assert LedgerEntry.objects.filter(kind="ORDER_DEBIT").count() == 0


def timeline_of(drop_id) -> list[DeliveryEvent]:
    """The drop's whole history, oldest first, checked against how it is stored.

    Its creation is no row: the initial status (SCHEDULED when its order's pickup was
    scheduled, else PENDING) at the drop's created_at, by "api". Every later entry is a
    stored DeliveryEvent, one per move, in (at, id) order, and no row copies the creation.
    """
    drop = Drop.objects.select_related("order").get(pk=drop_id)
    created, *moves = drop.timeline()
    initial = DropStatus.SCHEDULED if drop.order.pickup_scheduled_at else DropStatus.PENDING
    assert (created.pk, created.status, created.at, created.actor) == (
        None,
        initial,
        drop.created_at,
        "api",
    )
    stored = list(DeliveryEvent.objects.filter(drop_id=drop.pk).order_by("at", "id"))
    assert [m.pk for m in moves] == [e.pk for e in stored]
    assert not any(e.actor == "api" and e.at == drop.created_at for e in stored), stored
    return [created, *moves]


CONCURRENCY_WAIT_SECONDS = 30


def run_concurrently(n: int, work) -> list:
    """Run work(api, i) for i in 0..n-1 on n real threads released together by a Barrier.

    Each thread has its own API client and its own database connection, closed at the end.
    """
    from tests.fixtures import Api

    barrier = threading.Barrier(n)

    def one(i: int):
        try:
            api = Api()
            barrier.wait(CONCURRENCY_WAIT_SECONDS)
            return work(api, i)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(one, i) for i in range(n)]
        return [f.result(timeout=CONCURRENCY_WAIT_SECONDS * 2) for f in futures]


def in_own_connection(work):
    """work() on a thread of its own: its database connection is closed when it is done."""
    try:
        return work()
    finally:
        connection.close()


def wait_until(condition, seconds: float = CONCURRENCY_WAIT_SECONDS) -> None:
    """Poll `condition` until it holds; fail the test past `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


# A subprocess with settings of its own (another DATABASE_URL): Django set up, every
# migration applied, the demo region seeded and one business `tenant` provisioned. A script
# run by run_django_script starts with this and prints its result as JSON on its last line.
SCRIPT_WITH_A_TENANT = r"""
import json, uuid
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from console.provisioning import provision_business
from geo.demo import seed_region
seed_region()
tenant = provision_business(name="S", email="s@example.com")
"""


def run_django_script(script: str, database_url: str) -> dict:
    """Run `script` in a fresh Python with DEBUG on and this database; its JSON result."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "DEBUG": "true",
        "CACHE_URL": "locmemcache://",
        "PYTHONPATH": str(root),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def read_label_pages(pdf: bytes) -> list[tuple[tuple[float, float], dict[str, str]]]:
    """Each page of a labels PDF as a printer would see it: its size in mm, read back from the
    PDF, and what a scanner reads from it once drawn at 300 dpi (pypdfium2 draws it, zxing-cpp
    reads it): {"Code128": text, "QRCode": text}."""
    import pypdfium2
    import zxingcpp

    document = pypdfium2.PdfDocument(pdf)
    pages = []
    try:
        for page in document:
            width, height = page.get_size()  # points
            image = page.render(scale=300 / 72).to_numpy()
            read = {result.format.name: result.text for result in zxingcpp.read_barcodes(image)}
            pages.append(((round(width / 72 * 25.4, 1), round(height / 72 * 25.4, 1)), read))
            page.close()
    finally:
        document.close()
    return pages
