"""Address-only locations: the offline gazetteer, resolved pins, GEOCODE_FAILED and the cache."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from geo.geocoders import (
    GazetteerGeocoder,
    address_key,
    forget_cached_results,
    geocode_addresses,
    normalise,
    purge_expired_answers,
)
from geo.models import GeocodeResult, Place
from orders.models import Drop, Order
from tests.factories import HOME, SHOP, batch, drop, group
from tests.geo.helpers import (
    ANGKOR_WAT,
    CENTRAL_MARKET,
    CENTRAL_MARKET_PIN,
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

NEW_PLACE_PIN = {"lat": 11.5800, "long": 104.9000}  # inside the demo area


@pytest.fixture
def provider(settings):
    """The only geocoder: a provider on loopback (Nominatim's API, tests/geo/test_nominatim.py)
    that knows the demo places, so what the service asks is what a provider would see."""
    fake = FakeNominatim().start()
    settings.GEOCODERS = ["nominatim"]
    settings.NOMINATIM_URL = fake.url
    for address, pin in [(ROYAL_PALACE, ROYAL_PALACE_PIN), (CENTRAL_MARKET, CENTRAL_MARKET_PIN)]:
        fake.answers[address["complete_address"]] = found(pin["lat"], pin["long"])
    yield fake
    fake.stop()


def asked(provider: FakeNominatim) -> list[str]:
    """The addresses the provider was asked about, as its queries named them, in order."""
    return [request["query"]["q"][0] for request in provider.requests]


def query(address: dict) -> str:
    """How the provider is asked about `address`."""
    return ", ".join(address[part] for part in ("complete_address", "city", "country"))


# --- resolved pins: echoed, stored, tracked ---


def test_address_only_drop_echoes_its_resolved_pin_and_stores_it(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))

    entry = results_by_id(data)["A"]
    assert entry["status"] == "accepted"
    assert entry["resolved_pin"] == ROYAL_PALACE_PIN
    assert "pickup_resolved_pin" not in entry
    stored = Drop.objects.get(client_order_id="A")
    assert (stored.lat, stored.long) == (ROYAL_PALACE_PIN["lat"], ROYAL_PALACE_PIN["long"])
    assert stored.resolved is True
    assert stored.address == ROYAL_PALACE


def test_tracking_shows_the_resolved_drop_pin(open_for_business, alice, api):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))

    entry = api.track(["A"], alice.sandbox_key).json()["data"]["orders"][0]

    dropoff = entry["dropoff"]
    assert (dropoff["lat"], dropoff["long"]) == (ROYAL_PALACE_PIN["lat"], ROYAL_PALACE_PIN["long"])
    assert dropoff["resolved_pin"] == ROYAL_PALACE_PIN
    assert dropoff["address"] == ROYAL_PALACE
    assert "resolved_pin" not in entry["pickup"]


def test_address_only_pickup_echoes_its_pin_on_every_accepted_drop(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(
            address_pickup_group(
                CENTRAL_MARKET, drop("A"), drop("B"), drop("FAR", lat=13.4125, long=103.8670)
            )
        ),
    )

    by_id = results_by_id(data)
    assert by_id["A"]["pickup_resolved_pin"] == by_id["B"]["pickup_resolved_pin"]
    assert by_id["A"]["pickup_resolved_pin"] == CENTRAL_MARKET_PIN
    assert "resolved_pin" not in by_id["A"]
    assert by_id["FAR"]["failure_reason"] == "OUT_OF_SERVICE_AREA"
    assert "pickup_resolved_pin" not in by_id["FAR"]
    order = Order.objects.get()
    assert (order.pickup_lat, order.pickup_long) == (
        CENTRAL_MARKET_PIN["lat"],
        CENTRAL_MARKET_PIN["long"],
    )
    assert order.pickup_resolved is True
    assert order.pickup_address == CENTRAL_MARKET


def test_tracking_shows_the_resolved_pickup_pin(open_for_business, alice, api):
    submit(api, alice.sandbox_key, batch(address_pickup_group(CENTRAL_MARKET, drop("A"))))

    pickup = api.track(["A"], alice.sandbox_key).json()["data"]["orders"][0]["pickup"]

    assert pickup["resolved_pin"] == CENTRAL_MARKET_PIN
    assert (pickup["lat"], pickup["long"]) == (
        CENTRAL_MARKET_PIN["lat"],
        CENTRAL_MARKET_PIN["long"],
    )


def test_address_only_pickup_and_drop_are_priced_on_their_pins(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(address_pickup_group(CENTRAL_MARKET, address_drop("A", ROYAL_PALACE))),
    )

    # ~1.3 km apart on the default plan (2.00 + 0.50/km): more than the base fee alone.
    assert results_by_id(data)["A"]["price"] not in (None, "2.00")


def test_coordinate_locations_carry_no_resolved_pins(open_for_business, alice, api, provider):
    data = submit(api, alice.sandbox_key, batch(group(drop("A"))))

    assert set(results_by_id(data)["A"]) & {"resolved_pin", "pickup_resolved_pin"} == set()
    assert Drop.objects.get().resolved is False
    assert Order.objects.get().pickup_resolved is False
    assert asked(provider) == []


# --- coordinates win over an address ---


def test_drop_coordinates_win_over_its_address(open_for_business, alice, api, provider):
    both = drop("BOTH", address=ANGKOR_WAT)  # HOME coordinates, an address outside the area

    data = submit(api, alice.sandbox_key, batch(group(both)))

    entry = results_by_id(data)["BOTH"]
    assert entry["status"] == "accepted"
    assert "resolved_pin" not in entry
    stored = Drop.objects.get()
    assert (stored.lat, stored.long, stored.resolved) == (HOME["lat"], HOME["long"], False)
    assert stored.address == ANGKOR_WAT
    assert asked(provider) == []


def test_drop_coordinates_outside_the_area_win_over_an_address_inside(
    open_for_business, alice, api
):
    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A", lat=13.4125, long=103.8670, address=ROYAL_PALACE))),
    )

    assert reasons(data) == {"A": "OUT_OF_SERVICE_AREA"}


def test_pickup_coordinates_win_over_an_unknown_address(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, batch(group(drop("A"), address=NOWHERE)))

    entry = results_by_id(data)["A"]
    assert entry["status"] == "accepted"
    assert "pickup_resolved_pin" not in entry
    order = Order.objects.get()
    assert (order.pickup_lat, order.pickup_long) == (SHOP["lat"], SHOP["long"])


def test_half_given_coordinates_are_invalid_even_with_a_good_address(open_for_business, alice, api):
    half = address_drop("HALF", ROYAL_PALACE)
    half["dropoff"]["lat"] = 11.56

    data = submit(api, alice.sandbox_key, batch(group(half)))

    assert reasons(data) == {"HALF": "INVALID_COORDINATES"}


# --- GEOCODE_FAILED ---


def test_unknown_drop_address_is_geocode_failed(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(group(address_drop("LOST", NOWHERE), address_drop("FOUND", ROYAL_PALACE))),
    )

    assert reasons(data) == {"LOST": "GEOCODE_FAILED", "FOUND": "accepted"}
    assert "drop" in results_by_id(data)["LOST"]["message"]
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["FOUND"]


def test_unknown_pickup_address_rejects_its_whole_group(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(address_pickup_group(NOWHERE, drop("A"), drop("B")), group(drop("C"))),
    )

    assert reasons(data) == {"A": "GEOCODE_FAILED", "B": "GEOCODE_FAILED", "C": "accepted"}
    assert "pickup" in results_by_id(data)["A"]["message"]
    assert Order.objects.count() == 1


def test_address_without_a_complete_address_is_geocode_failed(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, batch(group(address_drop("A", {"city": "Phnom Penh"}))))

    assert reasons(data) == {"A": "GEOCODE_FAILED"}


# --- the gazetteer's matching ---


@pytest.mark.parametrize(
    "written",
    [
        "Royal Palace, Phnom Penh",
        "royal palace phnom penh",
        "ROYAL PALACE -- PHNOM PENH!!",
        "  Royal   Palace ,  Phnom\tPenh. ",
        "Royal-Palace/Phnom_Penh",
    ],
)
def test_gazetteer_ignores_case_punctuation_and_extra_spaces(region, written):
    pins = geocode_addresses([{"complete_address": written}])

    assert pins == {address_key({"complete_address": written}): (11.5637, 104.9311)}


def test_gazetteer_match_through_the_api_ignores_case_and_punctuation(
    open_for_business, alice, api
):
    messy = {"complete_address": "  central MARKET,,, phnom-penh ", "city": "PHNOM PENH"}

    data = submit(api, alice.sandbox_key, batch(group(address_drop("A", messy))))

    assert results_by_id(data)["A"]["resolved_pin"] == CENTRAL_MARKET_PIN


def test_gazetteer_matches_aliases(db):
    Place.objects.create(
        name="National Olympic Stadium",
        aliases="Olympic Stadium\nPhsar Olympic",
        city="Phnom Penh",
        lat=11.5586,
        long=104.9124,
    )
    found = GazetteerGeocoder().geocode_many(
        {
            "alias": {"complete_address": "phsar olympic"},
            "alias+city": {"complete_address": "Olympic Stadium, Phnom Penh"},
            "name": {"complete_address": "National Olympic Stadium"},
            "partial": {"complete_address": "Olympic"},
        }
    )

    assert found == {
        "alias": (11.5586, 104.9124),
        "alias+city": (11.5586, 104.9124),
        "name": (11.5586, 104.9124),
        "partial": None,
    }


@pytest.mark.parametrize("created_first", ["Phnom Penh", "Siem Reap"])
def test_city_breaks_ties_between_places_of_the_same_name(db, created_first):
    pins = {"Phnom Penh": (11.5696, 104.9210), "Siem Reap": (13.3540, 103.8560)}
    for city in sorted(pins, key=lambda c: c != created_first):
        Place.objects.create(
            name="Central Market", city=city, lat=pins[city][0], long=pins[city][1]
        )

    found = GazetteerGeocoder().geocode_many(
        {
            "pp": {"complete_address": "Central Market", "city": "Phnom Penh"},
            "sr": {"complete_address": "central market", "city": "SIEM REAP"},
            "sr-in-text": {"complete_address": "Central Market, Siem Reap"},
        }
    )

    assert found == {
        "pp": pins["Phnom Penh"],
        "sr": pins["Siem Reap"],
        "sr-in-text": pins["Siem Reap"],
    }


def test_normalise_folds_case_punctuation_and_spaces():
    assert normalise("  Ṗhnom—PENH,  St. 51 ") == normalise("ṗhnom penh st 51")
    assert normalise(None) == ""


# --- the cache: each distinct address once per batch, once ever; failures too ---


def test_second_batch_with_the_same_address_does_not_ask_the_geocoder(
    open_for_business, alice, api, provider
):
    first = submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))
    second = submit(api, alice.sandbox_key, batch(group(address_drop("B", ROYAL_PALACE))))

    assert asked(provider) == [query(ROYAL_PALACE)]
    assert results_by_id(second)["B"]["resolved_pin"] == results_by_id(first)["A"]["resolved_pin"]
    cached = GeocodeResult.objects.get()
    assert (cached.provider, cached.key, cached.found) == (
        "nominatim",
        address_key(ROYAL_PALACE),
        True,
    )
    assert (cached.lat, cached.long) == (ROYAL_PALACE_PIN["lat"], ROYAL_PALACE_PIN["long"])


def test_differently_written_same_address_is_a_cache_hit(open_for_business, alice, api, provider):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))
    shouted = {k: v.upper() + " !" for k, v in ROYAL_PALACE.items()}
    data = submit(api, alice.sandbox_key, batch(group(address_drop("B", shouted))))

    assert results_by_id(data)["B"]["resolved_pin"] == ROYAL_PALACE_PIN
    assert asked(provider) == [query(ROYAL_PALACE)]


def test_failures_are_cached_too(open_for_business, alice, api, provider):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", NOWHERE))))
    data = submit(api, alice.sandbox_key, batch(group(address_drop("B", NOWHERE))))

    assert reasons(data) == {"B": "GEOCODE_FAILED"}
    assert asked(provider) == [query(NOWHERE)]
    cached = GeocodeResult.objects.get()
    assert (cached.found, cached.lat, cached.long) == (False, None, None)


def test_each_distinct_address_is_asked_once_per_batch(open_for_business, alice, api, provider):
    body = batch(
        address_pickup_group(
            CENTRAL_MARKET,
            address_drop("A", ROYAL_PALACE),
            address_drop("B", ROYAL_PALACE),
            address_drop("C", CENTRAL_MARKET),
            address_drop("D", NOWHERE),
            address_drop("E", NOWHERE),
        ),
        address_pickup_group(ROYAL_PALACE, address_drop("F", ROYAL_PALACE)),
    )

    data = submit(api, alice.sandbox_key, body)

    assert sorted(asked(provider)) == sorted(
        query(a) for a in (CENTRAL_MARKET, ROYAL_PALACE, NOWHERE)
    )
    assert reasons(data) == {
        "A": "accepted",
        "B": "accepted",
        "C": "accepted",
        "D": "GEOCODE_FAILED",
        "E": "GEOCODE_FAILED",
        "F": "accepted",
    }
    assert GeocodeResult.objects.count() == 3


def test_only_cache_misses_are_asked(open_for_business, alice, api, provider):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))
    submit(
        api,
        alice.sandbox_key,
        batch(group(address_drop("B", ROYAL_PALACE), address_drop("C", CENTRAL_MARKET))),
    )

    assert asked(provider) == [query(ROYAL_PALACE), query(CENTRAL_MARKET)]


def test_batch_without_addresses_never_asks_the_geocoder(db, provider):
    assert geocode_addresses([]) == {}
    assert asked(provider) == []


# --- forgetting the cache when the gazetteer changes ---


@pytest.fixture
def operator_client(db) -> Client:
    client = Client()
    client.force_login(
        get_user_model().objects.create_superuser("operator", "operator@example.com", "pw")
    )
    return client


def test_place_added_in_admin_makes_a_failed_address_resolvable(
    open_for_business, alice, api, operator_client
):
    before = submit(api, alice.sandbox_key, batch(group(address_drop("A", NOWHERE))))
    assert reasons(before) == {"A": "GEOCODE_FAILED"}
    assert GeocodeResult.objects.filter(found=False).count() == 1

    response = operator_client.post(
        "/admin/geo/place/add/",
        {"name": "42 Nowhere Street", "aliases": "", "city": "Atlantis", **NEW_PLACE_PIN},
    )

    assert response.status_code == 302, response.content
    assert Place.objects.filter(name="42 Nowhere Street").exists()
    assert GeocodeResult.objects.count() == 0
    after = submit(api, alice.sandbox_key, batch(group(address_drop("B", NOWHERE))))
    assert results_by_id(after)["B"]["resolved_pin"] == NEW_PLACE_PIN


def test_place_deleted_in_admin_is_no_longer_found(open_for_business, alice, api, operator_client):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))
    palace = Place.objects.get(name="Royal Palace, Phnom Penh")

    response = operator_client.post(f"/admin/geo/place/{palace.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    data = submit(api, alice.sandbox_key, batch(group(address_drop("B", ROYAL_PALACE))))
    assert reasons(data) == {"B": "GEOCODE_FAILED"}


def test_cached_failure_stands_until_the_cache_is_forgotten(open_for_business, alice, api):
    submit(api, alice.sandbox_key, batch(group(address_drop("A", NOWHERE))))
    Place.objects.create(name="42 Nowhere Street", city="Atlantis", **NEW_PLACE_PIN)

    still = submit(api, alice.sandbox_key, batch(group(address_drop("B", NOWHERE))))
    assert reasons(still) == {"B": "GEOCODE_FAILED"}

    assert forget_cached_results() == 1
    now = submit(api, alice.sandbox_key, batch(group(address_drop("C", NOWHERE))))
    assert results_by_id(now)["C"]["resolved_pin"] == NEW_PLACE_PIN


def test_forgetting_touches_only_the_named_provider(db):
    GeocodeResult.objects.create(provider="gazetteer", key="a||", found=False)
    GeocodeResult.objects.create(provider="nominatim", key="a||", found=True, lat=11.5, long=104.9)

    assert forget_cached_results() == 1
    assert list(GeocodeResult.objects.values_list("provider", flat=True)) == ["nominatim"]
    assert forget_cached_results("nominatim") == 1


# --- The cache is bounded: answers expire and are purged ----------------------------------------


def test_a_cached_failure_expires_after_the_negative_ttl(
    open_for_business, alice, api, provider, settings
):
    settings.GEOCODE_NEGATIVE_TTL_HOURS = 24
    submit(api, alice.sandbox_key, batch(group(address_drop("A", NOWHERE))))
    open_for_business.shift(timedelta(hours=23))
    submit(api, alice.sandbox_key, batch(group(address_drop("B", NOWHERE))))
    assert asked(provider) == [query(NOWHERE)]  # still fresh

    open_for_business.shift(timedelta(hours=2))
    submit(api, alice.sandbox_key, batch(group(address_drop("C", NOWHERE))))

    # Expired: asked again, and the answer starts a new life.
    assert asked(provider) == [query(NOWHERE)] * 2
    cached = GeocodeResult.objects.get()
    assert cached.created_at > timezone.now() - timedelta(minutes=1)


def test_a_cached_pin_lives_for_the_positive_ttl(open_for_business, alice, api, provider, settings):
    settings.GEOCODE_TTL_DAYS = 30
    submit(api, alice.sandbox_key, batch(group(address_drop("A", ROYAL_PALACE))))
    open_for_business.shift(timedelta(days=29))
    data = submit(api, alice.sandbox_key, batch(group(address_drop("B", ROYAL_PALACE))))
    assert results_by_id(data)["B"]["resolved_pin"] == ROYAL_PALACE_PIN
    assert asked(provider) == [query(ROYAL_PALACE)]

    open_for_business.shift(timedelta(days=2))
    submit(api, alice.sandbox_key, batch(group(address_drop("C", ROYAL_PALACE))))

    assert asked(provider) == [query(ROYAL_PALACE)] * 2
    assert GeocodeResult.objects.count() == 1


def test_purge_deletes_only_answers_past_their_lifetime(db, settings):
    settings.GEOCODE_TTL_DAYS, settings.GEOCODE_NEGATIVE_TTL_HOURS = 30, 24
    now = timezone.now()
    rows = {
        "old-miss": (False, now - timedelta(hours=25)),
        "new-miss": (False, now - timedelta(hours=23)),
        "old-hit": (True, now - timedelta(days=31)),
        "new-hit": (True, now - timedelta(days=2)),  # older than a miss may live, still kept
    }
    GeocodeResult.objects.bulk_create(
        GeocodeResult(
            provider="gazetteer", key=key, found=found, lat=1 if found else None,
            long=1 if found else None, created_at=at,
        )
        for key, (found, at) in rows.items()
    )  # fmt: skip

    out = StringIO()
    call_command("purge_geocode_cache", stdout=out)

    assert set(GeocodeResult.objects.values_list("key", flat=True)) == {"new-miss", "new-hit"}
    assert "Purged 2" in out.getvalue()
    assert purge_expired_answers() == 0  # idempotent


def test_ttls_must_be_whole_positive_numbers():
    from tests.config.test_production_settings import PRODUCTION, start_error

    for name in ("GEOCODE_TTL_DAYS", "GEOCODE_NEGATIVE_TTL_HOURS"):
        for bad in ("0", "-1", "soon"):
            assert name in start_error({**PRODUCTION, name: bad})
