"""The recipient's tracking page in a real browser (docs/contract.md §14).

A `deliver` sandbox scenario is walked by a real `manage.py db_worker` on the real clock while
two phones' worth of browser (360 px and 1280 px wide) watch /t/<token> update itself in place
(tracking.js reads the page again every second, never reloads it) from Pending to Delivered,
map drawn, nothing private on the page, and stop looking once delivered; then the delivery
photo's signed link, which works until it expires and never after.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from orders.models import Drop, DropStatus, ProofMethod
from tests.browser.conftest import SCREENSHOTS, _taken
from tests.browser.helpers import bulk
from tests.factories import PHONE, RECIPIENT_PHONE, batch, drop, group
from tests.reliability.batch_hold import open_all_day
from tests.reliability.gunicorn_server import wait_for
from tests.workers import db_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

S = DropStatus
NARROW = {"width": 360, "height": 780}
WIDE = {"width": 1280, "height": 800}
STATE_CHANGE_MS = 30_000
# Not a random PIN: a random one could equal, by chance, a number the drawn map puts in the
# page (the SVG's pixel sizes and z-indexes stay under 2000; coordinates and timestamps are
# fractions, which the search below skips).
PIN = "9731"
SAMPLE_PNG = (
    Path(__file__).resolve().parents[2] / "tracking" / "assets" / "sandbox-proof.png"
).read_bytes()  # what the sandbox attaches as the delivery photo

# One reading of the page as drawn, every field at one moment: tracking.js puts a fresh copy
# into the page in one go, so a reading never mixes two states. Null (so wait_for_function
# tries again) until the map is drawn in a wanted state.
READ_PAGE = """(statuses) => {
  const main = document.querySelector("main.tracking");
  const drawn = document.querySelector('#tracking-map[data-ready="true"]');
  if (!main || !drawn || !statuses.includes(main.dataset.status)) return null;
  const has = (selector) => document.querySelector(selector) !== null;
  return JSON.stringify({
    status: main.dataset.status,
    pickup_pin: has(".pin-pickup"),
    drop_pin: has(".pin-drop"),
    courier_pin: has(".pin-courier"),
    service_area: has("path.service-area"),
    refresh_seconds: main.dataset.refreshSeconds ?? null,
    poll_seconds: main.dataset.pollSeconds ?? null,
    noscript_refresh: has('noscript'),
    scroll_width: document.documentElement.scrollWidth,
    html: document.documentElement.outerHTML,
  });
}"""


@dataclass(frozen=True, slots=True)
class Drawn:
    status: str
    pickup_pin: bool
    drop_pin: bool
    courier_pin: bool
    service_area: bool
    refresh_seconds: str | None  # what the server asks for, while the drop is active
    poll_seconds: str | None  # tracking.js's wait before its next look; None once it stopped
    noscript_refresh: bool
    scroll_width: int
    html: str


@dataclass(slots=True)
class Requests:
    """What one browser page asked of its own /t/<token>: whole loads and tracking.js's looks."""

    loads: int = 0
    looks: int = 0


def watch(page: Page, path: str) -> Requests:
    seen = Requests()

    def count(request) -> None:
        if urlsplit(request.url).path != path:
            return
        if request.resource_type == "document":
            seen.loads += 1
        elif request.resource_type == "fetch":
            seen.looks += 1

    page.on("request", count)
    return seen


@pytest.fixture(autouse=True)
def _recipient_side(settings, tmp_path):
    # The worker stores the sample photo under its MEDIA_ROOT; the live server serves it.
    settings.MEDIA_ROOT = tmp_path / "media"
    # Two browsers reading the page every second, and their photos, all from 127.0.0.1.
    settings.RATE_LIMIT_TRACKING_PAGE = "1000/minute"


@pytest.fixture
def shop(make_tenant):
    open_all_day()  # the browser and the worker run on the real clock, at any hour
    return make_tenant(name="Lotus Bakery", sandbox_balance="50.00")


@pytest.fixture
def save_as(screenshot_folder):
    """save_as(page, "tracking-pending-360"): a full-page PNG under exactly that name."""

    def save(page: Page, name: str) -> None:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        _taken.append(path)

    return save


