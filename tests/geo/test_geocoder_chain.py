"""The geocoder chain (GEOCODERS): the gazetteer first, then HTTP providers (Nominatim, Photon)
for what it does not know, each a real HTTP server on loopback; GEOCODE_FAILED's message
names what was tried."""

from __future__ import annotations

import socket

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from geo.geocoders import PhotonGeocoder, address_key
from geo.models import GeocodeResult, Place
from orders.models import Drop
from tests.factories import batch, group
from tests.geo.helpers import (
    NOWHERE,
    ROYAL_PALACE,
    ROYAL_PALACE_PIN,
    address_drop,
    address_pickup_group,
    reasons,
    results_by_id,
    submit,
)
from tests.geo.test_nominatim import FakeNominatim, found

STREET_240 = {
    "complete_address": "House 12, Street 240",
    "city": "Phnom Penh",
    "country": "KH",
}
STREET_240_PIN = {"lat": 11.5625, "long": 104.9262}


def photon_found(lat: float, long: float, countrycode: str = "KH") -> dict:
    """Photon's answer: GeoJSON, so the coordinates are [longitude, latitude]."""
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [long, lat]},
                "properties": {"name": "Street 240", "countrycode": countrycode},
            }
        ],
    }


PHOTON_NOTHING = {"type": "FeatureCollection", "features": []}


@pytest.fixture
def photon(settings):
    fake = FakeNominatim().start()  # answers any path by the `q` it is asked
    settings.PHOTON_URL = fake.url
    settings.PHOTON_TIMEOUT_SECONDS = 0.3
    yield fake
    fake.stop()


@pytest.fixture
def nominatim(settings):
    fake = FakeNominatim().start()
    settings.NOMINATIM_URL = fake.url
    settings.NOMINATIM_TIMEOUT_SECONDS = 0.3
    yield fake
    fake.stop()


def host_of(fake: FakeNominatim) -> str:
    return fake.url.removeprefix("http://")


def cache() -> set[tuple[str, str, bool]]:
    return set(GeocodeResult.objects.values_list("provider", "key", "found"))


def one_address_drop(client_order_id: str, address: dict) -> dict:
    return batch(group(address_drop(client_order_id, address)))


# --- the chain: the gazetteer first, the HTTP provider for what it does not know ---


def test_photon_finds_a_street_address_the_gazetteer_does_not_know(
    open_for_business, photon, alice, api, settings
):
    settings.GEOCODERS = ["gazetteer", "photon"]
    photon.answers["Street 240"] = photon_found(STREET_240_PIN["lat"], STREET_240_PIN["long"])

    data = submit(api, alice.sandbox_key, one_address_drop("A", STREET_240))

    assert results_by_id(data)["A"]["resolved_pin"] == STREET_240_PIN  # lat, long: not swapped
    stored = Drop.objects.get()
    assert (stored.lat, stored.long) == (STREET_240_PIN["lat"], STREET_240_PIN["long"])
    (request,) = photon.requests
    assert request["path"] == "/api"
    assert request["query"]["q"] == ["House 12, Street 240, Phnom Penh, KH"]
    assert request["query"]["limit"] == ["1"]
    assert request["headers"]["User-Agent"] == settings.NOMINATIM_USER_AGENT
    key = address_key(STREET_240)
    assert cache() == {("gazetteer", key, False), ("photon", key, True)}

    again = submit(api, alice.sandbox_key, one_address_drop("B", STREET_240))

    assert results_by_id(again)["B"]["resolved_pin"] == STREET_240_PIN
    assert len(photon.requests) == 1  # cached


def test_a_place_in_the_gazetteer_is_never_sent_to_the_http_provider(
    open_for_business, nominatim, alice, api, settings
):
    settings.GEOCODERS = ["gazetteer", "nominatim"]
    nominatim.answers["Royal Palace"] = found(11.0, 104.0)  # would be wrong

    data = submit(api, alice.sandbox_key, one_address_drop("A", ROYAL_PALACE))

    assert results_by_id(data)["A"]["resolved_pin"] == ROYAL_PALACE_PIN
    assert nominatim.requests == []


