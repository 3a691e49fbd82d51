"""The pipeline is set-based (docs/contract.md §4 'Speed'): queries don't grow with the drops."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from geo.demo import PLACES
from geo.models import GeocodeResult
from tests.factories import RECIPIENT_PHONE, batch, drop, group

# Loose ceiling for one call, so a count of zero (nothing measured) or a bloated
# pipeline can't pass; the real check is that N drops cost what one drop costs.
QUERY_BUDGET = 30

PLACE_NAMES = [name for name, *_ in PLACES]


def queries_of(call) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = call()
    assert response.status_code == 200, response.content
    return len(captured), response


def address_drop(client_order_id: str, place: str) -> dict:
    return {
        "client_order_id": client_order_id,
        "dropoff": {
            "name": "Recipient",
            "phone": RECIPIENT_PHONE,
            "address": {"complete_address": place, "country": "KH"},
        },
    }


@pytest.fixture
def rich(make_tenant, api):
    """A tenant whose wallet pays for thousands of drops, its key already used once.

    The first use of a key writes last_used_at (then at most once a minute), so
    warming it keeps that write out of every measured call alike.
    """
    tenant = make_tenant(sandbox_balance="100000.00")
    assert api.get("/account", tenant.sandbox_key).status_code == 200
    return tenant


def bulk_queries(api, tenant, body) -> tuple[int, dict]:
    count, response = queries_of(lambda: api.bulk(body, tenant.sandbox_key))
    return count, response.json()["data"]


SHAPES = {
    "1000 drops in one group": lambda: batch(group(*[drop(f"G-{i}") for i in range(1000)])),
    "1000 drops over 100 groups": lambda: batch(
        *[group(*[drop(f"S-{g}-{i}") for i in range(10)]) for g in range(100)]
    ),
    # docs/contract.md §18: a parcel and cash to collect on every drop, over two vehicles.
    "1000 drops with a parcel and COD": lambda: batch(
        *[
            {**group(*[carrying(f"PC-{g}-{i}") for i in range(10)]), "vehicle": vehicle}
            for g, vehicle in zip(range(100), ["van", "tuktuk"] * 50, strict=True)
        ]
    ),
}


def carrying(client_order_id: str) -> dict:
    return {
        **drop(client_order_id),
        "parcel": {"size": "M", "weight_kg": 2.5, "description": "Shoes", "value": "40.00"},
        "cod": {"amount": "12.50"},
    }


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_batch_of_1000_coordinate_drops_costs_the_queries_of_one(
    open_for_business, rich, api, shape
):
    one, data = bulk_queries(api, rich, batch(group(drop("ONE-1"))))
    assert data["counts"]["accepted"] == 1
    assert 0 < one <= QUERY_BUDGET, f"1 drop: {one} queries"

    many, data = bulk_queries(api, rich, SHAPES[shape]())

    assert data["counts"] == {"total": 1000, "accepted": 1000, "rejected": 0}
    assert many == one, f"{shape}: {many} queries; 1 drop: {one} queries"


def test_a_batch_of_1000_address_drops_costs_the_queries_of_one(open_for_business, rich, api):
    # Both calls start with an empty geocode cache, so each one looks addresses up.
    GeocodeResult.objects.all().delete()
    one, data = bulk_queries(api, rich, batch(group(address_drop("SOLO-1", PLACE_NAMES[0]))))
    assert data["orders"][0]["status"] == "accepted"
    assert "resolved_pin" in data["orders"][0]
    assert 0 < one <= QUERY_BUDGET, f"1 address drop: {one} queries"

    GeocodeResult.objects.all().delete()
    body = batch(group(*[address_drop(f"AD-{i}", PLACE_NAMES[i % 5]) for i in range(1000)]))
    many, data = bulk_queries(api, rich, body)

    outside = [r for r in data["orders"] if r["status"] == "rejected"]
    assert data["counts"]["total"] == 1000
    assert len(outside) == 200  # Angkor Wat, the fifth place, is outside the area
    assert {r["failure_reason"] for r in outside} == {"OUT_OF_SERVICE_AREA"}
    assert GeocodeResult.objects.count() == 5  # each distinct address once
    assert many == one, f"1000 address drops over 5 places: {many} queries; 1: {one} queries"


def test_tracking_1000_identifiers_costs_one_query_more_than_one(open_for_business, rich, api):
    _, data = bulk_queries(api, rich, batch(group(*[drop(f"TR-{i}") for i in range(1000)])))
    assert data["counts"]["accepted"] == 1000
    identifiers = [f"TR-{i}" for i in range(1000)]

    one, response = queries_of(lambda: api.track(identifiers[:1], rich.sandbox_key))
    assert response.json()["data"]["orders"][0]["status"] == "PENDING"
    assert 0 < one <= QUERY_BUDGET, f"tracking 1: {one} queries"

    many, response = queries_of(lambda: api.track(identifiers, rich.sandbox_key))

    orders = response.json()["data"]["orders"]
    assert [o["client_order_id"] for o in orders] == identifiers
    assert all(len(o["events"]) == 1 for o in orders)
    # A read of a few drops takes their orders beside them; of 1000, it reads the orders apart
    # (tracking.selectors.BESIDE_AT_MOST): one statement more, whatever the number of orders.
    assert many == one + 1, f"tracking 1000: {many} queries; tracking 1: {one} queries"


# The statements of each small call, warmed: the key's last use already written
# and the row shapes compiled. Equal, not at most: a statement saved is written down here as
# surely as one added is noticed. Auth and the rate counter are the first statement of every
# call: the key, its business and plan read as one row, and the call's hit counted on the
# key's counter in the same statement (accounts.auth, core.counters.count_with_row); the
# statement reads nothing for the view, which reads its own rows.
SMALL_CALLS = {
    "GET /account": 2,  # + one read of the rest (billing/account.py)
    "tracking 1 id": 2,  # + the drops with their orders beside them
    "GET /orders?limit=20": 3,  # + the page's keys, the drops with their orders
    "quote of 1 drop": 6,  # + vehicles, wallet, the areas with their hours, duplicates, the
    # quote kept
    "bulk of 1 drop": 18,  # one transaction: its writes, by COPY, and its event
}


def test_each_small_call_costs_its_statements(open_for_business, rich, api):
    api.bulk(batch(group(drop("SC-0"))), rich.sandbox_key)
    key = rich.sandbox_key
    fresh = iter(range(1, 100))
    calls = {
        "GET /account": lambda: api.get("/account", key),
        "tracking 1 id": lambda: api.track(["SC-0"], key),
        "GET /orders?limit=20": lambda: api.get("/orders?limit=20", key),
        "quote of 1 drop": lambda: api.post("/orders/quote", batch(group(drop("SC-Q"))), key),
        "bulk of 1 drop": lambda: api.bulk(batch(group(drop(f"SC-{next(fresh)}"))), key),
    }
    for call in calls.values():  # warm: compiled SQL, cached shapes
        call()
    counted = {name: queries_of(call)[0] for name, call in calls.items()}
    assert counted == SMALL_CALLS
