"""The recipient's pages (docs/contract.md §14): /t/<token> and the delivery photo at /pod/<signed>.

What a recipient sees, what they must never see, when the page updates itself (and refreshes
without JavaScript), the map's data, the limits per client address, and every bad link
answering the same plain 404 page.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import time_machine
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client, override_settings

from geo.models import ServiceArea
from orders.links import TRACKING_PATH, tracking_token
from orders.models import DeliveryEvent, Drop, DropStatus, FailureReason, ProofMethod
from tests.factories import batch, drop, group
from tests.fixtures import OPEN_HOURS
from tests.tracking.helpers import advance, drop_in
from tracking.page_data import STATUS_WORDS
from tracking.proof import photo_url

S = DropStatus
ACTIVE = [S.SCHEDULED, S.PENDING, S.ASSIGNED, S.PICKED_UP, S.RETURNING]
FINISHED = [S.DELIVERED, S.FAILED, S.RETURNED, S.CANCELLED]
PNG = (
    Path(__file__).resolve().parents[2] / "tracking" / "assets" / "sandbox-proof.png"
).read_bytes()
DATA = re.compile(r'<script id="tracking-data" type="application/json">(.*?)</script>', re.S)
REFRESH = 'http-equiv="refresh"'
# The regions tracking.js swaps from a fresh copy of the page: in every state, so it finds them.
REGIONS = ["status", "details", "legend", "timeline", "refresh-note"]


@pytest.fixture(autouse=True)
def _fresh_counters(db):
    cache.clear()  # with CACHE_URL=redis:// the limits count in the cache
    yield
    cache.clear()


@pytest.fixture
def web() -> Client:
    return Client()


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def page_path(row: Drop) -> str:
    return f"{TRACKING_PATH}{tracking_token(row.pk)}"


def html(response) -> str:
    return response.content.decode()


def map_data(response) -> dict:
    found = DATA.search(html(response))
    assert found, "no #tracking-data on the page"
    return json.loads(found[1])


def with_history(row: Drop, *steps: tuple[str, datetime]) -> Drop:
    """Replace the drop's history with these (status, at) steps.

    The first is its creation, which is no event row: the drop's created_at, in
    the status a drop of an unscheduled pickup starts in. The others are stored moves.
    """
    (first, created_at), *moves = steps
    assert first == S.PENDING, "an unscheduled drop is created PENDING"
    Drop.objects.filter(pk=row.pk).update(created_at=created_at)
    DeliveryEvent.objects.filter(drop=row).delete()
    DeliveryEvent.objects.bulk_create(
        [DeliveryEvent(drop=row, status=status, at=at, actor="test") for status, at in moves]
    )
    return row


def stored_photo(row: Drop, name: str = "proof/2026/11/door.png") -> Drop:
    row.pod_photo = default_storage.save(name, ContentFile(PNG))
    row.pod_method = ProofMethod.PHOTO
    row.status = S.DELIVERED
    row.save(update_fields=["pod_photo", "pod_method", "status"])
    return row


def photo_path(row: Drop) -> str:
    """The path of a freshly signed photo URL (the host is BASE_URL's, not the test client's)."""
    return urlsplit(photo_url(str(row.pk))).path


# --- What the recipient sees ---


def test_the_page_shows_business_first_name_status_timeline_eta_and_zone(
    open_for_business, alice, web
):
    row = drop_in(S.PICKED_UP, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(recipient_name="Sophea  Kosal Vann")
    minutes = [timedelta(minutes=m) for m in (20, 15, 8)]
    with_history(
        row,
        (S.PENDING, OPEN_HOURS - minutes[0]),
        (S.ASSIGNED, OPEN_HOURS - minutes[1]),
        (S.PICKED_UP, OPEN_HOURS - minutes[2]),
    )

    response = web.get(page_path(row))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    body = html(response)
    assert "Alice Shop" in body
    assert '<span class="recipient-name">Sophea</span>' in body
    assert '<main class="tracking" data-status="PICKED_UP" data-refresh-seconds="' in body
    assert "On its way" in body
    # The timeline, in order, in Phnom Penh time (UTC+7) with the zone's label on each time.
    steps = re.findall(r'<li data-status="([A-Z_]+)">(.*?)</li>', body, re.S)
    assert [status for status, _ in steps] == ["PENDING", "ASSIGNED", "PICKED_UP"]
    assert [re.search(r">(Mon 23 Nov, \d\d:\d\d)</time>", text)[1] for _, text in steps] == [
        "Mon 23 Nov, 09:40",
        "Mon 23 Nov, 09:45",
        "Mon 23 Nov, 09:52",
    ]
    assert all(
        '<abbr class="zone" title="Asia/Phnom_Penh time">UTC+7</abbr>' in t for _, t in steps
    )
    assert 'datetime="2026-11-23T02:52:00.000Z"' in body
    # The ETA: after pickup its pickup time is when it happened; the delivery is a forecast.
    eta = re.search(r'<dl class="eta">(.*?)</dl>', body, re.S)[1]
    assert "Picked up" in eta and "Mon 23 Nov, 09:52" in eta
    assert 'data-eta="dropoff"' in eta and re.search(r"Mon 23 Nov, 1\d:\d\d</time>", eta)


def test_a_pending_drop_shows_its_expected_pickup_and_delivery(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    body = html(web.get(page_path(row)))

    assert "Waiting for a courier" in body
    eta = re.search(r'<dl class="eta">(.*?)</dl>', body, re.S)[1]
    assert "Expected pickup" in eta and "Expected delivery" in eta
    assert eta.count("UTC+7") == 2


def test_the_page_never_shows_phones_price_last_name_pin_or_other_drops(
    open_for_business, alice, api, web
):
    body = batch(
        group(
            {**drop("MINE-1", name="Sophea Kosalvath"), "dropoff_verification": {"pin": True}},
            drop("THEIRS-2", name="Dara Other"),
        )
    )
    accepted = {
        o["client_order_id"]: o for o in api.bulk(body, alice.sandbox_key).json()["data"]["orders"]
    }
    mine = Drop.objects.get(pk=accepted["MINE-1"]["drop_id"])
    theirs = Drop.objects.get(pk=accepted["THEIRS-2"]["drop_id"])
    Drop.objects.filter(pk=mine.pk).update(dropoff_pin="1234")
    # A courier on the way: the driver's name and phone are on the order now.
    advance(api, alice.sandbox_key, "MINE-1", to=S.ASSIGNED)

    page = html(web.get(page_path(mine)))

    assert "Sophea" in page and "Alice Shop" in page
    for secret in (
        "Kosalvath",  # the last name
        "1234",  # the PIN
        "+85512345679",  # the recipient's phone
        "85512345679",
        "+85512345678",  # the pickup's phone
        "+85512000000",  # the driver's phone
        "Sandbox Test Driver",
        accepted["MINE-1"]["price"],
        "MINE-1",  # not even its own reference: the business's, not the recipient's
        "THEIRS-2",
        "Dara",
        tracking_token(theirs.pk),
        str(theirs.pk),
        str(mine.pk),
        str(mine.batch_id),
    ):
        assert secret not in page, secret


def test_the_map_data_holds_coordinates_only(open_for_business, alice, web):
    row = drop_in(S.PICKED_UP, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(courier_progress=0.5)

    data = map_data(web.get(page_path(row)))

    assert set(data) == {"status", "pickup", "drop", "courier", "areas", "tiles"}
    assert data["pickup"] == [row.order.pickup_lat, row.order.pickup_long]
    assert data["drop"] == [row.lat, row.long]


# --- The courier ---


@pytest.mark.parametrize("status", [S.ASSIGNED, S.PICKED_UP])
def test_the_courier_is_drawn_along_the_way_while_one_is_on_it(
    open_for_business, alice, web, status
):
    row = drop_in(status, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(courier_progress=0.25)

    data = map_data(web.get(page_path(row)))

    pickup, dropoff = data["pickup"], data["drop"]
    expected = [p + (d - p) * 0.25 for p, d in zip(pickup, dropoff, strict=True)]
    assert data["courier"] == pytest.approx(expected)
    assert data["status"] == status


@pytest.mark.parametrize(
    ("status", "progress"),
    [
        (S.PICKED_UP, None),  # no position known
        (S.PENDING, 0.5),
        (S.DELIVERED, 0.7),
        (S.FAILED, 0.7),
        (S.CANCELLED, 0.0),
    ],
)
def test_no_courier_without_a_position_or_once_the_drop_is_done(
    open_for_business, alice, web, status, progress
):
    row = drop_in(status, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(courier_progress=progress)

    response = web.get(page_path(row))

    assert map_data(response)["courier"] is None
    assert "swatch-courier" not in html(response)


# --- Finished drops ---


def test_a_delivered_drop_shows_its_proof_and_photo_which_opens(
    open_for_business, alice, web, media
):
    row = stored_photo(drop_in(S.DELIVERED, business=alice.business))
    Drop.objects.filter(pk=row.pk).update(pod_received_by="Her neighbour")
    delivered_at = OPEN_HOURS - timedelta(minutes=3)
    with_history(row, (S.PENDING, OPEN_HOURS - timedelta(hours=1)), (S.DELIVERED, delivered_at))

    body = html(web.get(page_path(row)))

    proof = re.search(
        r'<div class="proof" data-method="photo">(.*?)</div>\s*</div>\s*</section>', body, re.S
    )
    assert proof, body
    assert "Photo taken at the door" in proof[1]
    assert "Her neighbour" in proof[1]
    assert "Mon 23 Nov, 09:57" in proof[1] and "UTC+7" in proof[1]
    src = re.search(r'<img class="proof-photo" src="([^"]+)"', proof[1])[1]
    assert src.startswith("/pod/")
    assert '<dl class="eta">' not in body

    photo = web.get(src)

    assert photo.status_code == 200
    assert b"".join(photo.streaming_content) == PNG
    assert photo["Content-Type"] == "image/png"
    assert photo["X-Content-Type-Options"] == "nosniff"
    max_age = int(re.fullmatch(r"private, max-age=(\d+)", photo["Cache-Control"])[1])
    assert 3590 <= max_age <= 3600


def test_a_delivered_drop_without_a_photo_has_no_img(open_for_business, alice, web):
    row = drop_in(S.DELIVERED, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(pod_method=ProofMethod.PIN)

    body = html(web.get(page_path(row)))

    assert "Confirmed with the delivery PIN" in body
    assert "<img" not in body


def test_a_failed_drop_says_why_in_words(open_for_business, alice, web):
    row = drop_in(S.FAILED, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(failure_reason=FailureReason.ADDRESS_NOT_FOUND)

    body = html(web.get(page_path(row)))

    assert "Delivery failed" in body
    assert '<div class="failure" data-reason="ADDRESS_NOT_FOUND">' in body
    assert "The courier could not find the address." in body


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (S.RETURNING, "Delivery failed: returning to the sender"),
        (S.RETURNED, "Returned to the sender"),
    ],
)
def test_a_failed_drop_on_its_way_back_says_so_and_why_it_failed(
    open_for_business, alice, web, status, words
):
    row = drop_in(status, business=alice.business)
    Drop.objects.filter(pk=row.pk).update(failure_reason=FailureReason.REFUSED)

    body = html(web.get(page_path(row)))

    assert f'<h1 class="tracking-status status-{status.lower()}">{words}</h1>' in body
    assert "The parcel was refused at the door." in body


def test_a_cancelled_drop_says_so(open_for_business, alice, web):
    row = drop_in(S.CANCELLED, business=alice.business)

    body = html(web.get(page_path(row)))

    assert '<main class="tracking" data-status="CANCELLED">' in body
    assert '<p class="cancelled">This delivery was cancelled.' in body
    assert '<div class="failure"' not in body and '<div class="proof"' not in body


# --- Headers and refreshing ---


def test_the_page_is_kept_out_of_search_engines_caches_and_referers(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    response = web.get(page_path(row))

    assert '<meta name="robots" content="noindex, nofollow">' in html(response)
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize("status", ACTIVE)
def test_an_active_drop_updates_itself_and_refreshes_without_javascript(
    open_for_business, alice, web, settings, status
):
    settings.TRACKING_PAGE_REFRESH_SECONDS = 7
    row = drop_in(status, business=alice.business)

    body = html(web.get(page_path(row)))

    # tracking.js reads the interval here; a browser without JavaScript reloads instead.
    assert f'<main class="tracking" data-status="{status}" data-refresh-seconds="7">' in body
    assert f'<noscript><meta {REFRESH} content="7"></noscript>' in body
    assert body.count(REFRESH) == 1  # never outside <noscript>: axe's meta-refresh rule
    assert "This page updates itself every 7 seconds." in body
    assert f'<noscript><p><a href="{page_path(row)}">Refresh now</a></p></noscript>' in body


@pytest.mark.parametrize("status", FINISHED)
def test_a_finished_drop_neither_updates_nor_refreshes(open_for_business, alice, web, status):
    row = drop_in(status, business=alice.business)

    body = html(web.get(page_path(row)))

    assert f'<main class="tracking" data-status="{status}">' in body
    assert "data-refresh-seconds" not in body
    assert REFRESH not in body
    assert "updates itself" not in body and "Refresh now" not in body


@pytest.mark.parametrize("status", [S.PENDING, S.PICKED_UP, S.DELIVERED, S.FAILED, S.CANCELLED])
def test_every_state_has_the_regions_the_script_swaps_and_announces_its_status(
    open_for_business, alice, web, status
):
    row = drop_in(status, business=alice.business)

    body = html(web.get(page_path(row)))

    assert re.findall(r'data-region="([a-z-]+)"', body) == REGIONS
    live = re.search(
        r'<div class="status-line" data-region="status" aria-live="polite" aria-atomic="true">'
        r"\s*<h1 [^>]*>([^<]+)</h1>\s*</div>",
        body,
    )
    assert live, body
    assert live[1] == STATUS_WORDS[status]


# --- The map ---


def test_the_map_draws_the_service_area_that_holds_the_drop(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)
    # Far away, active: not this drop's area, so not drawn.
    ServiceArea.objects.create(
        name="Siem Reap",
        geojson={
            "type": "Polygon",
            "coordinates": [[[103.8, 13.3], [103.9, 13.3], [103.9, 13.5], [103.8, 13.3]]],
        },
    )

    data = map_data(web.get(page_path(row)))

    [area] = data["areas"]
    assert area == [
        [[11.45, 104.80], [11.45, 105.0], [11.70, 105.0], [11.70, 104.8], [11.45, 104.8]]
    ]


def test_an_inactive_area_is_not_drawn(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)
    ServiceArea.objects.update(active=False)

    assert map_data(web.get(page_path(row)))["areas"] == []


@override_settings(
    TRACKING_TILE_URL="https://tiles.example.com/{z}/{x}/{y}.png",
    TRACKING_TILE_ATTRIBUTION="© Example contributors",
)
def test_a_tile_url_reaches_the_map(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    data = map_data(web.get(page_path(row)))

    assert data["tiles"] == {
        "url": "https://tiles.example.com/{z}/{x}/{y}.png",
        "attribution": "© Example contributors",
    }


@override_settings(TRACKING_TILE_URL="")
def test_without_a_tile_url_the_map_has_no_tiles(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    response = web.get(page_path(row))

    assert map_data(response)["tiles"] is None
    assert "://" not in html(response)  # nothing to fetch from elsewhere: works offline


def test_the_page_loads_leaflet_and_its_script_from_our_static_files(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    body = html(web.get(page_path(row)))

    assert '<script src="/static/leaflet/leaflet.js" defer></script>' in body
    assert '<script src="/static/tracking/tracking.js" defer></script>' in body
    assert 'href="/static/leaflet/leaflet.css"' in body
    assert "//unpkg.com" not in body and "//cdn" not in body


# --- Bad links ---


def test_an_unknown_token_is_the_plain_404_page(open_for_business, alice, web):
    drop_in(S.PENDING, business=alice.business)

    response = web.get(f"{TRACKING_PATH}{'A' * 22}")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert 'data-page="not-found"' in html(response)
    assert '<meta name="robots" content="noindex, nofollow">' in html(response)
    assert response["X-Robots-Tag"] == "noindex, nofollow"


@pytest.mark.parametrize(
    "tail",
    [
        "../../etc/passwd",
        "..%2F..%2Fetc",
        "A" * 200,
        "A" * 15,
        "%00",
        "AAAAAAAAAAAAAAAAAAAAA%00",
        "abc def ghi jkl mno pqr",
        "AAAAAAAAAAAAAAAAAAAAAA/extra",
        "",
        "' OR 1=1 --aaaaaaaa",
    ],
)
def test_a_malformed_token_is_the_404_page_without_a_lookup(
    open_for_business, web, django_assert_num_queries, tail
):
    with django_assert_num_queries(1):  # the rate-limit counter, nothing else
        response = web.get(f"/t/{tail}")

    assert response.status_code == 404
    assert 'data-page="not-found"' in html(response)
    assert response["X-Robots-Tag"] == "noindex, nofollow"


# --- Limits and cost ---


@override_settings(RATE_LIMIT_TRACKING_PAGE="3/minute")
def test_a_client_over_the_limit_gets_429_across_pages_and_photos(
    open_for_business, alice, web, media
):
    one = drop_in(S.PENDING, business=alice.business)
    two = stored_photo(drop_in(S.PENDING, business=alice.business))

    answers = [
        web.get(page_path(one)).status_code,
        web.get(page_path(two)).status_code,
        web.get(photo_path(two)).status_code,
    ]
    refused = web.get(page_path(one))
    refused_photo = web.get(photo_path(two))
    elsewhere = web.get(page_path(one), REMOTE_ADDR="192.0.2.77")

    assert answers == [200, 200, 200]
    assert refused.status_code == 429 and refused_photo.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused["Content-Type"].startswith("text/html")
    assert 'data-page="rate-limited"' in html(refused)
    assert elsewhere.status_code == 200


@override_settings(RATE_LIMIT_TRACKING_PAGE="2/minute")
def test_bad_tokens_count_too_and_the_window_ends(open_for_business, alice, web):
    row = drop_in(S.PENDING, business=alice.business)

    guesses = [web.get(f"/t/{'B' * 22}").status_code for _ in range(2)]
    assert guesses == [404, 404]
    assert web.get(page_path(row)).status_code == 429

    open_for_business.shift(timedelta(seconds=61))
    assert web.get(page_path(row)).status_code == 200


def test_the_page_costs_the_same_queries_however_long_the_history(
    open_for_business, alice, web, django_assert_max_num_queries
):
    short = drop_in(S.PICKED_UP, business=alice.business)
    long = drop_in(S.PICKED_UP, business=alice.business)
    with_history(
        long,
        *[
            (S.ASSIGNED if i % 2 else S.PENDING, OPEN_HOURS - timedelta(minutes=60 - i))
            for i in range(30)
        ],
    )

    with django_assert_max_num_queries(6) as short_queries:
        assert web.get(page_path(short)).status_code == 200
    with django_assert_max_num_queries(6) as long_queries:
        assert web.get(page_path(long)).status_code == 200

    assert len(short_queries.captured_queries) == len(long_queries.captured_queries)


# --- The photo URL ---


def test_a_forged_photo_signature_is_404(open_for_business, alice, web, media):
    row = stored_photo(drop_in(S.PENDING, business=alice.business))
    good = photo_path(row)
    forged = good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB")
    other = stored_photo(drop_in(S.PENDING, business=alice.business), "proof/2026/11/b.png")
    # A valid signature moved onto another drop's id.
    swapped = good.replace(str(row.pk), str(other.pk))

    for path in (
        forged,
        swapped,
        "/pod/",
        "/pod/../../etc/passwd",
        "/pod/%00",
        "/pod/" + "x" * 300,
    ):
        response = web.get(path)
        assert response.status_code == 404, path
        assert 'data-page="not-found"' in html(response)
    assert web.get(good).status_code == 200


def test_an_expired_photo_url_is_404(alice, region, web, media, settings):
    settings.POD_PHOTO_URL_SECONDS = 600
    with time_machine.travel(datetime(2026, 11, 23, 3, 0, tzinfo=UTC), tick=False) as clock:
        row = stored_photo(drop_in(S.PENDING, business=alice.business))
        path = photo_path(row)
        clock.shift(timedelta(seconds=599))
        fresh = web.get(path)
        clock.shift(timedelta(seconds=2))
        expired = web.get(path)

    assert fresh.status_code == 200
    assert fresh["Cache-Control"] == "private, max-age=1"
    assert expired.status_code == 404


def test_a_photo_url_of_a_drop_without_photo_is_404(open_for_business, alice, web, media):
    row = drop_in(S.DELIVERED, business=alice.business)

    assert web.get(photo_path(row)).status_code == 404


def test_a_photo_whose_file_is_gone_is_404(open_for_business, alice, web, media):
    row = stored_photo(drop_in(S.DELIVERED, business=alice.business))
    default_storage.delete(row.pod_photo.name)

    assert web.get(photo_path(row)).status_code == 404


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("proof/a.jpg", "image/jpeg"),
        ("proof/a.JPEG", "image/jpeg"),
        ("proof/a.webp", "image/webp"),
        ("proof/a.svg", "application/octet-stream"),
    ],
)
def test_the_photo_type_comes_from_its_name(
    open_for_business, alice, web, media, name, content_type
):
    row = stored_photo(drop_in(S.DELIVERED, business=alice.business), name)

    response = web.get(photo_path(row))

    assert response["Content-Type"] == content_type
    assert response["X-Content-Type-Options"] == "nosniff"


# --- From the API to the page ---


@override_settings(BASE_URL="https://track.example.com")
def test_the_tracking_url_of_a_bulk_accepted_drop_opens_its_page(
    open_for_business, alice, api, web
):
    response = api.bulk(batch(group(drop("WEB-1", name="Chenda Sok"))), alice.sandbox_key)
    [accepted] = response.json()["data"]["orders"]
    url = accepted["tracking_url"]
    assert url.startswith(f"https://track.example.com{TRACKING_PATH}")

    page = web.get(url.removeprefix("https://track.example.com"))

    assert page.status_code == 200
    body = html(page)
    assert 'data-status="PENDING"' in body
    assert "Chenda" in body and "Sok" not in body
    assert "Alice Shop" in body
    assert map_data(page)["drop"] == [
        Drop.objects.get(pk=accepted["drop_id"]).lat,
        Drop.objects.get(pk=accepted["drop_id"]).long,
    ]