@pytest.mark.parametrize("nominatim_says", [[], 500, "sleep"], ids=["nothing", "500", "timeout"])
def test_the_next_provider_is_asked_when_one_finds_nothing_or_fails(
    open_for_business, nominatim, photon, alice, api, settings, nominatim_says
):
    settings.GEOCODERS = ["gazetteer", "nominatim", "photon"]
    nominatim.answers["Street 240"] = nominatim_says
    photon.answers["Street 240"] = photon_found(STREET_240_PIN["lat"], STREET_240_PIN["long"])

    data = submit(api, alice.sandbox_key, one_address_drop("A", STREET_240))

    assert results_by_id(data)["A"]["resolved_pin"] == STREET_240_PIN
    assert (nominatim.asked_for("Street 240"), photon.asked_for("Street 240")) == (1, 1)
    key = address_key(STREET_240)
    answered = {("nominatim", key, False)} if nominatim_says == [] else set()  # a failure: none
    assert cache() == {("gazetteer", key, False), ("photon", key, True)} | answered


def test_the_order_of_the_chain_is_the_order_of_the_setting(
    open_for_business, nominatim, photon, alice, api, settings
):
    settings.GEOCODERS = ["photon", "nominatim"]
    photon.answers["Street 240"] = photon_found(11.57, 104.92)
    nominatim.answers["Street 240"] = found(11.55, 104.91)

    data = submit(api, alice.sandbox_key, one_address_drop("A", STREET_240))

    assert results_by_id(data)["A"]["resolved_pin"] == {"lat": 11.57, "long": 104.92}
    assert nominatim.requests == []


def test_photon_result_in_another_country_is_not_a_match(
    open_for_business, photon, alice, api, settings
):
    settings.GEOCODERS = ["photon"]
    photon.answers["Street 240"] = photon_found(48.85, 2.35, countrycode="FR")

    data = submit(api, alice.sandbox_key, one_address_drop("A", STREET_240))

    assert reasons(data) == {"A": "GEOCODE_FAILED"}
    assert cache() == {("photon", address_key(STREET_240), False)}


@pytest.mark.parametrize(
    "answer",
    [
        500,
        b"not json",
        [],
        {"type": "FeatureCollection"},
        {"features": [{"geometry": {}}]},
        {"features": [{"geometry": {"coordinates": ["east", "north"]}}]},
        {"features": [{"geometry": {"coordinates": [204.9, 11.5]}}]},
        {"features": [{"geometry": {"coordinates": [104.9]}}]},
        {"features": ["a feature"]},
        "cut short",
    ],
    ids=[
        "500",
        "not-json",
        "a-list",
        "no-features",
        "no-coordinates",
        "words",
        "out-of-range",
        "one-number",
        "not-an-object",
        "cut-short",
    ],
)
def test_a_garbled_photon_answer_is_geocode_failed_and_not_cached(
    open_for_business, photon, alice, api, settings, answer
):
    settings.GEOCODERS = ["photon"]
    photon.answers["Street 240"] = answer

    response = api.bulk(one_address_drop("A", STREET_240), alice.sandbox_key)

    assert response.status_code == 200, response.content
    assert reasons(response.json()["data"]) == {"A": "GEOCODE_FAILED"}
    assert cache() == set()


def test_photon_reads_url_and_timeout_from_settings(settings):
    settings.PHOTON_URL = "http://127.0.0.1:9/photon/"
    settings.PHOTON_TIMEOUT_SECONDS = 0.25

    geocoder = PhotonGeocoder()

    assert (geocoder.base_url, geocoder.timeout) == ("http://127.0.0.1:9/photon", 0.25)


# --- GEOCODE_FAILED says what was tried ---


