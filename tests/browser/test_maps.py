"""The maps in a real browser: streets under the pins, and pins whatever the tiles do.

The tests have no internet, so OpenStreetMap's tiles (the default) fail to load: exactly the
case that must still draw every pin and area, with OpenStreetMap's credit in the corner. A
real tile server on loopback then shows tiles loading under the recipient's
Content-Security-Policy, asked for with the site's origin as Referer and never the page's
address (a tracking link holds its token). Every pin must sit wholly inside its map, at 390
and 1280 px.
"""

from __future__ import annotations

import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from orders.models import Drop
from tests.browser.helpers import bulk, log_in, page_opener
from tests.factories import UserFactory, batch, drop, group
from tests.reliability.batch_hold import open_all_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [390, 1280]
EMAIL = "owner@lotus.example"
# A drop-off north of the shop: its pin stands at the map's top.
SHOP = {"lat": 11.5564, "long": 104.9282}
NORTH = {"lat": 11.5896, "long": 104.9210}

# Each pin's drawn shape (the rotated teardrop, its border and shadow included), measured
# against its map's box: negative overhangs mean it is cut off.
PIN_OVERHANG = """(map) => {
  const box = map.getBoundingClientRect();
  return [...map.querySelectorAll(".pin > span")].map((shape) => {
    const r = shape.getBoundingClientRect();
    return {
      pin: shape.parentElement.className,
      top: r.top - 4 - box.top, left: r.left - 4 - box.left,
      bottom: box.bottom - (r.bottom + 4), right: box.right - (r.right + 4),
    };
  });
}"""
CSP_WATCH = """window.__refused = [];
document.addEventListener("securitypolicyviolation", (e) => window.__refused.push(e.blockedURI));"""


def png_tile() -> bytes:
    """A 256 px pale tile with a darker border: tiles that loaded show as a grid."""
    rows = b"".join(
        b"\x00"
        + b"".join(b"\xb8\xc4\xd0" if x < 2 or y < 2 else b"\xe9\xf0\xe4" for x in range(256))
        for y in range(256)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 256, 256, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class TileServer:
    """A tile server on loopback: answers every /{z}/{x}/{y}.png, noting each request's Referer."""

    def __init__(self) -> None:
        tile, referers = png_tile(), []
        self.referers: list[str | None] = referers

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                referers.append(self.headers.get("Referer"))
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(tile)))
                self.end_headers()
                self.wfile.write(tile)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tile_server(settings):
    server = TileServer()
    settings.TRACKING_TILE_URL = server.url + "/{z}/{x}/{y}.png"
    settings.TRACKING_TILE_ATTRIBUTION = "© Test tiles"
    yield server
    server.stop()


@pytest.fixture
def order(make_tenant, live_server, settings) -> dict:
    """Lotus Bakery's drop north of its shop, on its way: pickup, drop-off and courier pins."""
    open_all_day()
    settings.RATE_LIMIT_TRACKING_PAGE = "1000/minute"
    tenant = make_tenant(name="Lotus Bakery", sandbox_balance="50.00")
    user = UserFactory(username=EMAIL, email=EMAIL)
    tenant.business.memberships.create(user=user, is_owner=True)
    body = batch(group(drop("NORTH-1", **NORTH), **SHOP), client_batch_id="north-run")
    status, answer = bulk(live_server.url, tenant.sandbox_key, body)
    assert status == 200, answer
    [entry] = answer["data"]["orders"]
    Drop.objects.filter(pk=entry["drop_id"]).update(status="PICKED_UP", courier_progress=0.4)
    return {**entry, "batch_id": answer["data"]["batch_id"]}


@pytest.fixture
def sized(browser, live_server):
    with page_opener(browser, live_server.url, init_script=CSP_WATCH) as open_page:
        yield open_page


def assert_pins_inside(page: Page, selector: str, count: int) -> None:
    overhangs = page.locator(selector).evaluate(PIN_OVERHANG)
    assert len(overhangs) == count, overhangs
    for pin in overhangs:
        assert min(pin["top"], pin["left"], pin["bottom"], pin["right"]) >= 0, pin


