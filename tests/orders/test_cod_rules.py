"""Cash on delivery on a drop (docs/contract.md §18): the 400s of its shape, INVALID_COD in its
place, the fee in the price (half-up), what is stored and charged, and quotes that agree."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import override_settings

from billing.models import LedgerEntry
from orders.models import Drop
from tests.factories import batch, drop, group


def cod_drop(client_order_id: str, amount) -> dict:
    return {**drop(client_order_id), "cod": {"amount": amount}}


def results_of(response) -> dict[str, dict]:
    assert response.status_code == 200, response.content
    return {entry["client_order_id"]: entry for entry in response.json()["data"]["orders"]}


@pytest.fixture
def flat(open_for_business, make_tenant):
    """A tenant whose delivery costs a flat 2.00, whatever the distance."""
    return make_tenant(base_fee="2.00", per_km_fee="0", sandbox_balance="100.00")


@pytest.mark.parametrize(
    "cod",
    ["12.50", 12.5, [], {}, {"amount": None}, {"amount": "1", "currency": "KHR"}],
)
def test_a_cod_of_the_wrong_shape_is_a_400_naming_it(flat, api, cod):
    body = batch(group(drop("OK"), {**drop("BAD"), "cod": cod}))
    response = api.bulk(body, flat.sandbox_key)
    assert response.status_code == 400, response.content
    details = response.json()["error"]["details"]
    assert [d["field"] for d in details] == ["orders[0].dropoff[1].cod"]
    assert Drop.objects.count() == 0


@pytest.mark.parametrize(
    ("amount", "says"),
    [
        ("0", "above zero"),
        ("0.00", "above zero"),
        ("-1.00", "money string"),
        ("12.345", "money string"),
        ("1e3", "money string"),
        (" 12", "money string"),
        (12.5, "money string"),
        (True, "money string"),
        ("500.01", "over the most a courier collects (500.00)"),
    ],
)
def test_an_amount_that_is_not_allowed_is_invalid_cod(flat, api, amount, says):
    body = batch(group(cod_drop("BAD", amount), cod_drop("MAX", "500.00")))
    results = results_of(api.bulk(body, flat.sandbox_key))
    assert results["BAD"]["failure_reason"] == "INVALID_COD"
    assert says in results["BAD"]["message"]
    assert results["MAX"]["status"] == "accepted"


@override_settings(COD_MAX_AMOUNT=Decimal("20.00"))
def test_the_most_a_courier_collects_is_a_setting(flat, api):
    body = batch(group(cod_drop("OVER", "20.01"), cod_drop("AT", "20")))
    results = results_of(api.bulk(body, flat.sandbox_key))
    assert results["OVER"]["failure_reason"] == "INVALID_COD"
    assert results["AT"]["status"] == "accepted"


def test_invalid_cod_comes_before_a_duplicate_and_the_balance(open_for_business, make_tenant, api):
    tenant = make_tenant(base_fee="2.00", per_km_fee="0", sandbox_balance="2.00")
    api.bulk(batch(group(drop("TAKEN"))), tenant.sandbox_key)  # spends the whole balance
    body = batch(group(cod_drop("TAKEN", "0"), cod_drop("POOR", "-5")))
    results = results_of(api.bulk(body, tenant.sandbox_key))
    assert results["TAKEN"]["failure_reason"] == results["POOR"]["failure_reason"] == "INVALID_COD"


def test_the_fee_is_the_plans_percent_of_the_amount_half_up_added_to_the_price(flat, api):
    # 1% of 12.50 is 0.125: half-up to 0.13 (half-even would say 0.12).
    body = batch(group(cod_drop("COD", "12.50"), drop("PLAIN")))
    results = results_of(api.bulk(body, flat.sandbox_key))
    assert results["COD"]["price"] == "2.13"
    assert results["COD"]["price_breakdown"] == {"delivery": "2.00", "cod_fee": "0.13"}
    assert results["PLAIN"]["price_breakdown"] == {"delivery": "2.00", "cod_fee": "0.00"}
    stored = Drop.objects.get(client_order_id="COD")
    assert (stored.price, stored.cod_amount, stored.cod_fee, stored.cod_collected_at) == (
        Decimal("2.13"),
        Decimal("12.50"),
        Decimal("0.13"),
        None,
    )
    plain = Drop.objects.get(client_order_id="PLAIN")
    assert (plain.cod_amount, plain.cod_fee) == (None, Decimal("0.00"))
    # The wallet pays the total, fee included: 100.00 − 2.13 − 2.00.
    debit = LedgerEntry.objects.get(wallet__business=flat.business, kind="ORDER_DEBIT")
    assert (debit.amount, debit.balance_after) == (Decimal("-4.13"), Decimal("95.87"))


def test_the_fee_follows_the_plans_percent_and_the_vehicles_multiplier_leaves_it(flat, api):
    plan = flat.business.pricing_plan
    plan.cod_fee_percent = Decimal("2.50")
    plan.save()
    # 2.5% of 33.30 = 0.8325 → 0.83; the van's ×3.00 is on the delivery only.
    body = batch({**group(cod_drop("VAN", "33.30")), "vehicle": "van"})
    entry = results_of(api.bulk(body, flat.sandbox_key))["VAN"]
    assert entry["price_breakdown"] == {"delivery": "6.00", "cod_fee": "0.83"}
    assert entry["price"] == "6.83"


def test_a_balance_that_covers_the_delivery_but_not_the_fee_refuses_the_drop(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(base_fee="2.00", per_km_fee="0", sandbox_balance="2.12")
    body = batch(group(cod_drop("COD", "12.50"), drop("PLAIN")))
    results = results_of(api.bulk(body, tenant.sandbox_key))
    assert results["COD"]["failure_reason"] == "INSUFFICIENT_BALANCE"
    assert results["PLAIN"]["status"] == "accepted"


def test_a_quote_gives_the_bulk_prices_and_breakdowns_and_backs_them(flat, api):
    body = batch(
        group(cod_drop("A", "12.50"), cod_drop("B", "0")),
        {**group(cod_drop("C", "99.99")), "vehicle": "tuktuk"},
    )
    quote = api.post("/orders/quote", body, flat.sandbox_key).json()["data"]
    quoted = {q["client_order_id"]: q for q in quote["orders"]}
    assert quoted["A"]["price_breakdown"] == {"delivery": "2.00", "cod_fee": "0.13"}
    assert quoted["B"]["failure_reason"] == "INVALID_COD"
    # 1% of 99.99 = 0.9999 → 1.00; a tuk-tuk's 2.00 × 1.50 = 3.00.
    assert quoted["C"]["price_breakdown"] == {"delivery": "3.00", "cod_fee": "1.00"}
    assert quote["total_price"] == "6.13"
    results = results_of(api.bulk({**body, "quote_id": quote["quote_id"]}, flat.sandbox_key))
    for name in ("A", "C"):
        assert results[name]["price"] == quoted[name]["price"]
        assert results[name]["price_breakdown"] == quoted[name]["price_breakdown"]
    assert results["B"]["failure_reason"] == "INVALID_COD"
