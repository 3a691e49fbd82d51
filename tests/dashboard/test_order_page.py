"""The order page's map data (pickup, drop-off, the courier on the way), and times with their
zone on every page that shows one."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from django.core.cache import cache
from django.template import Context, Template

from core.formats import zone_label
from dashboard.templatetags.dashboard_tags import when
from orders.models import Drop
from tests.factories import HOME, SHOP
from tests.tracking.helpers import place

TIME = re.compile(r'<time datetime="([^"]+)">([^<]+)</time>\xa0<abbr class="zone" title="([^"]+)">')


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


def map_data(page: str) -> dict:
    found = re.search(r'<script id="map-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def test_the_order_page_maps_pickup_and_drop_off(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "MAP-1")
    page = alice_web.get(f"/orders/{ids['MAP-1']}/").content.decode()
    data = map_data(page)
    assert data["kind"] == "order" and data["status"] == "pending"
    assert data["pickup"] == [SHOP["lat"], SHOP["long"]]
    assert data["drop"] == [HOME["lat"], HOME["long"]]
    assert data["courier"] is None
    # The demo area, as Leaflet rings of [lat, long]: lat 11.45–11.70, long 104.80–105.00.
    [area] = data["areas"]
    assert all(11.45 <= lat <= 11.70 and 104.80 <= long <= 105.00 for lat, long in area[0])
    assert data["tiles"]["url"] == "https://tile.openstreetmap.org/{z}/{x}/{y}.png"  # default
    assert "leaflet/leaflet.js" in page and "dashboard/maps.js" in page
    assert 'id="dashboard-map"' in page and "Courier" not in page


def test_the_courier_is_drawn_while_one_is_on_the_way(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "MAP-2")
    Drop.objects.filter(pk=ids["MAP-2"]).update(status="PICKED_UP", courier_progress=0.5)
    data = map_data(alice_web.get(f"/orders/{ids['MAP-2']}/").content.decode())
    assert data["status"] == "picked_up"
    assert data["courier"] == pytest.approx(
        [(SHOP["lat"] + HOME["lat"]) / 2, (SHOP["long"] + HOME["long"]) / 2]
    )


def test_the_tile_url_reaches_the_map(open_for_business, alice, alice_web, api, settings):
    settings.TRACKING_TILE_URL = "https://tiles.example/{z}/{x}/{y}.png"
    settings.TRACKING_TILE_ATTRIBUTION = "© Example"
    ids = place(api, alice.sandbox_key, "MAP-3")
    data = map_data(alice_web.get(f"/orders/{ids['MAP-3']}/").content.decode())
    assert data["tiles"] == {
        "url": "https://tiles.example/{z}/{x}/{y}.png",
        "attribution": "© Example",
    }


def test_another_business_order_is_not_found(open_for_business, alice, bob_web, api):
    ids = place(api, alice.sandbox_key, "MAP-4")
    assert bob_web.get(f"/orders/{ids['MAP-4']}/").status_code == 404


# --- Times ----------------------------------------------------------------------------------


def test_a_time_is_shown_in_the_service_zone_with_its_label_and_utc_instant():
    moment = datetime(2026, 11, 23, 7, 5, 9, 123000, tzinfo=UTC)
    html = str(when(moment))
    assert html == (
        '<time datetime="2026-11-23T07:05:09Z">23 Nov 2026, 14:05</time>\xa0'
        '<abbr class="zone" title="Asia/Phnom_Penh time">UTC+7</abbr>'
    )
    assert "14:05:09" in str(when(moment, "seconds"))
    assert str(when("2026-11-23T07:05:09.123Z")) == html  # wire text, as entries carry it
    assert when(None) == "" and when("") == ""
    rendered = Template("{% load dashboard_tags %}{{ at|when|default:'never' }}").render(
        Context({"at": None})
    )
    assert rendered == "never"


def test_the_zone_label_names_the_zone_or_its_offset():
    from zoneinfo import ZoneInfo

    assert zone_label(datetime(2026, 1, 1, tzinfo=ZoneInfo("Europe/Paris"))) == "CET"
    assert zone_label(datetime(2026, 1, 1, tzinfo=ZoneInfo("Asia/Kolkata"))) == "IST"
    assert zone_label(datetime(2026, 1, 1, tzinfo=ZoneInfo("Asia/Kathmandu"))) == "UTC+5:45"
    assert zone_label(datetime(2026, 1, 1, tzinfo=ZoneInfo("America/Sao_Paulo"))) == "UTC-3"


def test_another_time_zone_setting_shows_that_zone(settings):
    settings.TIME_ZONE = "Europe/Paris"
    html = str(when(datetime(2026, 7, 1, 12, 0, tzinfo=UTC)))
    assert "1 Jul 2026, 14:00" in html and ">CEST</abbr>" in html


def test_every_time_on_the_pages_carries_its_zone(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "TIME-1")
    drop = Drop.objects.get(pk=ids["TIME-1"])
    alice_web.post("/wallet/sandbox-top-up/", {"amount": "1.00"})
    pages = {
        "orders": "/orders/",
        "order": f"/orders/{drop.pk}/",
        "batches": "/batches/",
        "batch": f"/batches/{drop.batch_id}/",
        "keys": "/keys/",
        "wallet": "/wallet/?environment=sandbox",
        "sandbox": "/sandbox/",
    }
    created = drop.created_at.astimezone(UTC).isoformat(timespec="seconds")
    for name, path in pages.items():
        page = alice_web.get(path).content.decode()
        times = TIME.findall(page)
        assert times, name
        for instant, _text, zone in times:
            assert instant.endswith("Z") and zone == "Asia/Phnom_Penh time", (name, instant)
        assert "UTC+7</abbr>" in page, name
        # No time in the old bare format (2026-11-23 10:00) is left.
        assert not re.search(r"\b20\d\d-\d\d-\d\d \d\d:\d\d\b", page), name
        if name in ("orders", "order", "sandbox"):
            assert created.replace("+00:00", "Z") in [t[0] for t in times], name
    assert "Asia/Phnom_Penh (UTC+7)" in alice_web.get("/").content.decode()


def test_the_live_wallet_names_a_real_contact(alice_web, settings):
    settings.SUPPORT_EMAIL = "help@delivery.example"
    page = alice_web.get("/wallet/?environment=live").content.decode()
    assert "Please contact us." not in page
    assert 'href="mailto:help@delivery.example?subject=Live%20top-up%20for%20Alice%20Shop"' in page
    assert "help@delivery.example</a>" in page
