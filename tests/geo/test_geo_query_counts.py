"""Speed as a contract: a 1000-drop batch over 50 addresses asks a provider about each of them
once, and runs the same number of SQL queries as a one-drop batch (docs/contract.md §4 "Speed")."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from geo.models import GeocodeResult, Place
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.geo.helpers import address_drop, address_pickup_group, submit
from tests.geo.test_nominatim import FakeNominatim, found

DEPOTS = 51  # depot 0 for the one-drop batch, depots 1–50 for the big one


def depot(i: int) -> dict:
    return {"complete_address": f"Depot {i}", "city": "Phnom Penh", "country": "KH"}


def depot_pin(i: int) -> dict[str, float]:
    return {"lat": 11.50 + i * 0.003, "long": 104.85 + i * 0.002}


@pytest.fixture
def depots(region):
    Place.objects.bulk_create(
        [Place(name=f"Depot {i}", city="Phnom Penh", **depot_pin(i)) for i in range(DEPOTS)]
    )


@pytest.fixture
def dave(make_tenant):
    """A tenant whose wallet covers a thousand drops."""
    return make_tenant(name="Dave Wholesale", sandbox_balance="100000.00")


@pytest.fixture
def provider(settings):
    """The only geocoder: a provider on loopback (Nominatim's API) that knows the depots."""
    fake = FakeNominatim().start()
    settings.GEOCODERS = ["nominatim"]
    settings.NOMINATIM_URL = fake.url
    for i in range(DEPOTS):
        fake.answers[f"Depot {i},"] = found(**depot_pin(i))
    yield fake
    fake.stop()


def one_drop_batch() -> dict:
    return batch(group(address_drop("ONE", depot(0))))


def thousand_drop_batch(prefix: str) -> dict:
    """Ten groups of 100 drops; pickups and drops cycle through depots 1–50."""
    return batch(
        *[
            address_pickup_group(
                depot(1 + g),
                *[
                    address_drop(f"{prefix}-{g}-{i}", depot(1 + (g * 100 + i) % 50))
                    for i in range(100)
                ],
            )
            for g in range(10)
        ]
    )


def queries_for(api, key: str, body: dict) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as captured:
        data = submit(api, key, body)
    return len(captured), data


def test_thousand_drops_over_fifty_addresses_ask_each_address_once(
    open_for_business, provider, dave, api
):
    data = submit(api, dave.sandbox_key, thousand_drop_batch("BIG"))

    assert data["counts"] == {"total": 1000, "accepted": 1000, "rejected": 0}
    asked = sorted(request["query"]["q"][0] for request in provider.requests)
    assert asked == sorted(f"Depot {i}, Phnom Penh, KH" for i in range(1, 51))
    assert GeocodeResult.objects.count() == 50
    assert Drop.objects.filter(resolved=True).count() == 1000


def test_thousand_drop_batch_runs_as_many_queries_as_a_one_drop_batch(
    open_for_business, depots, dave, api
):
    submit(api, dave.sandbox_key, batch(group(drop("WARM-UP"))))  # the key's last_used write

    cold_one, one = queries_for(api, dave.sandbox_key, one_drop_batch())
    cold_thousand, thousand = queries_for(api, dave.sandbox_key, thousand_drop_batch("COLD"))

    assert one["counts"]["accepted"] == 1
    assert thousand["counts"]["accepted"] == 1000
    assert cold_thousand == cold_one

    # With every address cached, the gazetteer is not asked and the counts still match.
    warm_one, _ = queries_for(
        api, dave.sandbox_key, batch(group(address_drop("ONE-AGAIN", depot(0))))
    )
    warm_thousand, _ = queries_for(api, dave.sandbox_key, thousand_drop_batch("WARM"))

    assert warm_thousand == warm_one
    assert warm_one < cold_one  # the cache hit spared the gazetteer and the cache insert
