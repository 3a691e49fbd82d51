"""Drop-off windows after creation (docs/contract.md §17): the tracking entry's window, notes
and undeliverable_action, window_status kept current by moves and by the minute's job,
order.window_at_risk once per drop, GET /orders?window_status=, notes off the recipient's page.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from events.models import Event
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.helpers import assert_error
from tests.tracking.helpers import advance, cancel, entries
from tracking.tasks import flag_windows_at_risk

# The fixture clock starts at 2026-11-23 03:00 UTC and ticks. From the shop to HOME (~1.7 km)
# the ETA is 03:29 (15 min to dispatch, 5 at each end, ~4 of riding). A window ending 03:40
# turns at risk when its ETA passes 03:40: before pickup, at about 03:26.
NOW = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
AT_RISK_EVENT = "order.window_at_risk"


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


def wire(minutes: float) -> str:
    return at(minutes).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def windowed(client_order_id: str, start: float = 5, end: float = 40, **extra) -> dict:
    entry = drop(client_order_id)
    entry["dropoff_window"] = {"start": wire(start), "end": wire(end)}
    entry.update(extra)
    return entry


def place(api, tenant, *drops: dict, **pickup) -> dict[str, str]:
    response = api.bulk(batch(group(*drops, **pickup)), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    orders = response.json()["data"]["orders"]
    assert [o["status"] for o in orders] == ["accepted"] * len(drops), orders
    return {o["client_order_id"]: o["drop_id"] for o in orders}


def track(api, tenant, *ids: str) -> dict[str, dict]:
    return entries(api.track(list(ids), tenant.sandbox_key))


def listed(api, tenant, query: str) -> list[str]:
    response = api.get(f"/orders?{query}", tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return sorted(o["client_order_id"] for o in response.json()["data"]["orders"])


def alerts() -> list[Event]:
    return list(Event.objects.filter(type=AT_RISK_EVENT).order_by("seq"))


def test_the_entry_echoes_the_window_notes_and_undeliverable_action(open_for_business, alice, api):
    place(
        api,
        alice,
        windowed("W-1", start=60, end=120, notes="Gate code 42, call on arrival"),
        windowed("W-2", undeliverable_action="dispose"),
        drop("PLAIN"),
    )
    found = track(api, alice, "W-1", "W-2", "PLAIN")
    assert found["W-1"]["dropoff_window"] == {"start": wire(60), "end": wire(120)}
    assert found["W-1"]["window_status"] == "on_track"
    assert found["W-1"]["notes"] == "Gate code 42, call on arrival"
    assert found["W-1"]["undeliverable_action"] == "return"
    assert found["W-2"]["undeliverable_action"] == "dispose"
    assert found["W-2"]["notes"] is None
    plain = found["PLAIN"]
    assert (plain["dropoff_window"], plain["window_status"], plain["notes"]) == (None, None, None)
    assert plain["undeliverable_action"] == "return"
    stored = Drop.objects.get(client_order_id="W-1")
    assert (stored.window_start, stored.window_end) == (at(60), at(120))
    assert stored.undeliverable_action == "return"
    assert Drop.objects.get(client_order_id="W-2").undeliverable_action == "dispose"


def test_the_eta_is_never_before_the_window_opens(open_for_business, alice, api):
    place(api, alice, windowed("LATE", start=60, end=120), windowed("SOON", start=5, end=40))
    found = track(api, alice, "LATE", "SOON")
    # The model says 03:29; the courier waits for 04:00.
    assert found["LATE"]["eta"]["dropoff_at"] == wire(60)
    assert found["SOON"]["eta"]["dropoff_at"] < wire(40)
    assert found["SOON"]["eta"]["dropoff_at"] > wire(5)


def test_the_minute_job_turns_a_drop_at_risk_once(open_for_business, clock, alice, api):
    place(api, alice, windowed("W-1", end=40), windowed("W-2", end=120))
    assert flag_windows_at_risk.call() == 0
    clock.move_to(at(27))  # W-1's ETA is now past 03:40; W-2's is far from 05:00
    # The entry says so at once; the filter and the event wait for the job.
    assert track(api, alice, "W-1")["W-1"]["window_status"] == "at_risk"
    assert listed(api, alice, "window_status=at_risk") == []
    assert flag_windows_at_risk.call() == 1
    assert flag_windows_at_risk.call() == 0  # the real job, run again: nothing more
    (event,) = alerts()
    assert event.data["client_order_id"] == "W-1"
    assert event.data["window_status"] == "at_risk"
    assert event.business_id == alice.business.pk
    assert listed(api, alice, "window_status=at_risk") == ["W-1"]
    assert listed(api, alice, "window_status=on_track") == ["W-2"]
    # Moving on does not say it again.
    assert advance(api, alice.sandbox_key, "W-1", to="ASSIGNED").status_code == 200
    assert flag_windows_at_risk.call() == 0
    assert len(alerts()) == 1
    assert Drop.objects.get(client_order_id="W-1").window_status == "at_risk"


def test_a_move_that_finds_the_drop_at_risk_says_so_once(open_for_business, clock, alice, api):
    place(api, alice, windowed("W-1", end=40))
    clock.move_to(at(27))
    assert advance(api, alice.sandbox_key, "W-1", to="ASSIGNED").status_code == 200
    assert [e.data["client_order_id"] for e in alerts()] == ["W-1"]
    assert Drop.objects.get(client_order_id="W-1").window_status == "at_risk"
    assert flag_windows_at_risk.call() == 0
    clock.move_to(at(28))
    assert advance(api, alice.sandbox_key, "W-1", to="PICKED_UP").status_code == 200
    assert len(alerts()) == 1


def test_a_pickup_in_time_keeps_the_drop_on_track_until_the_end(
    open_for_business, clock, alice, api
):
    place(api, alice, windowed("W-1", end=40))
    clock.move_to(at(12))
    assert advance(api, alice.sandbox_key, "W-1", to="PICKED_UP").status_code == 200
    clock.move_to(at(30))  # at risk had it not been picked up; now due at ~03:21 + waiting
    assert flag_windows_at_risk.call() == 0
    assert track(api, alice, "W-1")["W-1"]["window_status"] == "on_track"
    clock.move_to(at(41))
    assert flag_windows_at_risk.call() == 1
    assert track(api, alice, "W-1")["W-1"]["window_status"] == "at_risk"


def test_finished_drops_have_met_or_missed_their_window(open_for_business, clock, alice, api):
    place(
        api,
        alice,
        windowed("ON-TIME"),
        windowed("LATE"),
        windowed("CANCELLED"),
        windowed("FAILED"),
    )
    clock.move_to(at(20))
    assert advance(api, alice.sandbox_key, "ON-TIME", "FAILED", to="PICKED_UP").status_code == 200
    assert advance(api, alice.sandbox_key, "ON-TIME", to="DELIVERED").status_code == 200
    assert advance(api, alice.sandbox_key, "FAILED", to="FAILED").status_code == 200
    assert cancel(api, alice.sandbox_key, "CANCELLED").status_code == 200
    clock.move_to(at(45))
    assert advance(api, alice.sandbox_key, "LATE", to="DELIVERED").status_code == 200
    found = track(api, alice, "ON-TIME", "LATE", "CANCELLED", "FAILED")
    assert {i: e["window_status"] for i, e in found.items()} == {
        "ON-TIME": "met",
        "LATE": "missed",
        "CANCELLED": "missed",
        "FAILED": "missed",
    }
    assert listed(api, alice, "window_status=met") == ["ON-TIME"]
    assert listed(api, alice, "window_status=missed") == ["CANCELLED", "FAILED", "LATE"]
    assert all(e["eta"] is None for e in found.values())


def test_a_late_dispatch_of_a_scheduled_drop_is_at_risk(open_for_business, clock, alice, api):
    # Waiting from 04:00, the ETA is 04:29: a window to 04:35 is kept if dispatched by 04:06.
    place(api, alice, windowed("S-1", start=60, end=95), pickup_scheduled_at=wire(60))
    assert track(api, alice, "S-1")["S-1"]["window_status"] == "on_track"
    clock.move_to(at(62))
    assert advance(api, alice.sandbox_key, "S-1", to="PENDING").status_code == 200
    assert Drop.objects.get(client_order_id="S-1").window_status == "on_track"
    assert alerts() == []

    place(api, alice, windowed("S-2", start=125, end=160), pickup_scheduled_at=wire(120))
    clock.move_to(at(135))  # dispatched at 05:15: the ETA is 05:44, past 05:40
    assert advance(api, alice.sandbox_key, "S-2", to="PENDING").status_code == 200
    assert Drop.objects.get(client_order_id="S-2").window_status == "at_risk"
    assert [e.data["client_order_id"] for e in alerts()] == ["S-2"]


@pytest.mark.parametrize(
    "query",
    ["window_status=late", "window_status=", "window_status=on_track,", "window_status=AT_RISK"],
)
def test_an_unknown_window_status_filter_is_400(open_for_business, alice, api, query):
    response = api.get(f"/orders?{query}", alice.sandbox_key)
    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert [d["field"] for d in details] == ["window_status"]


def test_the_window_filter_is_refused_in_the_sync_order(open_for_business, alice, api):
    response = api.get(
        "/orders?window_status=at_risk&updated_since=2026-11-23T00:00:00Z", alice.sandbox_key
    )
    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert [d["field"] for d in details] == ["window_status"]


def test_the_window_filter_pages_with_a_cursor_and_other_filters(
    open_for_business, alice, bob, api
):
    place(api, alice, *[windowed(f"W-{i}") for i in range(5)], drop("PLAIN"))
    place(api, bob, windowed("BOB"))
    response = api.get("/orders?window_status=on_track,at_risk&limit=3", alice.sandbox_key)
    first = response.json()["data"]
    assert first["has_more"] is True
    response = api.get(
        f"/orders?window_status=on_track,at_risk&limit=3&cursor={first['next_cursor']}",
        alice.sandbox_key,
    )
    second = response.json()["data"]
    assert second["has_more"] is False
    seen = [o["client_order_id"] for o in first["orders"] + second["orders"]]
    assert sorted(seen) == [f"W-{i}" for i in range(5)]
    # A cursor is bound to its filters.
    other = api.get(f"/orders?limit=3&cursor={first['next_cursor']}", alice.sandbox_key)
    assert_error(other, 400, "VALIDATION_ERROR")
    assert listed(api, alice, "window_status=on_track&status=PENDING") == [
        f"W-{i}" for i in range(5)
    ]
    assert listed(api, alice, "window_status=on_track&status=DELIVERED") == []
    # Within one batch (read through its own index): the same filter, row by row.
    batch_id = Drop.objects.get(client_order_id="W-0").batch_id
    assert listed(api, alice, f"window_status=on_track&batch_id={batch_id}") == [
        f"W-{i}" for i in range(5)
    ]
    assert listed(api, alice, f"window_status=met&batch_id={batch_id}") == []


def test_notes_never_reach_the_recipients_page(open_for_business, alice, api):
    notes = "Gate code 4242, leave with the guard Dara"
    place(api, alice, windowed("W-1", notes=notes))
    url = track(api, alice, "W-1")["W-1"]["tracking_url"]
    page = Client().get("/t/" + url.rsplit("/t/", 1)[1])
    assert page.status_code == 200
    text = page.content.decode()
    assert "Gate code 4242" not in text and "Dara" not in text
    assert track(api, alice, "W-1")["W-1"]["notes"] == notes


@pytest.mark.postgresql  # statements counted as PostgreSQL runs them (COPY)
def test_windows_and_notes_add_no_query_per_drop(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="1000.00")
    place(api, tenant, drop("WARM"))  # a key's first use writes last_used_at: not measured

    def queries_for(n: int, prefix: str) -> int:
        drops = [windowed(f"{prefix}-{i}", notes="Call on arrival") for i in range(n)]
        with CaptureQueriesContext(connection) as captured:
            place(api, tenant, *drops)
        return len(captured)

    assert queries_for(1, "ONE") == queries_for(60, "MANY")