def test_geocode_failed_names_every_provider_tried(
    open_for_business, nominatim, photon, alice, api, settings
):
    settings.GEOCODERS = ["gazetteer", "nominatim", "photon"]
    photon.answers["Nowhere"] = PHOTON_NOTHING
    body = batch(
        group(address_drop("DROP", NOWHERE)),
        address_pickup_group(NOWHERE, address_drop("PICKED", ROYAL_PALACE)),
    )

    data = submit(api, alice.sandbox_key, body)

    tried = (
        f"the place list (gazetteer), Nominatim at {host_of(nominatim)}, "
        f"Photon at {host_of(photon)}."
    )
    by_id = results_by_id(data)
    assert by_id["DROP"]["message"] == f"No match for the drop address in: {tried}"
    assert by_id["PICKED"]["message"] == f"No match for the pickup address in: {tried}"


def test_a_provider_that_did_not_answer_is_told_apart_and_its_url_secrets_never_shown(
    open_for_business, nominatim, photon, alice, api, settings
):
    settings.GEOCODERS = ["gazetteer", "nominatim", "photon"]
    # Credentials in a provider's URL (which urllib cannot use: no answer): only its host
    # may be shown.
    settings.PHOTON_URL = photon.url.replace("http://", "http://geo:s3cret@")

    response = api.bulk(one_address_drop("A", NOWHERE), alice.sandbox_key)

    assert results_by_id(response.json()["data"])["A"]["message"] == (
        f"No match for the drop address in: the place list (gazetteer), Nominatim at "
        f"{host_of(nominatim)}; Photon at {host_of(photon)} did not answer, and a new batch "
        "asks again."
    )
    assert b"s3cret" not in response.content


def test_geocode_failed_with_the_gazetteer_alone_names_the_place_list(
    open_for_business, alice, api
):
    data = submit(api, alice.sandbox_key, one_address_drop("A", NOWHERE))

    assert results_by_id(data)["A"]["message"] == (
        "No match for the drop address in: the place list (gazetteer)."
    )


@pytest.mark.parametrize("chain", [["gazetteer", "nominatim"], ["nominatim"]])
def test_an_unreachable_provider_is_said_not_to_have_answered(
    open_for_business, alice, api, settings, chain
):
    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.GEOCODERS = chain
    settings.NOMINATIM_URL = f"http://127.0.0.1:{port}/nominatim"
    settings.NOMINATIM_TIMEOUT_SECONDS = 0.3

    data = submit(api, alice.sandbox_key, one_address_drop("A", STREET_240))

    said = {
        "gazetteer": (
            f"No match for the drop address in: the place list (gazetteer); Nominatim at "
            f"127.0.0.1:{port} did not answer, and a new batch asks again."
        ),
        "nominatim": (
            f"The drop address could not be looked up: Nominatim at 127.0.0.1:{port} did not "
            "answer; a new batch asks again."
        ),
    }
    assert results_by_id(data)["A"]["message"] == said[chain[0]]


# --- set-based: the chain costs the same queries for one drop and for hundreds ---


def street(i: int) -> dict:
    return {"complete_address": f"House {i}, Street 240", "city": "Phnom Penh", "country": "KH"}


def test_a_chain_batch_runs_as_many_queries_for_many_drops_as_for_one(
    open_for_business, photon, alice, api, settings
):
    settings.GEOCODERS = ["gazetteer", "photon"]
    Place.objects.bulk_create(
        [Place(name=f"House {i}, Street 240", lat=11.56, long=104.92) for i in range(0, 20, 2)]
    )
    for i in range(20):
        photon.answers[f"House {i}, Street 240"] = photon_found(11.57, 104.93)
    submit(api, alice.sandbox_key, one_address_drop("WARM-UP", ROYAL_PALACE))  # last_used

    with CaptureQueriesContext(connection) as one:
        submit(api, alice.sandbox_key, one_address_drop("ONE", street(1)))
    # 30 drops (what alice's wallet covers) over 15 houses, 8 of them places.
    many_body = batch(group(*[address_drop(f"M-{i}", street(2 + i % 15)) for i in range(30)]))
    with CaptureQueriesContext(connection) as many:
        data = submit(api, alice.sandbox_key, many_body)

    assert data["counts"]["accepted"] == 30
    assert photon.asked_for("Street 240") == 1 + 7  # each odd house once, the even are places
    assert len(many) == len(one)
