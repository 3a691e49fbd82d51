"""A drop with every field of the contract's drop (window, notes, waybill, parcel, COD,
vehicle, undeliverable action), and one with none of them, read through every surface that
shows a drop: tracking, the listing, an edit, the dashboard's order pages, the recipient's
page, and cancel. `make test` runs this file on SQLite as well (tests/conftest.py EMBEDDED):
a read that holds on PostgreSQL only fails there.
"""

from __future__ import annotations

import pytest

from orders.links import tracking_token
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.tracking.helpers import cancel, entries

# 10:00 in Phnom Penh is the fixture's clock: a window this afternoon, inside opening hours.
WINDOW = {"start": "2026-11-23T07:00:00Z", "end": "2026-11-23T09:00:00Z"}


def every_field(client_order_id: str) -> dict:
    entry = drop(client_order_id, waybill="WB-" + client_order_id)
    entry["dropoff_window"] = WINDOW
    entry["notes"] = "Ring twice"
    entry["parcel"] = {"size": "M", "weight_kg": 2.5, "description": "Shoes", "value": "40.00"}
    entry["cod"] = {"amount": "12.50"}
    entry["undeliverable_action"] = "dispose"
    return entry


@pytest.fixture
def placed(open_for_business, alice, api) -> dict[str, dict]:
    body = batch(group(every_field("FULL"), drop("PLAIN"), vehicle="tuktuk"))
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    orders = {o["client_order_id"]: o for o in response.json()["data"]["orders"]}
    assert [o["status"] for o in orders.values()] == ["accepted", "accepted"], orders
    return orders


def test_tracking_echoes_every_field_and_nothing_for_a_plain_drop(placed, alice, api):
    tracked = entries(api.track(["FULL", "PLAIN"], alice.sandbox_key))
    full, plain = tracked["FULL"], tracked["PLAIN"]

    window = full["dropoff_window"]
    assert window == {"start": "2026-11-23T07:00:00.000Z", "end": "2026-11-23T09:00:00.000Z"}
    assert full["window_status"] == "on_track"
    assert full["notes"] == "Ring twice"
    assert full["external_waybill"] == "WB-FULL"
    assert full["undeliverable_action"] == "dispose"
    assert full["cod"] == {"amount": "12.50", "status": "pending", "collected_at": None}
    assert full["parcel"]["size"] == "M" and full["parcel"]["weight_kg"] == 2.5
    assert full["price"] == placed["FULL"]["price"]
    # Nothing asked, nothing answered: the same nulls on both databases.
    assert (plain["dropoff_window"], plain["window_status"], plain["cod"]) == (None, None, None)
    assert plain["notes"] is None


def test_the_listing_shows_and_filters_by_window(placed, alice, api):
    response = api.get("/orders?window_status=on_track", alice.sandbox_key)
    assert response.status_code == 200, response.content
    listed = response.json()["data"]["orders"]
    assert [o["client_order_id"] for o in listed] == ["FULL"]
    assert listed[0]["cod"]["amount"] == "12.50"

    everything = api.get("/orders", alice.sandbox_key)
    assert everything.status_code == 200, everything.content
    by_id = {o["client_order_id"]: o for o in everything.json()["data"]["orders"]}
    assert by_id["PLAIN"]["cod"] is None and by_id["PLAIN"]["window_status"] is None


def test_an_edit_of_the_window_answers_the_new_entry(placed, alice, api):
    later = {"start": "2026-11-23T08:00:00Z", "end": "2026-11-23T10:00:00Z"}
    response = api.client.patch(
        f"/api/v1/orders/{placed['FULL']['drop_id']}",
        {"dropoff_window": later, "notes": "Call first"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
    )
    assert response.status_code == 200, response.content
    entry = response.json()["data"]
    assert entry["dropoff_window"]["end"] == "2026-11-23T10:00:00.000Z"
    assert (entry["window_status"], entry["notes"]) == ("on_track", "Call first")


def test_the_dashboard_and_the_recipients_page_show_the_drop(placed, alice_web, client):
    orders = alice_web.get("/orders/")
    assert orders.status_code == 200
    assert b"FULL" in orders.content and b"PLAIN" in orders.content
    for client_order_id in ("FULL", "PLAIN"):
        page = alice_web.get(f"/orders/{placed[client_order_id]['drop_id']}/")
        assert page.status_code == 200, page.content[:500]
    assert b"12.50" in alice_web.get(f"/orders/{placed['FULL']['drop_id']}/").content

    drop = Drop.objects.get(pk=placed["FULL"]["drop_id"])
    recipients_page = client.get(f"/t/{tracking_token(drop.pk)}")
    assert recipients_page.status_code == 200
    assert b"Ring twice" not in recipients_page.content  # instructions are for the courier


def test_cancel_refunds_and_tracks_as_cancelled(placed, alice, api):
    assert entries(cancel(api, alice.sandbox_key, "FULL"))["FULL"]["status"] == "CANCELLED"
    full = entries(api.track(["FULL"], alice.sandbox_key))["FULL"]
    assert full["status"] == "CANCELLED"
    assert full["cod"]["status"] == "not_collected"
    assert full["window_status"] in ("missed", None)
