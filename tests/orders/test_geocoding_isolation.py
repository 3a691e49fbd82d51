"""Geocoding never blocks or breaks another request (docs/contract.md §4, last bullet).

The geocoder runs before the batch transaction opens, before any claim or lock, and its
cache rows commit in their own statement in a fixed order. Real threads on PostgreSQL.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from geo.models import GeocodeResult
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tests.geo.test_nominatim import SLOW_ROAD, FakeNominatim
from tests.helpers import (
    ROYAL_PALACE,
    assert_error,
    in_own_connection,
    run_concurrently,
    wait_until,
)
from tests.orders.conftest import WAIT_SECONDS, sessions_waiting_on_a_lock

pytestmark = pytest.mark.django_db(transaction=True)


def address_only(client_order_id: str, address: dict) -> dict:
    entry = drop(client_order_id)
    entry["dropoff"] = {"name": "R", "phone": "+85512345679", "address": address}
    return entry


@pytest.mark.parametrize("trial", range(4))
def test_two_businesses_with_the_same_new_addresses_in_opposite_orders_never_deadlock(
    open_for_business, alice, bob, trial
):
    # Once 5 trials in 10 ended in "deadlock detected" (a 500) on the geocode-cache insert.
    addresses = [{"complete_address": f"{uuid.uuid4().hex} Street {i}"} for i in range(2000)]
    bodies = {
        0: (alice, batch(group(*[address_only(f"A-{i}", a) for i, a in enumerate(addresses)]))),
        1: (bob, batch(group(*[address_only(f"B-{i}", a) for i, a in enumerate(addresses[::-1])]))),
    }

    def send(api: Api, i: int):
        tenant, body = bodies[i]
        return api.bulk(body, tenant.sandbox_key)

    responses = run_concurrently(2, send)

    assert [r.status_code for r in responses] == [200, 200], [r.content[:300] for r in responses]
    assert GeocodeResult.objects.count() == 2000
    assert not GeocodeResult.objects.filter(found=True).exists()


def test_a_business_holding_its_account_lock_does_not_delay_another_on_a_shared_address(
    open_for_business, alice, bob, first_batch_held
):
    # alice's batch geocodes a new address, takes her account lock and is held there.
    with ThreadPoolExecutor(max_workers=1) as pool:
        held = pool.submit(
            lambda: in_own_connection(
                lambda: Api().bulk(
                    batch(group(address_only("A-1", ROYAL_PALACE))), alice.sandbox_key
                )
            )
        )
        wait_until(lambda: GeocodeResult.objects.exists() or held.done())

        # bob's one-drop batch names the same address: it must not wait for alice's commit.
        response = Api().bulk(batch(group(address_only("B-1", ROYAL_PALACE))), bob.sandbox_key)

        assert response.status_code == 200, response.content
        assert response.json()["data"]["counts"]["accepted"] == 1
        assert not held.done()  # answered while alice is still held inside her transaction
        first_batch_held.set()
        assert held.result(timeout=WAIT_SECONDS).status_code == 200
    assert Drop.objects.count() == 2


def test_a_slow_geocoder_holds_no_claim(open_for_business, alice, settings):
    fake = FakeNominatim().start()
    settings.GEOCODERS = ["nominatim"]
    settings.NOMINATIM_URL = fake.url
    settings.NOMINATIM_TIMEOUT_SECONDS = 2.0
    fake.answers["Slow Road"] = "sleep"
    try:
        slow_body = batch(group(address_only("S-1", SLOW_ROAD)), client_batch_id="same-id")
        with ThreadPoolExecutor(max_workers=1) as pool:
            slow = pool.submit(
                lambda: in_own_connection(lambda: Api().bulk(slow_body, alice.sandbox_key))
            )
            wait_until(lambda: fake.asked_for("Slow Road") > 0)

            # The slow batch is still at its geocoder: its client_batch_id is not claimed yet,
            # so another body under that id goes through at once instead of waiting.
            quick = Api().bulk(
                batch(group(drop("Q-1")), client_batch_id="same-id"), alice.sandbox_key
            )

            assert quick.status_code == 200, quick.content
            assert not slow.done()  # answered while the slow one is still at its geocoder
            late = slow.result(timeout=WAIT_SECONDS)
        assert_error(late, 409, "CLIENT_BATCH_ID_REUSED")
        assert sessions_waiting_on_a_lock() == 0
    finally:
        fake.stop()
