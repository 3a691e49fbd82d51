"""Scheduled pickups: SCHEDULE_IN_PAST, the initial status (docs/contract.md §6),
dispatch_due_orders."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.management import call_command

from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.factories import batch, drop, group
from tests.geo.helpers import local, reasons, results_by_id, submit
from tests.helpers import timeline_of
from tracking.services import dispatch_due_orders

NOW = local(2026, 11, 23, 10, 0)  # where the `clock` fixture starts


def events_of(client_order_id: str) -> list[tuple[str, str]]:
    """(status, actor) of the drop's timeline: its creation, which is no event row,
    then its stored moves (timeline_of checks both)."""
    stored = Drop.objects.get(client_order_id=client_order_id)
    return [(e.status, e.actor) for e in timeline_of(stored.pk)]


def dispatch() -> str:
    out = StringIO()
    call_command("dispatch_due_orders", stdout=out)
    return out.getvalue()


# --- SCHEDULE_IN_PAST ---


def test_schedule_a_minute_ago_rejects_the_whole_group(open_for_business, alice, api):
    a_minute_ago = (NOW - timedelta(minutes=1)).isoformat()

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), drop("B"), pickup_scheduled_at=a_minute_ago), group(drop("C"))),
    )

    assert reasons(data) == {"A": "SCHEDULE_IN_PAST", "B": "SCHEDULE_IN_PAST", "C": "accepted"}
    assert "pickup_scheduled_at" in results_by_id(data)["A"]["message"]
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["C"]


def test_schedule_in_utc_an_hour_ago_is_in_the_past(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), pickup_scheduled_at="2026-11-23T02:00:00Z")),
    )

    assert reasons(data) == {"A": "SCHEDULE_IN_PAST"}


def test_schedule_in_past_is_judged_against_the_moved_clock(open_for_business, alice, api):
    open_for_business.move_to(local(2026, 11, 25, 12, 0))
    yesterday_noon = local(2026, 11, 24, 12, 0).isoformat()
    tomorrow_noon = local(2026, 11, 26, 12, 0).isoformat()

    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(drop("YESTERDAY"), pickup_scheduled_at=yesterday_noon),
            group(drop("TOMORROW"), pickup_scheduled_at=tomorrow_noon),
        ),
    )

    assert reasons(data) == {"YESTERDAY": "SCHEDULE_IN_PAST", "TOMORROW": "accepted"}


# --- initial status: SCHEDULED with a schedule, PENDING without ---


def test_drop_without_schedule_starts_pending(open_for_business, alice, api):
    submit(api, alice.sandbox_key, batch(group(drop("A"))))

    stored = Drop.objects.get()
    assert stored.status == DropStatus.PENDING
    assert stored.order.pickup_scheduled_at is None
    assert events_of("A") == [("PENDING", "api")]
    assert not DeliveryEvent.objects.exists()  # the creation is the drop row


def test_drop_with_future_schedule_starts_scheduled(open_for_business, alice, api):
    in_a_minute = NOW + timedelta(minutes=1)

    submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), drop("B"), pickup_scheduled_at=in_a_minute.isoformat())),
    )

    assert set(Drop.objects.values_list("status", flat=True)) == {DropStatus.SCHEDULED}
    assert Order.objects.get().pickup_scheduled_at == in_a_minute
    assert events_of("A") == events_of("B") == [("SCHEDULED", "api")]
    assert not DeliveryEvent.objects.exists()  # the creation is the drop row


def test_each_group_gets_its_own_initial_status(open_for_business, alice, api):
    later = local(2026, 11, 23, 15, 0).isoformat()

    submit(
        api,
        alice.sandbox_key,
        batch(group(drop("LATER"), pickup_scheduled_at=later), group(drop("NOW"))),
    )

    assert dict(Drop.objects.values_list("client_order_id", "status")) == {
        "LATER": DropStatus.SCHEDULED,
        "NOW": DropStatus.PENDING,
    }


def test_tracking_shows_the_creation_event(open_for_business, alice, api):
    later = local(2026, 11, 23, 15, 0).isoformat()
    submit(api, alice.sandbox_key, batch(group(drop("A"), pickup_scheduled_at=later)))

    entry = api.track(["A"], alice.sandbox_key).json()["data"]["orders"][0]

    assert entry["status"] == "SCHEDULED"
    assert [e["status"] for e in entry["events"]] == ["SCHEDULED"]


# --- dispatch_due_orders ---


def test_dispatch_moves_due_scheduled_drops_to_pending_and_leaves_the_rest(
    open_for_business, alice, api
):
    submit(
        api,
        alice.sandbox_key,
        batch(
            group(drop("SOON-1"), drop("SOON-2"), pickup_scheduled_at="2026-11-23T10:30:00+07:00"),
            group(drop("LATER"), pickup_scheduled_at="2026-11-23T13:00:00+07:00"),
            group(drop("UNSCHEDULED")),
        ),
    )
    open_for_business.move_to(local(2026, 11, 23, 11, 0))

    output = dispatch()

    assert "Dispatched 2 drop(s)." in output
    assert dict(Drop.objects.values_list("client_order_id", "status")) == {
        "SOON-1": DropStatus.PENDING,
        "SOON-2": DropStatus.PENDING,
        "LATER": DropStatus.SCHEDULED,
        "UNSCHEDULED": DropStatus.PENDING,
    }
    assert events_of("SOON-1") == [("SCHEDULED", "api"), ("PENDING", "dispatcher")]
    assert events_of("LATER") == [("SCHEDULED", "api")]
    assert events_of("UNSCHEDULED") == [("PENDING", "api")]
    moved = Drop.objects.get(client_order_id="SOON-1")
    event = DeliveryEvent.objects.get(drop=moved, status="PENDING")
    assert local(2026, 11, 23, 11, 0) <= event.at < local(2026, 11, 23, 11, 1)
    assert moved.updated_at == event.at


def test_dispatch_is_repeatable_and_picks_up_drops_as_they_fall_due(open_for_business, alice, api):
    submit(
        api,
        alice.sandbox_key,
        batch(
            group(drop("SOON"), pickup_scheduled_at="2026-11-23T10:30:00+07:00"),
            group(drop("LATER"), pickup_scheduled_at="2026-11-23T13:00:00+07:00"),
        ),
    )
    open_for_business.move_to(local(2026, 11, 23, 11, 0))
    dispatch()

    assert "Dispatched 0 drop(s)." in dispatch()
    assert events_of("SOON") == [("SCHEDULED", "api"), ("PENDING", "dispatcher")]

    open_for_business.move_to(local(2026, 11, 23, 13, 0, 30))

    assert "Dispatched 1 drop(s)." in dispatch()
    assert Drop.objects.get(client_order_id="LATER").status == DropStatus.PENDING
    assert DeliveryEvent.objects.filter(status="PENDING", actor="dispatcher").count() == 2


def test_drop_is_due_at_its_scheduled_instant(open_for_business, alice, api):
    scheduled = local(2026, 11, 23, 12, 0)
    submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), pickup_scheduled_at=scheduled.isoformat())),
    )

    early = dispatch_due_orders(now=scheduled - timedelta(microseconds=1))
    on_time = dispatch_due_orders(now=scheduled)

    assert (len(early.moved), len(on_time.moved)) == (0, 1)
    assert Drop.objects.get().status == DropStatus.PENDING
    assert DeliveryEvent.objects.get(status="PENDING").at == scheduled


def test_dispatch_serves_every_business(open_for_business, alice, bob, api):
    soon = "2026-11-23T10:30:00+07:00"
    submit(api, alice.sandbox_key, batch(group(drop("A"), pickup_scheduled_at=soon)))
    submit(api, bob.sandbox_key, batch(group(drop("B"), pickup_scheduled_at=soon)))
    open_for_business.move_to(local(2026, 11, 23, 10, 31))

    assert "Dispatched 2 drop(s)." in dispatch()
    assert set(Drop.objects.values_list("status", flat=True)) == {DropStatus.PENDING}


def test_cancelled_scheduled_drop_is_not_dispatched(open_for_business, alice, api):
    soon = "2026-11-23T10:30:00+07:00"
    submit(api, alice.sandbox_key, batch(group(drop("A"), pickup_scheduled_at=soon)))
    cancelled = api.post("/orders/cancel", {"identifiers": ["A"]}, alice.sandbox_key)
    assert cancelled.status_code == 200, cancelled.content
    open_for_business.move_to(local(2026, 11, 23, 11, 0))

    assert "Dispatched 0 drop(s)." in dispatch()
    assert Drop.objects.get().status == DropStatus.CANCELLED
    assert [s for s, _ in events_of("A")] == ["SCHEDULED", "CANCELLED"]


def test_tracking_shows_the_dispatch_event(open_for_business, alice, api):
    submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), pickup_scheduled_at="2026-11-23T10:30:00+07:00")),
    )
    open_for_business.move_to(local(2026, 11, 23, 10, 45))
    dispatch()

    entry = api.track(["A"], alice.sandbox_key).json()["data"]["orders"][0]

    assert entry["status"] == "PENDING"
    assert [e["status"] for e in entry["events"]] == ["SCHEDULED", "PENDING"]
