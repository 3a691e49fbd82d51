"""Pricing (docs/contract.md §7): base + per-km fee beyond the included km, haversine, half-up."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from billing.models import EntryKind, LedgerEntry, PricingPlan
from billing.services import price_for
from geo.geometry import haversine_km
from orders.models import Drop
from tests.billing.helpers import batch_debit, outcomes, prices, wallet_of
from tests.factories import SHOP, batch, drop, group

# Two pins inside the demo area exactly 0.1° of latitude apart: 6371.0 × π / 1800 km.
SOUTH = {"lat": 11.50, "long": 104.90}
NORTH = {"lat": 11.60, "long": 104.90}


def plan(base_fee="2.00", per_km_fee="0.50", included_km="0") -> PricingPlan:
    """An unsaved plan: price_for is pure arithmetic."""
    return PricingPlan(
        name="Test",
        base_fee=Decimal(base_fee),
        per_km_fee=Decimal(per_km_fee),
        included_km=Decimal(included_km),
    )


@pytest.mark.parametrize(
    ("base_fee", "per_km_fee", "included_km", "km", "expected"),
    [
        ("0.00", "0.50", "0", 0.25, "0.13"),  # 0.125: banker's rounding says 0.12
        ("0.00", "0.50", "0", 0.05, "0.03"),  # 0.025: banker's says 0.02
        ("1.00", "0.10", "0", 1.45, "1.15"),  # 1.145: banker's says 1.14
        ("2.00", "0.50", "1.00", 1.01, "2.01"),  # 2.005 over the included km: banker's 2.00
        ("0.00", "1.50", "0", 0.0833, "0.12"),  # 0.12495 is below the half: down
    ],
)
def test_price_rounds_half_up_to_cents_where_bankers_rounding_would_not(
    base_fee, per_km_fee, included_km, km, expected
):
    the_plan = plan(base_fee, per_km_fee, included_km)

    price = price_for(the_plan, km)

    assert price == Decimal(expected)
    assert price.as_tuple().exponent == -2
    exact = the_plan.base_fee + the_plan.per_km_fee * max(
        Decimal(0), Decimal(repr(km)) - the_plan.included_km
    )
    if exact * 1000 % 10 == 5:  # a true tie: the case where the two roundings part
        assert price != exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def test_price_is_not_disturbed_by_binary_noise_of_the_distance():
    # 2.675 as a float is 2.67499999999999982236431605997495353221893310546875.
    assert Decimal(2.675) < Decimal("2.675")

    assert price_for(plan("2.00", "1.00"), 2.675) == Decimal("4.68")


@pytest.mark.parametrize(
    ("km", "expected"),
    [(0.0, "2.00"), (2.99, "2.00"), (3.0, "2.00"), (3.01, "2.01"), (5.0, "3.00")],
)
def test_included_km_are_free_and_only_the_distance_beyond_them_is_charged(km, expected):
    assert price_for(plan("2.00", "0.50", "3.00"), km) == Decimal(expected)


def test_haversine_uses_an_earth_radius_of_6371_km():
    km = haversine_km(SOUTH["lat"], SOUTH["long"], NORTH["lat"], NORTH["long"])

    assert km == pytest.approx(6371.0 * math.radians(0.1), rel=1e-12)


def test_api_price_follows_the_formula_with_the_6371_km_radius(open_for_business, make_tenant, api):
    tenant = make_tenant(
        base_fee="0.00", per_km_fee="10.00", included_km="0", sandbox_balance="500.00"
    )

    response = api.bulk(batch(group(drop("R-1", **NORTH), **SOUTH)), tenant.sandbox_key)

    # 111.19 with R = 6371.0; 111.32 with the equatorial 6378.137, 111.23 with 6372.8.
    assert prices(response) == ["111.19"]
    assert Drop.objects.get(client_order_id="R-1").price == Decimal("111.19")


def test_accepted_drop_carries_price_and_currency_in_result_tracking_and_database(
    open_for_business, alice, api
):
    # Standard plan: 2.00 + 0.50 × 1.6642 km = 2.8321 → 2.83
    response = api.bulk(batch(group(drop("P-1"))), alice.sandbox_key)

    entry = response.json()["data"]["orders"][0]
    assert entry["status"] == "accepted"
    assert (entry["price"], entry["currency"]) == ("2.83", "USD")
    stored = Drop.objects.get(client_order_id="P-1")
    assert (stored.price, stored.currency) == (Decimal("2.83"), "USD")
    tracked = api.track(["P-1"], alice.sandbox_key).json()["data"]["orders"][0]
    assert (tracked["price"], tracked["currency"]) == ("2.83", "USD")


def test_with_generous_included_km_every_drop_costs_the_base_fee(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(base_fee="3.45", per_km_fee="0.70", included_km="100")
    far = {"lat": 11.69, "long": 104.99}  # ~17 km from the shop, inside the included km

    response = api.bulk(
        batch(group(drop("I-1"), drop("I-2", **far), drop("I-3", **SHOP))), tenant.sandbox_key
    )

    assert prices(response) == ["3.45", "3.45", "3.45"]
    assert set(Drop.objects.values_list("price", flat=True)) == {Decimal("3.45")}
    # One debit for the batch: the three base fees.
    debit = LedgerEntry.objects.get(kind=EntryKind.ORDER_DEBIT)
    assert debit == batch_debit(response.json()["data"]["batch_id"])
    assert debit.amount == Decimal("-3.45") * 3
    tracked = api.track(["I-1", "I-2", "I-3"], tenant.sandbox_key).json()["data"]["orders"]
    assert [t["price"] for t in tracked] == ["3.45", "3.45", "3.45"]


def test_every_accepted_drop_of_a_mixed_batch_is_priced_and_rejected_ones_are_not(
    open_for_business, alice, api
):
    body = batch(
        group(drop("M-1"), drop("M-2", phone="not a phone"), drop("M-3", **SHOP)),
        group(drop("M-4", **NORTH)),
    )

    response = api.bulk(body, alice.sandbox_key)

    orders = response.json()["data"]["orders"]
    assert outcomes(response) == ["accepted", "INVALID_PHONE", "accepted", "accepted"]
    for entry in orders:
        if entry["status"] == "accepted":
            assert entry["currency"] == "USD"
            assert Decimal(entry["price"]) == Drop.objects.get(pk=entry["drop_id"]).price
        else:
            assert "price" not in entry and "currency" not in entry
    assert prices(response)[2] == "2.00"  # a drop at the pickup itself: no distance


def test_price_is_the_same_in_sandbox_and_live(open_for_business, alice, api):
    legs = [drop("S-1"), drop("S-2", **NORTH), drop("S-3", **SHOP)]

    sandbox = api.bulk(batch(group(*legs)), alice.sandbox_key)
    live = api.bulk(batch(group(*legs)), alice.live_key)

    assert prices(sandbox) == prices(live) == ["2.83", "4.87", "2.00"]
    spent = sum(Decimal(p) for p in prices(live))
    assert wallet_of(alice, "sandbox").balance == Decimal("100.00") - spent
    assert wallet_of(alice, "live").balance == Decimal("100.00") - spent
