"""The Nominatim-compatible HTTP geocoder, against a real HTTP server on loopback.

The server is started by the test (ThreadingHTTPServer on 127.0.0.1, port 0) and answers
/search by the `q` it is asked. Answers ("found", "not found") are cached; failures of the
provider (timeouts, HTTP errors, garbage) give GEOCODE_FAILED and are not cached.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from geo.geocoders import NominatimGeocoder, address_key
from geo.models import GeocodeResult
from orders.models import Drop
from tests.factories import batch, group
from tests.geo.helpers import NOWHERE, ROYAL_PALACE, ROYAL_PALACE_PIN, address_drop, reasons, submit

SLOW_ROAD = {"complete_address": "1 Slow Road", "city": "Phnom Penh", "country": "KH"}
BROKEN_LANE = {"complete_address": "500 Broken Lane", "city": "Phnom Penh", "country": "KH"}
GARBLED_WAY = {"complete_address": "7 Garbled Way", "city": "Phnom Penh", "country": "KH"}
SERVER_SLEEPS_SECONDS = 5.0


class FakeNominatim:
    """A loopback Nominatim: `answers` maps a text found in `q` to what /search does."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: dict[str, object] = {}
        self.release = threading.Event()  # lets sleeping handlers go at teardown
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeNominatim:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def asked_for(self, text: str) -> int:
        return sum(1 for r in self.requests if text in r["query"].get("q", [""])[0])

    def _answer_for(self, q: str) -> object:
        return next((a for text, a in self.answers.items() if text in q), [])

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parsed = urlsplit(self.path)
                query = parse_qs(parsed.query)
                fake.requests.append(
                    {"path": parsed.path, "query": query, "headers": dict(self.headers)}
                )
                answer = fake._answer_for(query.get("q", [""])[0])
                # The client may have given up (timeout): that is the point of some tests.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._reply(answer)

            def _reply(self, answer):
                if answer == "sleep":
                    fake.release.wait(SERVER_SLEEPS_SECONDS)
                    answer = []
                if answer == "not http":
                    self.wfile.write(b"NONSENSE\r\n\r\n")
                    return
                if answer == "cut short":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'[{"lat": "11.')
                    return
                status, body = 200, answer
                if isinstance(answer, int):
                    status, body = answer, {"error": "server trouble"}
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        return Handler


def found(lat: float, long: float) -> list[dict]:
    return [
        {
            "place_id": 1,
            "lat": str(lat),
            "lon": str(long),
            "display_name": "Somewhere, Phnom Penh, Cambodia",
            "importance": 0.5,
        }
    ]


@pytest.fixture
def nominatim(settings):
    fake = FakeNominatim().start()
    settings.GEOCODERS = ["nominatim"]
    settings.NOMINATIM_URL = fake.url
    settings.NOMINATIM_TIMEOUT_SECONDS = 0.3
    fake.answers["Royal Palace"] = found(ROYAL_PALACE_PIN["lat"], ROYAL_PALACE_PIN["long"])
    fake.answers["Slow Road"] = "sleep"
    fake.answers["Broken Lane"] = 500
    yield fake
    fake.stop()


def one_address_drop(client_order_id: str, address: dict) -> dict:
    return batch(group(address_drop(client_order_id, address)))


def nominatim_cache() -> list[tuple[str, bool]]:
    return list(
        GeocodeResult.objects.filter(provider="nominatim")
        .values_list("key", "found")
        .order_by("key")
    )


# --- found and not found: answers, both cached ---


def test_found_address_gets_the_providers_pin_and_is_cached(
    open_for_business, nominatim, alice, api
):
    data = submit(api, alice.sandbox_key, one_address_drop("A", ROYAL_PALACE))

    assert data["orders"][0]["resolved_pin"] == ROYAL_PALACE_PIN
    stored = Drop.objects.get()
    assert (stored.lat, stored.long, stored.resolved) == (11.5637, 104.9311, True)
    assert nominatim_cache() == [(address_key(ROYAL_PALACE), True)]

    again = submit(api, alice.sandbox_key, one_address_drop("B", ROYAL_PALACE))

    assert again["orders"][0]["resolved_pin"] == ROYAL_PALACE_PIN
    assert nominatim.asked_for("Royal Palace") == 1


def test_search_query_carries_the_address_and_the_service_country(
    open_for_business, nominatim, alice, api, settings
):
    submit(api, alice.sandbox_key, one_address_drop("A", ROYAL_PALACE))

    (request,) = nominatim.requests
    assert request["path"] == "/search"
    assert request["query"]["q"] == ["Royal Palace, Phnom Penh, Phnom Penh, KH"]
    assert request["query"]["countrycodes"] == ["kh"]
    assert request["query"]["format"] == ["jsonv2"]
    assert request["query"]["limit"] == ["1"]
    assert request["headers"]["User-Agent"] == settings.NOMINATIM_USER_AGENT


def test_empty_answer_is_geocode_failed_and_cached(open_for_business, nominatim, alice, api):
    data = submit(api, alice.sandbox_key, one_address_drop("A", NOWHERE))

    assert reasons(data) == {"A": "GEOCODE_FAILED"}
    assert nominatim_cache() == [(address_key(NOWHERE), False)]

    again = submit(api, alice.sandbox_key, one_address_drop("B", NOWHERE))

    assert reasons(again) == {"B": "GEOCODE_FAILED"}
    assert nominatim.asked_for("Nowhere") == 1


