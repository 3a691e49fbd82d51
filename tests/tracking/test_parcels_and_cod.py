"""A tracking entry's parcel, price breakdown, cash on delivery and its pickup's vehicle
(docs/contract.md §18), as they stand through the drop's moves."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import orjson

from billing.models import LedgerEntry
from billing.services import price_for
from core.formats import CENT, iso_z, money
from geo.geometry import DistancesFrom
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, cancel, entries


def place_carrying(api, key: str) -> None:
    body = batch(
        {
            **group(
                {
                    **drop("SOFA"),
                    "parcel": {"size": "XL", "weight_kg": 80.5, "description": "Sofa"},
                    "cod": {"amount": "12.50"},
                },
                {**drop("BOX"), "parcel": {"size": "M", "value": "40"}},
                drop("PLAIN"),
            ),
            "vehicle": "van",
        },
        group({**drop("CASH"), "cod": {"amount": "99.99"}}),
    )
    response = api.bulk(body, key)
    assert response.json()["data"]["counts"]["accepted"] == 4, response.content


def test_an_entry_shows_its_parcel_price_parts_cash_and_vehicle(open_for_business, alice, api):
    place_carrying(api, alice.sandbox_key)
    tracked = entries(api.track(["SOFA", "BOX", "PLAIN", "CASH"], alice.sandbox_key))
    sofa = tracked["SOFA"]
    assert sofa["parcel"] == {
        "size": "XL",
        "weight_kg": 80.5,
        "description": "Sofa",
        "value": None,
    }
    # The plan's 2.00 + 0.50/km × the van's 3.00, and 1% of 12.50 (half-up).
    assert sofa["price_breakdown"]["cod_fee"] == "0.13"
    delivery = sofa["price_breakdown"]["delivery"]
    assert sofa["price"] == f"{float(delivery) + 0.13:.2f}"
    assert sofa["cod"] == {"amount": "12.50", "status": "pending", "collected_at": None}
    assert sofa["pickup"]["vehicle"] == "van"
    assert tracked["BOX"]["parcel"] == {
        "size": "M",
        "weight_kg": 1.0,
        "description": None,
        "value": "40.00",
    }
    assert tracked["PLAIN"]["parcel"] == {
        "size": "S",
        "weight_kg": 1.0,
        "description": None,
        "value": None,
    }
    assert tracked["PLAIN"]["cod"] is None
    assert tracked["PLAIN"]["price_breakdown"] == {
        "delivery": tracked["PLAIN"]["price"],
        "cod_fee": "0.00",
    }
    assert tracked["CASH"]["pickup"]["vehicle"] == "motorbike"
    assert tracked["CASH"]["price_breakdown"]["cod_fee"] == "1.00"


def test_the_cash_is_collected_with_the_delivery_and_not_when_the_drop_is_cancelled(
    open_for_business, alice, api
):
    place_carrying(api, alice.sandbox_key)
    assert advance(api, alice.sandbox_key, "SOFA", to="DELIVERED").status_code == 200
    assert cancel(api, alice.sandbox_key, "CASH").status_code == 200
    tracked = entries(api.track(["SOFA", "CASH"], alice.sandbox_key))
    delivered = next(e for e in tracked["SOFA"]["events"] if e["status"] == "DELIVERED")
    collected_at = Drop.objects.get(client_order_id="SOFA").cod_collected_at
    assert tracked["SOFA"]["cod"] == {
        "amount": "12.50",
        "status": "collected",
        # When the ledger stamped it (tracking/lifecycle.py), else the delivery's time.
        "collected_at": delivered["at"] if collected_at is None else iso_z(collected_at),
    }
    assert tracked["CASH"]["cod"] == {
        "amount": "99.99",
        "status": "not_collected",
        "collected_at": None,
    }


def test_a_failed_cod_drop_was_not_collected(open_for_business, alice, api):
    place_carrying(api, alice.sandbox_key)
    assert advance(api, alice.sandbox_key, "SOFA", to="FAILED").status_code == 200
    cod = entries(api.track(["SOFA"], alice.sandbox_key))["SOFA"]["cod"]
    assert cod == {"amount": "12.50", "status": "not_collected", "collected_at": None}


def test_a_moved_drop_is_repriced_with_its_vehicle_and_keeps_its_cod_fee(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(base_fee="1.03", per_km_fee="1.00", sandbox_balance="100.00")
    body = batch({**group({**drop("MOVE"), "cod": {"amount": "12.50"}}), "vehicle": "tuktuk"})
    accepted = api.bulk(body, tenant.sandbox_key).json()["data"]["orders"][0]
    far = {"lat": 11.5466, "long": 104.8441}  # in the area, ~9 km from the shop
    response = api.client.patch(
        f"/api/v1/orders/{accepted['drop_id']}",
        orjson.dumps({"dropoff": far}),
        content_type="application/json",
        **api._headers(tenant.sandbox_key),
    )
    assert response.status_code == 200, response.content
    entry = response.json()["data"]
    moved = Drop.objects.get(pk=accepted["drop_id"])
    km = DistancesFrom(moved.order.pickup_lat, moved.order.pickup_long).km(far["lat"], far["long"])
    plan = tenant.business.pricing_plan
    delivery = (price_for(plan, km) * Decimal("1.50")).quantize(CENT, rounding=ROUND_HALF_UP)
    assert entry["price_breakdown"] == {"delivery": money(delivery), "cod_fee": "0.13"}
    assert entry["price"] == money(delivery + Decimal("0.13")) == money(moved.price)
    assert entry["price"] != accepted["price"]


def test_a_returned_cod_drop_pays_the_return_fee_on_its_delivery_price(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(base_fee="2.00", per_km_fee="0", sandbox_balance="100.00")
    body = batch(group({**drop("BACK"), "cod": {"amount": "50.00"}}))
    accepted = api.bulk(body, tenant.sandbox_key).json()["data"]["orders"][0]
    assert accepted["price_breakdown"] == {"delivery": "2.00", "cod_fee": "0.50"}
    assert advance(api, tenant.sandbox_key, "BACK", to="RETURNED").status_code == 200
    fee = LedgerEntry.objects.get(drop_id=accepted["drop_id"], kind="RETURN_FEE")
    assert fee.amount == Decimal("-1.00")  # 50% of 2.00, not of 2.50
    cod = entries(api.track(["BACK"], tenant.sandbox_key))["BACK"]["cod"]
    assert cod == {"amount": "50.00", "status": "not_collected", "collected_at": None}
