"""The maps' tiles: OpenStreetMap's by default with its credit, a self-hosted tile
server or none by setting, the recipient's Content-Security-Policy allowing exactly the tile
server's pictures, and the favicon every page asks for.

The settings are read by the real config.settings in a subprocess with a clean environment,
as gunicorn would read them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from orders.links import TRACKING_PATH, tracking_token
from orders.models import DropStatus
from tests.tracking.helpers import drop_in, place
from tracking.pages import content_security_policy

OSM_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
OSM_CREDIT = (
    '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'
)
SHOW_TILES = (
    "from django.conf import settings; import json; "
    "print(json.dumps([settings.TRACKING_TILE_URL, settings.TRACKING_TILE_ATTRIBUTION]))"
)


@pytest.fixture(autouse=True)
def _fresh_counters(db):
    cache.clear()  # the tracking page counts its requests
    yield
    cache.clear()


def tile_settings(**environment: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "true",
        "SECRET_KEY": "x" * 60,
        **environment,
    }
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {SHOW_TILES}"],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def read_tiles(**environment: str) -> list[str]:
    done = tile_settings(**environment)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_tiles_are_openstreetmaps_with_its_credit_unless_set():
    assert read_tiles() == [OSM_URL, OSM_CREDIT]


def test_off_turns_the_tiles_off():
    assert read_tiles(TRACKING_TILE_URL="off")[0] == ""


def test_a_self_hosted_tile_server_with_its_own_credit():
    url = "https://{s}.tiles.example.com/osm/{z}/{x}/{y}.png"
    assert read_tiles(TRACKING_TILE_URL=url, TRACKING_TILE_ATTRIBUTION="© Example") == [
        url,
        "© Example",
    ]
    # Drawn from OpenStreetMap data unless said otherwise: its credit stays.
    assert read_tiles(TRACKING_TILE_URL=url)[1] == OSM_CREDIT


@pytest.mark.parametrize(
    "bad",
    ["tiles.example.com/{z}/{x}/{y}.png", "https://tiles.example.com/tiles.png", "none"],
)
def test_a_tile_url_that_cannot_work_stops_the_start(bad):
    done = tile_settings(TRACKING_TILE_URL=bad)
    assert done.returncode != 0
    assert "TRACKING_TILE_URL=" in done.stderr and "{z}, {x} and {y}" in done.stderr


def tracking_data(response) -> dict:
    page = response.content.decode()
    start = page.index('<script id="tracking-data" type="application/json">')
    return json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])


def test_the_tracking_page_draws_on_openstreetmap_by_default(open_for_business, alice):
    row = drop_in(DropStatus.PENDING, business=alice.business)

    response = Client().get(f"{TRACKING_PATH}{tracking_token(row.pk)}")

    assert tracking_data(response)["tiles"] == {"url": OSM_URL, "attribution": OSM_CREDIT}
    policy = response["Content-Security-Policy"]
    assert "img-src 'self' data: https://tile.openstreetmap.org;" in policy
    assert "script-src 'self';" in policy and "default-src 'none';" in policy


def test_the_policy_follows_the_tile_setting(open_for_business, alice, settings):
    row = drop_in(DropStatus.PENDING, business=alice.business)
    path = f"{TRACKING_PATH}{tracking_token(row.pk)}"
    settings.TRACKING_TILE_URL = "http://maps.internal:8080/{s}/{z}/{x}/{y}.png"
    assert (
        "img-src 'self' data: http://maps.internal:8080;"
        in (Client().get(path)["Content-Security-Policy"])
    )
    settings.TRACKING_TILE_URL = ""
    assert "img-src 'self' data:;" in Client().get(path)["Content-Security-Policy"]
    # The 404 page of a bad link sends it too.
    assert "default-src 'none'" in Client().get(f"{TRACKING_PATH}nope")["Content-Security-Policy"]


def test_a_subdomain_placeholder_is_any_subdomain():
    policy = content_security_policy("https://{s}.tile.example.org/{z}/{x}/{y}.png")
    assert "img-src 'self' data: https://*.tile.example.org;" in policy


def test_the_order_page_draws_on_openstreetmap_by_default(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "TILES-1")
    page = alice_web.get(f"/orders/{ids['TILES-1']}/").content.decode()
    start = page.index('<script id="map-data" type="application/json">')
    data = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    assert data["tiles"] == {"url": OSM_URL, "attribution": OSM_CREDIT}


def test_the_favicon_is_an_icon_and_every_frame_links_it(open_for_business, alice):
    favicon = Client().get("/favicon.ico")
    assert favicon.status_code == 200
    assert favicon["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert b"".join(favicon.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO file
    row = drop_in(DropStatus.PENDING, business=alice.business)
    for path in ["/login/", f"{TRACKING_PATH}{tracking_token(row.pk)}", f"{TRACKING_PATH}nope"]:
        assert '<link rel="icon" href="/favicon.ico"' in Client().get(path).content.decode()
