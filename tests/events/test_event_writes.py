"""Events at the choke points (docs/contract.md §11): written in the change's own transaction,
set-based, one per batch and one per move, never for a change that rolled back."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import EntryKind, Invoice, InvoiceStatus
from billing.services import close_invoices, post_wallet_entry
from core import writes
from events.models import Delivery, Event, EventType, WebhookEndpoint
from orders.models import DeliveryEvent, Drop
from tests.factories import batch, drop, group, many_drops
from tests.tracking.helpers import THIS_AFTERNOON, advance, cancel, entries, history_of, place
from tracking.services import dispatch_due_orders

SIEM_REAP = {"lat": 13.4125, "long": 103.8670}


def events_of(tenant, event_type: str, environment: str = "sandbox") -> list[Event]:
    return list(
        Event.objects.filter(
            business=tenant.business, environment=environment, type=event_type
        ).order_by("seq")
    )


def inserts_into(queries, table: str) -> int:
    return sum(1 for q in queries if q["sql"].startswith(f'INSERT INTO "{table}"'))


# --- batch.created -----------------------------------------------------------------------------


@pytest.fixture
def rich(make_tenant):
    return make_tenant(name="Rich Shop", sandbox_balance="10000.00")


def test_a_batch_gives_exactly_one_batch_created(open_for_business, rich, api):
    alice = rich
    response = api.bulk(many_drops(300), alice.sandbox_key)
    data = response.json()["data"]

    [event] = events_of(alice, EventType.BATCH_CREATED)

    assert event.public_id.startswith("evt_") and len(event.public_id) == 30
    assert event.data == {
        "batch_id": data["batch_id"],
        "client_batch_id": data["client_batch_id"],
        "status": "COMPLETED",
        "counts": {"total": 300, "accepted": 300, "rejected": 0},
        "poll_url": data["poll_url"],
    }
    assert not Event.objects.exclude(type=EventType.BATCH_CREATED).exists()  # none per drop


def test_a_failed_batch_is_an_event_too_and_a_replay_is_not(open_for_business, alice, api):
    body = batch(group(drop("F-1", **SIEM_REAP)))
    key = "0f6b3c3e-7c1a-4d6a-9a36-3f0d1d2f9b10"
    api.bulk(body, alice.sandbox_key, key)
    api.bulk(body, alice.sandbox_key, key)  # a replay

    [event] = events_of(alice, EventType.BATCH_CREATED)
    assert event.data["status"] == "FAILED"


def test_a_batch_that_rolls_back_leaves_no_event(open_for_business, alice, api, monkeypatch):
    real = writes.insert_rows

    def crash_on_ledger(model, *args, **kwargs):
        if model.__name__ == "LedgerEntry":
            raise RuntimeError("crash while writing the batch")
        return real(model, *args, **kwargs)

    monkeypatch.setattr("billing.services.insert_rows", crash_on_ledger)
    response = api.bulk(many_drops(5), alice.sandbox_key)

    assert response.status_code == 500
    assert not Event.objects.exists() and not Drop.objects.exists()


def test_the_batch_pipeline_writes_one_event_whatever_its_size(open_for_business, rich, api):
    alice = rich
    api.bulk(many_drops(1, prefix="W"), alice.sandbox_key)  # warm: the first call opens things
    with CaptureQueriesContext(connection) as small:
        api.bulk(many_drops(1, prefix="S"), alice.sandbox_key)
    with CaptureQueriesContext(connection) as large:
        api.bulk(many_drops(500, prefix="L"), alice.sandbox_key)
    assert len(small) == len(large)
    assert inserts_into(large, "events_event") == 1


# --- order.status_changed ----------------------------------------------------------------------


def test_every_step_of_the_test_driver_is_an_event_with_its_entry(open_for_business, alice, api):
    place(api, alice.sandbox_key, "A-1")
    answer = entries(advance(api, alice.sandbox_key, "A-1", to="PICKED_UP"))["A-1"]

    changes = events_of(alice, EventType.ORDER_STATUS_CHANGED)

    assert [(e.data["previous_status"], e.data["status"]) for e in changes] == [
        ("PENDING", "ASSIGNED"),
        ("ASSIGNED", "PICKED_UP"),
    ]
    assert [e.data["sequence"] for e in changes] == [2, 3]
    last = changes[-1].data
    assert {k: v for k, v in last.items() if k != "previous_status"} == answer
    assert [e["status"] for e in changes[0].data["events"]] == ["PENDING", "ASSIGNED"]


def test_moving_many_drops_writes_their_events_in_one_statement(open_for_business, rich, api):
    alice = rich
    ids = [f"M-{i}" for i in range(400)]
    api.bulk(batch(group(*[drop(i) for i in ids])), alice.sandbox_key)
    with CaptureQueriesContext(connection) as queries:
        response = advance(api, alice.sandbox_key, *ids)
    assert response.status_code == 200

    assert len(events_of(alice, EventType.ORDER_STATUS_CHANGED)) == 400
    assert inserts_into(queries, "events_event") == 1
    assert inserts_into(queries, "orders_deliveryevent") == 1


def test_cancel_and_dispatch_are_events(open_for_business, alice, bob, api):
    place(api, alice.sandbox_key, "C-1")
    cancel(api, alice.sandbox_key, "C-1")
    place(api, alice.live_key, "D-1", scheduled_at=THIS_AFTERNOON)
    place(api, bob.live_key, "D-2", scheduled_at=THIS_AFTERNOON)
    due = Drop.objects.get(client_order_id="D-1").order.pickup_scheduled_at

    with CaptureQueriesContext(connection) as queries:
        dispatch_due_orders(now=due)

    [cancelled] = events_of(alice, EventType.ORDER_STATUS_CHANGED)
    assert (cancelled.data["previous_status"], cancelled.data["status"]) == (
        "PENDING",
        "CANCELLED",
    )
    for tenant in (alice, bob):
        [dispatched] = events_of(tenant, EventType.ORDER_STATUS_CHANGED, "live")
        assert (dispatched.data["previous_status"], dispatched.data["status"]) == (
            "SCHEDULED",
            "PENDING",
        )
    assert inserts_into(queries, "events_event") == 1  # two businesses, one statement


def test_a_refused_move_is_no_event(open_for_business, alice, api):
    place(api, alice.sandbox_key, "R-1")
    advance(api, alice.sandbox_key, "R-1", to="DELIVERED")
    before = Event.objects.count()
    advance(api, alice.sandbox_key, "R-1")  # already delivered: ILLEGAL_TRANSITION
    assert Event.objects.count() == before
    # Three moves stored; the creation is the drop row itself.
    assert DeliveryEvent.objects.filter(drop__client_order_id="R-1").count() == 3
    assert history_of(Drop.objects.get(client_order_id="R-1").pk) == [
        "PENDING",
        "ASSIGNED",
        "PICKED_UP",
        "DELIVERED",
    ]


# --- money -------------------------------------------------------------------------------------


def test_wallet_balance_low_fires_once_per_crossing(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="12.00")
    tenant.business.low_balance_threshold = Decimal("10.00")
    tenant.business.save()

    api.bulk(batch(group(drop("W-1"))), tenant.sandbox_key)  # 12.00 → 9.17: crossing
    api.bulk(batch(group(drop("W-2"))), tenant.sandbox_key)  # 9.17 → 6.34: still below
    post_wallet_entry(business=tenant.business, environment="sandbox", amount=Decimal("20.00"))
    api.bulk(batch(group(drop("W-3"), drop("W-4"))), tenant.sandbox_key)  # 26.34 → 20.68
    post_wallet_entry(
        business=tenant.business,
        environment="sandbox",
        amount=Decimal("-12.00"),
        kind=EntryKind.ADJUSTMENT,
    )

    lows = events_of(tenant, EventType.WALLET_BALANCE_LOW)
    assert [e.data for e in lows] == [
        {"balance": "9.17", "threshold": "10.00", "currency": "USD"},
        {"balance": "8.68", "threshold": "10.00", "currency": "USD"},
    ]


def test_no_threshold_no_low_balance_event(open_for_business, alice, api):
    api.bulk(many_drops(3), alice.sandbox_key)
    assert not events_of(alice, EventType.WALLET_BALANCE_LOW)


def test_issued_invoices_are_events_and_closed_sandbox_ones_are_not(db, make_tenant):
    tenant = make_tenant(billing="invoiced")
    for environment in ("live", "sandbox"):
        Invoice.objects.create(
            business=tenant.business,
            environment=environment,
            period="2026-10",
            accrued=Decimal("42.50"),
        )

    close_invoices(before_period="2026-11", today=date(2026, 11, 1))

    [issued] = events_of(tenant, EventType.INVOICE_ISSUED, "live")
    invoice = Invoice.objects.get(environment="live")
    assert invoice.status == InvoiceStatus.ISSUED
    assert issued.data == {
        "invoice_id": str(invoice.pk),
        "period": "2026-10",
        "amount": "42.50",
        "currency": "USD",
        "issued_on": "2026-11-01",
        "due_on": "2026-12-01",
    }
    assert not events_of(tenant, EventType.INVOICE_ISSUED, "sandbox")


# --- deliveries go with the events -------------------------------------------------------------


@pytest.fixture
def endpoints(alice, bob):
    def endpoint(tenant, environment="sandbox", types=("*",), enabled=True):
        return WebhookEndpoint.objects.create(
            business=tenant.business,
            environment=environment,
            url="https://hooks.example.com/x",
            event_types=list(types),
            enabled=enabled,
            secret="whsec_" + "A" * 32,
        )

    return {
        "all": endpoint(alice),
        "batches": endpoint(alice, types=["batch.created"]),
        "moves": endpoint(alice, types=["order.status_changed"]),
        "off": endpoint(alice, enabled=False),
        "live": endpoint(alice, environment="live"),
        "bob": endpoint(bob),
    }


def test_each_event_gets_a_delivery_per_subscribed_endpoint(
    open_for_business, alice, api, endpoints
):
    place(api, alice.sandbox_key, "E-1", "E-2")
    advance(api, alice.sandbox_key, "E-1", "E-2")

    by_endpoint = {
        name: Delivery.objects.filter(endpoint=endpoint).count()
        for name, endpoint in endpoints.items()
    }
    assert by_endpoint == {"all": 3, "batches": 1, "moves": 2, "off": 0, "live": 0, "bob": 0}
    assert set(Delivery.objects.values_list("status", flat=True)) == {"PENDING"}