def worker(tmp_path: Path, settings, step: float):
    """A db_worker walking scenarios one step every `step` seconds, as the live server
    (which dates the first step) counts them."""
    settings.SANDBOX_STEP_SECONDS = step
    env = {"SANDBOX_STEP_SECONDS": str(step), "MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    return db_worker(tmp_path / "worker.log", env=env)


def send_deliver(base_url: str, key: str, *, pin: bool) -> dict:
    """One `deliver` scenario drop through the real API; its accepted entry."""
    extra = {"dropoff_verification": {"pin": True}} if pin else {}
    body = batch(
        group({**drop("LOTUS-1", name="Sreymom Chea"), "sandbox_scenario": "deliver", **extra})
    )
    status, answer = bulk(base_url, key, body)
    assert status == 200, answer
    (order,) = answer["data"]["orders"]
    assert order["status"] == "accepted", order
    return order


def page_path(order: dict) -> str:
    """/t/<token>: on the live server, whatever host BASE_URL gives the link."""
    return urlsplit(order["tracking_url"]).path


def reach(page: Page, *statuses: str) -> Drawn:
    """Wait (only wait: the page updates itself) for one of these states, map drawn."""
    wanted = re.compile(rf"^({'|'.join(statuses)})$")
    tracking = page.locator("main.tracking")
    expect(tracking).to_have_attribute("data-status", wanted, timeout=STATE_CHANGE_MS)
    reading = page.wait_for_function(READ_PAGE, arg=list(statuses), timeout=STATE_CHANGE_MS)
    return Drawn(**json.loads(reading.json_value()))


def shows(value: str, html: str) -> bool:
    """`value` on its own in the page, not inside a longer word, number or fraction."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", html) is not None


def assert_nothing_private(html: str, order: dict) -> None:
    for phone in (PHONE, RECIPIENT_PHONE):  # the shop's and the recipient's
        assert phone.removeprefix("+855") not in html, phone
    assert "+855" not in html
    assert not shows(order["price"], html), order["price"]
    assert not re.search(r"\bprice\b", html, re.I)
    assert not shows(PIN, html)
    assert "Chea" not in html  # the recipient's last name: the page greets by first name


def test_the_page_follows_a_pin_delivery_by_itself_with_its_map(
    shop, new_page, live_server, settings, tmp_path, save_as
):
    settings.TRACKING_PAGE_REFRESH_SECONDS = 1
    narrow, wide = new_page(), new_page()
    narrow.set_viewport_size(NARROW)
    widths = ((narrow, 360), (wide, 1280))

    with worker(tmp_path, settings, step=3):
        order = send_deliver(live_server.url, shop.sandbox_key, pin=True)
        Drop.objects.filter(pk=order["drop_id"]).update(dropoff_pin=PIN)
        requests = {}
        for page, width in widths:
            requests[width] = watch(page, page_path(order))
            page.goto(page_path(order))

        # Waiting for a courier, or one on the way to the shop: the page updates itself.
        for page, width in widths:
            drawn = reach(page, S.PENDING, S.ASSIGNED)
            assert drawn.pickup_pin and drawn.drop_pin and drawn.service_area, drawn.status
            # The courier is drawn from ASSIGNED on, once the worker has placed them.
            assert drawn.courier_pin == (drawn.status == S.ASSIGNED)
            # Asked for every second; the script looks every second. With JavaScript running
            # the <noscript> refresh is inert text: only a browser without it reloads.
            assert (drawn.refresh_seconds, drawn.poll_seconds) == ("1", "1")
            assert drawn.noscript_refresh
            assert_nothing_private(drawn.html, order)
            if width == 360:
                assert drawn.scroll_width <= 360
            expect(page.locator(".business-name")).to_have_text("Lotus Bakery")
            expect(page.locator(".recipient-name")).to_have_text("Sreymom")
            save_as(page, f"tracking-pending-{width}")
            # Still not picked up after the picture: it shows this state, not the next.
            expect(page.locator("main.tracking")).to_have_attribute(
                "data-status", re.compile(r"^(PENDING|ASSIGNED)$")
            )

        # On its way: the courier is on the map between the shop and the door.
        for page, width in widths:
            drawn = reach(page, S.PICKED_UP)
            assert drawn.pickup_pin and drawn.drop_pin and drawn.service_area
            assert drawn.courier_pin
            assert (drawn.refresh_seconds, drawn.poll_seconds) == ("1", "1")
            assert_nothing_private(drawn.html, order)
            if width == 360:
                assert drawn.scroll_width <= 360
            expect(page.locator('dl.eta > div[data-eta="pickup"] dt')).to_have_text("Picked up")
            save_as(page, f"tracking-picked-up-{width}")
            expect(page.locator("main.tracking")).to_have_attribute("data-status", S.PICKED_UP)

        # Delivered: proof by PIN with the photo, no courier, and the page stops looking.
        looks_when_delivered = {}
        for page, width in widths:
            drawn = reach(page, S.DELIVERED)
            looks_when_delivered[width] = requests[width].looks
            assert drawn.pickup_pin and drawn.drop_pin and drawn.service_area
            assert not drawn.courier_pin
            assert (drawn.refresh_seconds, drawn.poll_seconds) == (None, None)
            assert_nothing_private(drawn.html, order)
            # The status is in a polite live region: a screen reader hears it change.
            expect(page.locator('[aria-live="polite"] h1')).to_have_text("Delivered")
            expect(page.locator(".tracking-footer")).not_to_contain_text("updates itself")
            if width == 360:
                assert drawn.scroll_width <= 360
            expect(page.locator('div.proof[data-method="pin"]')).to_be_visible()
            photo = page.locator("img.proof-photo")
            photo.scroll_into_view_if_needed()  # it loads lazily
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=photo.element_handle()
            )
            timeline = page.locator("ol.timeline > li[data-status]")
            expect(timeline).to_have_count(4)
            assert [li.get_attribute("data-status") for li in timeline.all()] == [
                S.PENDING,
                S.ASSIGNED,
                S.PICKED_UP,
                S.DELIVERED,
            ]
            expect(timeline.locator("time[datetime]")).to_have_count(4)
            expect(timeline.locator("abbr.zone")).to_have_count(4)
            page.evaluate("window.scrollTo(0, 0)")
            save_as(page, f"tracking-delivered-{width}")

        # Three more intervals: not one more look. And every state came by the script's looks,
        # in place: each page was loaded once, so the map was drawn once and never jumped.
        narrow.wait_for_timeout(3_000)
        for _, width in widths:
            seen = requests[width]
            assert seen.looks == looks_when_delivered[width], width
            assert seen.loads == 1, width
            assert seen.looks >= 3, width  # Pending to Delivered takes several seconds


def test_the_delivery_photo_link_works_until_it_expires_and_never_when_forged(
    shop, page, live_server, settings, tmp_path
):
    settings.POD_PHOTO_URL_SECONDS = 5
    with worker(tmp_path, settings, step=0.4):
        order = send_deliver(live_server.url, shop.sandbox_key, pin=False)
        delivered = Drop.objects.filter(pk=order["drop_id"], status=S.DELIVERED)
        wait_for("the drop to be delivered", delivered.exists, timeout=30)

    # The link is signed when the page is rendered, in whole seconds: by `valid_until` it has
    # certainly expired, and before `rendered_at + 4` it is certainly still good.
    rendered_at = time.time()
    page.goto(page_path(order))
    valid_until = time.time() + settings.POD_PHOTO_URL_SECONDS + 0.3
    expect(page.locator("main.tracking")).to_have_attribute("data-status", S.DELIVERED)
    photo = page.locator("img.proof-photo")
    src = photo.get_attribute("src")
    assert src and src.startswith("/pod/"), src
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=photo.element_handle()
    )

    fresh = page.request.get(src)
    assert time.time() < rendered_at + 4, "too slow to tell a fresh link from an expired one"
    assert fresh.status == 200
    assert fresh.headers["content-type"] == "image/png"
    assert fresh.body() == SAMPLE_PNG

    forged = src[:-1] + ("A" if src[-1] != "A" else "B")  # one character of the signature
    assert page.request.get(forged).status == 404

    # Nothing in the browser can wait for a server-side clock: this one wait is a sleep.
    time.sleep(max(0.0, valid_until - time.time()))
    expired = page.request.get(src)
    assert expired.status == 404
    assert "Link not found" in expired.text()
    assert SAMPLE_PNG not in expired.body()

    # The page, opened again, signs a new link that works.
    page.goto(page_path(order))
    again = page.locator("img.proof-photo").get_attribute("src")
    assert again != src
    assert page.request.get(again).status == 200


# Where Leaflet has put the map's view and each pin: the transforms it sets on them.
MAP_VIEW = """() => ({
  pane: document.querySelector(".leaflet-map-pane").style.transform,
  pickup: document.querySelector(".pin-pickup").style.transform,
  drop: document.querySelector(".pin-drop").style.transform,
  courier: document.querySelector(".pin-courier")?.style.transform ?? null,
})"""
# Every change of the polite live region, as a screen reader would be told it.
HEAR_LIVE_REGION = """() => {
  window.heard = [];
  const live = document.querySelector('[aria-live="polite"]');
  new MutationObserver(() => window.heard.push(live.textContent.trim())).observe(
    live, {childList: true, subtree: true, characterData: true}
  );
}"""


def one_drop(base_url: str, key: str, **state) -> dict:
    """One plain drop (no scenario: nothing moves it but the test), put in this state."""
    status, answer = bulk(base_url, key, batch(group(drop("LOTUS-2", name="Sreymom Chea"))))
    assert status == 200, answer
    (order,) = answer["data"]["orders"]
    Drop.objects.filter(pk=order["drop_id"]).update(**state)
    return order


def test_the_courier_moves_on_the_same_map_and_only_a_new_status_is_announced(
    shop, page, live_server, settings
):
    settings.TRACKING_PAGE_REFRESH_SECONDS = 1
    order = one_drop(live_server.url, shop.sandbox_key, status=S.PICKED_UP, courier_progress=0.2)
    seen = watch(page, page_path(order))
    page.goto(page_path(order))
    page.wait_for_selector('#tracking-map[data-ready="true"]')
    page.evaluate(HEAR_LIVE_REGION)
    first = page.evaluate(MAP_VIEW)
    looks = seen.looks

    Drop.objects.filter(pk=order["drop_id"]).update(courier_progress=0.8)
    page.wait_for_function(
        "before => document.querySelector('.pin-courier').style.transform !== before",
        arg=first["courier"],
    )

    moved = page.evaluate(MAP_VIEW)
    assert seen.looks > looks
    # The same map: the view and the other pins where they were, one courier pin.
    assert {k: moved[k] for k in ("pane", "pickup", "drop")} == {
        k: first[k] for k in ("pane", "pickup", "drop")
    }
    expect(page.locator(".pin-courier")).to_have_count(1)
    assert page.evaluate("window.heard") == []  # the same status: nothing to hear

    Drop.objects.filter(pk=order["drop_id"]).update(
        status=S.DELIVERED, pod_method=ProofMethod.PIN, courier_progress=None
    )
    expect(page.locator("main.tracking")).to_have_attribute("data-status", S.DELIVERED)

    assert page.evaluate("window.heard") == ["Delivered"]
    assert page.title().startswith("Delivered · ")
    expect(page.locator(".pin-courier")).to_have_count(0)
    expect(page.locator(".swatch-courier")).to_have_count(0)
    expect(page.locator('div.proof[data-method="pin"]')).to_be_visible()
    expect(page.locator("dl.eta")).to_have_count(0)
    done = page.evaluate(MAP_VIEW)
    assert {k: done[k] for k in ("pane", "pickup", "drop")} == {
        k: first[k] for k in ("pane", "pickup", "drop")
    }
    looks = seen.looks
    page.wait_for_timeout(2_500)
    assert seen.looks == looks
    assert seen.loads == 1
    expect(page.locator("main.tracking[data-poll-seconds]")).to_have_count(0)


def test_the_page_waits_longer_when_refused(shop, page, live_server, settings):
    settings.TRACKING_PAGE_REFRESH_SECONDS = 1
    order = one_drop(live_server.url, shop.sandbox_key, status=S.PENDING)
    page.goto(page_path(order))
    tracking = page.locator("main.tracking")
    expect(tracking).to_have_attribute("data-poll-seconds", "1")

    # Over the limit: the next look is refused (429, Retry-After) and the one after waits.
    settings.RATE_LIMIT_TRACKING_PAGE = "1/minute"
    page.wait_for_function(
        "() => Number(document.querySelector('main.tracking').dataset.pollSeconds) > 1"
    )

    # Retry-After says the rest of the minute: the script waits that, not double of 1 s.
    assert int(tracking.get_attribute("data-poll-seconds")) > 30
    expect(tracking).to_have_attribute("data-status", S.PENDING)
    expect(page.locator("h1")).to_have_text("Waiting for a courier")


def test_the_page_stops_looking_when_its_link_is_gone(shop, page, live_server, settings):
    settings.TRACKING_PAGE_REFRESH_SECONDS = 1
    order = one_drop(live_server.url, shop.sandbox_key, status=S.PENDING)
    seen = watch(page, page_path(order))
    page.goto(page_path(order))
    tracking = page.locator("main.tracking")
    expect(tracking).to_have_attribute("data-poll-seconds", "1")

    # The link stops opening the page (404) while it is open: the key it was made under is
    # rotated out (no SECRET_KEY_FALLBACKS), so its token names no drop any more.
    settings.SECRET_KEY = "a-rotated-secret-key-" + "z" * 40
    expect(page.locator("main.tracking[data-poll-seconds]")).to_have_count(0)

    looks = seen.looks
    page.wait_for_timeout(2_500)
    assert seen.looks == looks
    # What it showed stays; it no longer claims to update itself.
    expect(tracking).to_have_attribute("data-status", S.PENDING)
    expect(page.locator(".tracking-footer")).not_to_contain_text("updates itself")