def assert_osm_credit(page: Page, selector: str) -> None:
    credit = page.locator(f"{selector} .leaflet-control-attribution")
    expect(credit).to_contain_text("© OpenStreetMap contributors")
    link = credit.get_by_role("link", name="OpenStreetMap")
    expect(link).to_have_attribute("href", "https://www.openstreetmap.org/copyright")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_tracking_page_draws_its_pins_when_openstreetmap_cannot_be_reached(
    order, sized, screenshot, width
):
    page = sized(width)
    page.goto(urlsplit(order["tracking_url"]).path)
    page.wait_for_selector('#tracking-map[data-ready="true"]')

    for pin in (".pin-pickup", ".pin-drop", ".pin-courier"):
        expect(page.locator(f"#tracking-map {pin}")).to_have_count(1)
    expect(page.locator("#tracking-map path.service-area")).to_have_count(1)
    tiles = page.locator("#tracking-map img.leaflet-tile")
    expect(tiles.first).to_be_attached()  # asked for, and failed: no internet here
    assert tiles.first.get_attribute("src").startswith("https://tile.openstreetmap.org/")
    assert page.locator("#tracking-map img.leaflet-tile-loaded").count() == 0
    assert_osm_credit(page, "#tracking-map")
    assert_pins_inside(page, "#tracking-map", 3)
    screenshot(page, f"tracking-offline-tiles-{width}")


def test_tiles_load_under_the_recipients_policy_and_never_learn_the_link(
    order, tile_server, sized, screenshot, live_server
):
    page = sized(1280)
    path = urlsplit(order["tracking_url"]).path
    page.goto(path)
    page.wait_for_selector('#tracking-map[data-ready="true"]')

    expect(page.locator("#tracking-map img.leaflet-tile-loaded").first).to_be_visible()
    expect(page.locator("#tracking-map .leaflet-control-attribution")).to_contain_text(
        "© Test tiles"
    )
    assert page.evaluate("window.__refused") == []
    assert tile_server.referers, "no tile was asked for"
    assert set(tile_server.referers) == {live_server.url + "/"}  # the origin, not the path
    screenshot(page, "tracking-local-tiles-1280")


def test_a_policy_without_the_tile_host_is_what_blocks_tiles(order, tile_server, sized, settings):
    """The check above can fail: a policy naming another tile host refuses these tiles."""
    page = sized(1280)
    page.route(
        "**/t/**",
        lambda route: route.fulfill(
            response=(fetched := route.fetch()),
            headers={
                **fetched.headers,
                "content-security-policy": fetched.headers["content-security-policy"].replace(
                    tile_server.url, "https://elsewhere.example"
                ),
            },
        ),
    )
    page.goto(urlsplit(order["tracking_url"]).path)
    page.wait_for_selector('#tracking-map[data-ready="true"]')
    page.wait_for_function("window.__refused.length > 0")
    assert page.locator("#tracking-map img.leaflet-tile-loaded").count() == 0


@pytest.mark.parametrize("width", WIDTHS)
def test_the_order_page_fits_its_pins_with_room_for_them(order, sized, screenshot, width):
    page = sized(width)
    log_in(page, EMAIL)
    page.goto(f"/orders/{order['drop_id']}/")
    page.wait_for_selector('#dashboard-map[data-ready="true"]')

    assert_pins_inside(page, "#dashboard-map", 3)
    assert_osm_credit(page, "#dashboard-map")
    screenshot(page, f"order-map-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_batch_page_draws_its_pins_when_tiles_cannot_load(order, sized, screenshot, width):
    page = sized(width)
    log_in(page, EMAIL)
    page.goto(f"/batches/{order['batch_id']}/")
    page.wait_for_selector('#dashboard-map[data-ready="true"]')

    expect(page.locator("#dashboard-map .pin-drop")).to_have_count(1)
    expect(page.locator("#dashboard-map .pin-pickup")).to_have_count(1)
    assert_pins_inside(page, "#dashboard-map", 2)
    assert_osm_credit(page, "#dashboard-map")
    screenshot(page, f"batch-map-{width}")
