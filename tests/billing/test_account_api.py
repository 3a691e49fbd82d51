"""GET /api/v1/account exactly as docs/contract.md §5, and provisioning's billing options."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import orjson
import pytest
from django.core.management import call_command

from accounts.models import BillingModel, Business
from billing.schema import Account
from tests.billing.helpers import assert_ledger_consistent
from tests.factories import SHOP, batch, drop, group

# The seeded vehicle types (fleet migration 0002) and an account that never had COD.
MULTIPLIERS = {"motorbike": "1.00", "tuktuk": "1.50", "car": "2.00", "van": "3.00"}
NO_COD = {
    "owed": "0.00",
    "collected_total": "0.00",
    "remitted_total": "0.00",
    "credited_total": "0.00",
}


def account(api, key: str):
    response = api.get("/account", key)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["statusCode"], body["success"]) == (200, True)
    return body["data"]


def test_wallet_account_shows_its_pricing_and_the_balance_of_the_keys_environment(make_tenant, api):
    tenant = make_tenant(
        name="Wallet Shop",
        sandbox_balance="56.7",
        live_balance="12.34",
        base_fee="1.5",
        per_km_fee="0.25",
        included_km="2.5",
    )
    pricing = {
        "base_fee": "1.50",
        "per_km_fee": "0.25",
        "included_km": "2.50",
        "return_fee_percent": "50.00",
        "cod_fee_percent": "1.00",
        "vehicle_multipliers": MULTIPLIERS,
    }
    business = {"id": str(tenant.business.pk), "name": "Wallet Shop"}

    assert account(api, tenant.sandbox_key) == {
        "business": business,
        "environment": "sandbox",
        "billing_model": "wallet",
        "currency": "USD",
        "pricing": pricing,
        "wallet": {"balance": "56.70", "owed": "0.00"},
        "cod": NO_COD,
    }
    assert account(api, tenant.live_key) == {
        "business": business,
        "environment": "live",
        "billing_model": "wallet",
        "currency": "USD",
        "pricing": pricing,
        "wallet": {"balance": "12.34", "owed": "0.00"},
        "cod": NO_COD,
    }


def test_wallet_balance_follows_debits_and_refunds(open_for_business, alice, api):
    api.bulk(batch(group(drop("A-1"), drop("A-2", **SHOP))), alice.sandbox_key)
    assert account(api, alice.sandbox_key)["wallet"] == {"balance": "95.17", "owed": "0.00"}

    api.post("/orders/cancel", {"identifiers": ["A-2"]}, alice.sandbox_key)

    assert account(api, alice.sandbox_key)["wallet"] == {"balance": "97.17", "owed": "0.00"}
    assert assert_ledger_consistent(alice) == Decimal("97.17")
    assert account(api, alice.live_key)["wallet"] == {"balance": "100.00", "owed": "0.00"}


def test_invoiced_account_shows_the_current_invoice_instead_of_a_wallet(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(name="Invoiced Shop", billing="invoiced", base_fee="2", per_km_fee="0.5")
    expected = {
        "business": {"id": str(tenant.business.pk), "name": "Invoiced Shop"},
        "environment": "sandbox",
        "billing_model": "invoiced",
        "currency": "USD",
        "pricing": {
            "base_fee": "2.00",
            "per_km_fee": "0.50",
            "included_km": "0.00",
            "return_fee_percent": "50.00",
            "cod_fee_percent": "1.00",
            "vehicle_multipliers": MULTIPLIERS,
        },
        "invoice": {"period": "2026-11", "accrued": "0.00", "status": "OPEN"},
        "cod": NO_COD,
    }
    assert account(api, tenant.sandbox_key) == expected  # before any invoice row exists

    api.bulk(batch(group(drop("I-1"), drop("I-2", **SHOP))), tenant.sandbox_key)

    expected["invoice"]["accrued"] = "4.83"
    assert account(api, tenant.sandbox_key) == expected
    live = account(api, tenant.live_key)
    assert (live["environment"], live["invoice"]) == (
        "live",
        {"period": "2026-11", "accrued": "0.00", "status": "OPEN"},
    )


def test_account_never_shows_another_business(open_for_business, alice, bob, api):
    api.bulk(batch(group(drop("B-1"))), bob.sandbox_key)

    data = account(api, alice.sandbox_key)

    assert data["business"] == {"id": str(alice.business.pk), "name": "Alice Shop"}
    assert data["wallet"] == {"balance": "100.00", "owed": "0.00"}


def test_account_without_a_key_is_401(api, db):
    response = api.get("/account", None)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_provisioning_billing_and_pricing_options_take_full_effect(make_tenant):
    tenant = make_tenant(
        billing="invoiced",
        base_fee="1.25",
        per_km_fee="0.40",
        included_km="0.5",
        net_days=14,
        sandbox_balance="7.00",
        live_balance="3.00",
    )

    business = Business.objects.select_related("pricing_plan").get(pk=tenant.business.pk)
    plan = business.pricing_plan
    assert (business.billing_model, business.net_days) == (BillingModel.INVOICED, 14)
    assert (plan.base_fee, plan.per_km_fee, plan.included_km) == (
        Decimal("1.25"),
        Decimal("0.40"),
        Decimal("0.50"),
    )
    assert assert_ledger_consistent(tenant, "sandbox") == Decimal("7.00")
    assert assert_ledger_consistent(tenant, "live") == Decimal("3.00")


def test_provision_business_command_options_show_in_the_account(db, api):
    out = StringIO()
    call_command(
        "provision_business",
        "--name=Scripted",
        "--email=scripted@example.com",
        "--billing=invoiced",
        "--base-fee=0.99",
        "--per-km-fee=0.33",
        "--included-km=1",
        "--net-days=7",
        "--json",
        stdout=out,
    )
    keys = orjson.loads(out.getvalue())

    data = account(api, keys["live_key"])

    assert data["billing_model"] == "invoiced"
    assert data["pricing"] == {
        "base_fee": "0.99",
        "per_km_fee": "0.33",
        "included_km": "1.00",
        "return_fee_percent": "50.00",
        "cod_fee_percent": "1.00",
        "vehicle_multipliers": MULTIPLIERS,
    }
    assert Business.objects.get(pk=keys["business_id"]).net_days == 7


@pytest.mark.parametrize("billing", ["wallet", "invoiced"])
def test_the_account_is_what_its_documented_serializer_renders(make_tenant, api, billing):
    """GET /account is built as the wire shape, not rendered through billing.schema.Account;
    the serializer, which documents it, must render it unchanged."""
    tenant = make_tenant(billing=billing)
    data = account(api, tenant.sandbox_key)

    assert Account(data).data == data
    money_part = {"wallet"} if billing == "wallet" else {"invoice"}
    assert set(data) == set(Account().fields) - ({"wallet", "invoice"} - money_part)