# --- provider failures: GEOCODE_FAILED, never cached ---


def test_provider_slower_than_the_timeout_fails_quickly_and_is_not_cached(
    open_for_business, nominatim, alice, api
):
    started = time.perf_counter()
    data = submit(api, alice.sandbox_key, one_address_drop("A", SLOW_ROAD))
    elapsed = time.perf_counter() - started

    assert reasons(data) == {"A": "GEOCODE_FAILED"}
    assert (
        elapsed < SERVER_SLEEPS_SECONDS / 2
    )  # gave up on its timeout, did not wait the server out
    assert nominatim_cache() == []
    assert Drop.objects.count() == 0

    submit(api, alice.sandbox_key, one_address_drop("B", SLOW_ROAD))

    assert nominatim.asked_for("Slow Road") == 2  # asked again: a timeout is not an answer


@pytest.mark.parametrize(
    "answer",
    [
        500,
        503,
        b"this is not json",
        {"not": "a list"},
        [{"display_name": "no coordinates"}],
        [{"lat": "north", "lon": "east"}],
        "not http",
        "cut short",
    ],
    ids=["500", "503", "not-json", "object", "no-pin", "bad-pin", "not-http", "cut-short"],
)
def test_provider_error_is_geocode_failed_and_not_cached(
    open_for_business, nominatim, alice, api, answer
):
    nominatim.answers["Garbled Way"] = answer

    response = api.bulk(one_address_drop("A", GARBLED_WAY), alice.sandbox_key)

    assert response.status_code == 200, response.content
    assert reasons(response.json()["data"]) == {"A": "GEOCODE_FAILED"}
    assert nominatim_cache() == []

    submit(api, alice.sandbox_key, one_address_drop("B", GARBLED_WAY))

    assert nominatim.asked_for("Garbled Way") == 2


def test_http_500_is_geocode_failed_and_asked_again_next_time(
    open_for_business, nominatim, alice, api
):
    first = submit(api, alice.sandbox_key, one_address_drop("A", BROKEN_LANE))
    nominatim.answers["Broken Lane"] = found(11.56, 104.92)  # the provider recovers
    second = submit(api, alice.sandbox_key, one_address_drop("B", BROKEN_LANE))

    assert reasons(first) == {"A": "GEOCODE_FAILED"}
    assert second["orders"][0]["resolved_pin"] == {"lat": 11.56, "long": 104.92}
    assert nominatim_cache() == [(address_key(BROKEN_LANE), True)]


def test_unreachable_provider_is_geocode_failed(open_for_business, alice, api, settings):
    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.GEOCODERS = ["nominatim"]
    settings.NOMINATIM_URL = f"http://127.0.0.1:{port}"
    settings.NOMINATIM_TIMEOUT_SECONDS = 0.3

    data = submit(api, alice.sandbox_key, one_address_drop("A", ROYAL_PALACE))

    assert reasons(data) == {"A": "GEOCODE_FAILED"}
    assert GeocodeResult.objects.count() == 0


def test_one_failing_address_does_not_spoil_the_others(open_for_business, nominatim, alice, api):
    body = batch(
        group(
            address_drop("GOOD", ROYAL_PALACE),
            address_drop("SLOW", SLOW_ROAD),
            address_drop("BROKEN", BROKEN_LANE),
            address_drop("GOOD-AGAIN", ROYAL_PALACE),
        )
    )

    data = submit(api, alice.sandbox_key, body)

    assert reasons(data) == {
        "GOOD": "accepted",
        "SLOW": "GEOCODE_FAILED",
        "BROKEN": "GEOCODE_FAILED",
        "GOOD-AGAIN": "accepted",
    }
    assert len(nominatim.requests) == 3  # each distinct address once
    assert nominatim_cache() == [(address_key(ROYAL_PALACE), True)]


def test_cache_is_per_provider(open_for_business, nominatim, alice, api, settings):
    settings.GEOCODERS = ["gazetteer"]
    submit(api, alice.sandbox_key, one_address_drop("A", NOWHERE))  # gazetteer: not found
    settings.GEOCODERS = ["nominatim"]
    nominatim.answers["Nowhere"] = found(11.58, 104.90)

    data = submit(api, alice.sandbox_key, one_address_drop("B", NOWHERE))

    assert data["orders"][0]["resolved_pin"] == {"lat": 11.58, "long": 104.90}
    assert nominatim.asked_for("Nowhere") == 1


def test_address_without_a_street_is_not_sent_to_the_provider(
    open_for_business, nominatim, alice, api
):
    nominatim.answers["Phnom Penh"] = found(11.5625, 104.9160)  # the city's centroid
    city_only = {"city": "Phnom Penh", "country": "KH"}

    data = submit(api, alice.sandbox_key, one_address_drop("A", city_only))

    assert reasons(data) == {"A": "GEOCODE_FAILED"}
    assert nominatim.requests == []


def test_geocoder_reads_url_and_timeout_from_settings(settings):
    settings.NOMINATIM_URL = "http://127.0.0.1:9/base/"
    settings.NOMINATIM_TIMEOUT_SECONDS = 0.25

    geocoder = NominatimGeocoder()

    assert (geocoder.base_url, geocoder.timeout) == ("http://127.0.0.1:9/base", 0.25)
