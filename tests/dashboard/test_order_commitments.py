"""What an order promises, on the dashboard: the order page's drop-off window (in the
service time zone) and its status as the API says it, the courier's notes, what happens if it
cannot be delivered; the orders list's window status badge and filter."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.core.cache import cache
from django.utils import timezone

from orders.models import Drop
from tests.dashboard.helpers import listed
from tests.factories import batch, drop, group

# 14:00–16:00 in Phnom Penh on the fixture clock's Monday (it is 10:00 there).
AFTERNOON = {"start": "2026-11-23T07:00:00Z", "end": "2026-11-23T09:00:00Z"}


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


def place(api, key: str, client_order_id: str, **fields) -> str:
    """One drop with these drop fields (dropoff_window, notes, …); its drop id."""
    response = api.bulk(batch(group({**drop(client_order_id), **fields})), key)
    assert response.status_code == 200, response.content
    [accepted] = response.json()["data"]["orders"]
    assert accepted["status"] == "accepted", accepted
    return accepted["drop_id"]


def fact(page: str, testid: str) -> str:
    """The words of the order page's fact marked data-testid=testid, tags taken out."""
    found = re.search(rf'<dd data-testid="{testid}">(.*?)</dd>', page, re.S)
    assert found, testid
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def test_the_order_page_shows_the_window_its_status_the_notes_and_the_action(
    open_for_business, alice, alice_web, api
):
    drop_id = place(
        api,
        alice.sandbox_key,
        "W-1",
        dropoff_window=AFTERNOON,
        notes="Gate code 42 <b>\ncall on arrival",
        undeliverable_action="dispose",
    )

    page = alice_web.get(f"/orders/{drop_id}/").content.decode()

    assert (
        fact(page, "dropoff-window")
        == "23 Nov 2026, 14:00 UTC+7 – 23 Nov 2026, 16:00 UTC+7 On track"
    )
    assert (
        '<span class="status window-on_track" data-testid="window-status">On track</span>' in page
    )
    assert fact(page, "notes") == "Gate code 42 <b> call on arrival"  # escaped, lines kept
    assert "Gate code 42 &lt;b&gt;<br>call on arrival" in page
    assert fact(page, "undeliverable-action") == "Dispose"


def test_an_order_without_a_window_or_notes_says_so(open_for_business, alice, alice_web, api):
    drop_id = place(api, alice.sandbox_key, "W-1")

    page = alice_web.get(f"/orders/{drop_id}/").content.decode()

    assert fact(page, "dropoff-window") == "none"
    assert fact(page, "notes") == "none"
    assert fact(page, "undeliverable-action") == "Return to the pickup"
    assert 'data-testid="window-status"' not in page


@pytest.mark.parametrize(
    ("stored", "risk_in_minutes", "shown"),
    [
        ("on_track", -1, ("at_risk", "At risk")),  # the ETA has passed the end: said at once
        ("on_track", 30, ("on_track", "On track")),
        ("met", None, ("met", "Met")),
        ("missed", None, ("missed", "Missed")),
    ],
)
def test_the_window_status_is_the_one_the_api_gives(
    open_for_business, alice, alice_web, api, stored, risk_in_minutes, shown
):
    drop_id = place(api, alice.sandbox_key, "W-1", dropoff_window=AFTERNOON)
    risk_at = (
        None if risk_in_minutes is None else timezone.now() + timedelta(minutes=risk_in_minutes)
    )
    Drop.objects.filter(pk=drop_id).update(window_status=stored, window_risk_at=risk_at)
    [entry] = api.track(["W-1"], alice.sandbox_key).json()["data"]["orders"]
    assert entry["window_status"] == shown[0]

    page = alice_web.get(f"/orders/{drop_id}/").content.decode()

    value, label = shown
    assert f'<span class="status window-{value}" data-testid="window-status">{label}</span>' in page


def test_the_orders_list_filters_and_badges_by_window_status(
    open_for_business, alice, alice_web, api
):
    key = alice.sandbox_key
    place(api, key, "KEPT", dropoff_window=AFTERNOON)
    late = place(api, key, "LATE", dropoff_window=AFTERNOON)
    place(api, key, "NONE")
    Drop.objects.filter(pk=late).update(window_status="at_risk")

    assert listed(alice_web, "/orders/?window_status=at_risk") == ["LATE"]
    assert listed(alice_web, "/orders/?window_status=on_track&window_status=at_risk") == [
        "LATE",
        "KEPT",
    ]
    assert listed(alice_web, "/orders/?window_status=met") == []
    assert listed(alice_web, "/orders/") == ["NONE", "LATE", "KEPT"]

    page = alice_web.get("/orders/").content.decode()
    assert 'name="window_status" value="at_risk"' in page  # the filter's choices
    assert '<span class="status window-at_risk" title="Drop-off window">At risk</span>' in page
    assert page.count('title="Drop-off window"') == 2  # no badge without a window


def test_an_unknown_window_status_is_a_form_error_not_everything(
    open_for_business, alice, alice_web, api
):
    place(api, alice.sandbox_key, "KEPT", dropoff_window=AFTERNOON)

    response = alice_web.get("/orders/?window_status=late")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Select a valid choice. late is not one of the available choices." in page
    assert "KEPT" not in page
