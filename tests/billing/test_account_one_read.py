"""GET /account's reads on PostgreSQL after authentication are one statement
(billing/account.py): it must answer exactly what the ORM's reads apart answer (the embedded
default's way), whatever the account holds. That it is one statement is held by
tests/orders/test_query_counts.py."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import Business
from billing.account import account_answer
from billing.cod import cod_summary, credit_wallet, remit_cod
from billing.models import Invoice, InvoiceStatus
from billing.services import account_summary, invoice_period
from core.formats import money
from fleet.models import VehicleType
from tests.billing.cod_helpers import delivered_cod

pytestmark = pytest.mark.django_db


def both_ways(api, tenant, environment: str = "sandbox") -> tuple[dict, dict]:
    """GET /account's `data` read in one statement, and read apart by the ORM; asserting
    first that the API's answer is the one statement's."""
    key = tenant.sandbox_key if environment == "sandbox" else tenant.live_key
    response = api.get("/account", key)
    assert response.status_code == 200, response.content
    business = Business.objects.select_related("pricing_plan").get(pk=tenant.business.pk)
    at = timezone.now()
    in_one = account_answer(business=business, environment=environment, at=at)
    assert response.json()["data"] == in_one
    apart = {
        "business": {"id": str(business.pk), "name": business.name},
        "environment": environment,
        **account_summary(business=business, environment=environment, at=at),
        "cod": {
            name: money(value)
            for name, value in cod_summary(business=business, environment=environment).items()
        },
    }
    return in_one, apart


def test_a_new_wallet_account_reads_the_same_both_ways(make_tenant, api):
    tenant = make_tenant(sandbox_balance="12.34")
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart
    assert in_one["wallet"] == {"balance": "12.34", "owed": "0.00"}
    assert in_one["cod"] == dict.fromkeys(in_one["cod"], "0.00")


def test_cod_totals_of_each_kind_and_of_this_environment_only(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="100.00")
    delivered_cod(api, tenant, {"COD-1": "60.00", "COD-2": "40.00"})
    remit_cod(business=tenant.business, environment="sandbox", amount="50.00", reference="T-1")
    credit_wallet(business=tenant.business, environment="sandbox", amount=Decimal("20.00"))
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart
    assert in_one["cod"] == {
        "owed": "30.00",
        "collected_total": "100.00",
        "remitted_total": "50.00",
        "credited_total": "20.00",
    }
    in_one, apart = both_ways(api, tenant, "live")
    assert in_one == apart and in_one["cod"]["collected_total"] == "0.00"


def test_an_invoiced_account_without_and_with_this_months_invoice(make_tenant, api):
    tenant = make_tenant(billing="invoiced")
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart
    last_month = invoice_period(timezone.now() - timedelta(days=40))
    Invoice.objects.create(
        business=tenant.business, environment="sandbox", period=last_month, accrued="9.00"
    )
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart and in_one["invoice"]["accrued"] == "0.00"
    Invoice.objects.create(
        business=tenant.business,
        environment="sandbox",
        period=invoice_period(timezone.now()),
        accrued="7.50",
        status=InvoiceStatus.ISSUED,
    )
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart
    assert in_one["invoice"]["accrued"] == "7.50"
    assert in_one["invoice"]["status"] == InvoiceStatus.ISSUED


def test_vehicles_changed_by_operators_and_an_account_without_a_plan(make_tenant, api):
    tenant = make_tenant()
    VehicleType.objects.filter(code="van").update(active=False)
    VehicleType.objects.filter(code="car").update(price_multiplier="1.25")
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart
    assert list(in_one["pricing"]["vehicle_multipliers"]) == ["motorbike", "car", "tuktuk"]
    Business.objects.filter(pk=tenant.business.pk).update(pricing_plan=None)
    in_one, apart = both_ways(api, tenant)
    assert in_one == apart and in_one["pricing"]["base_fee"] is None
