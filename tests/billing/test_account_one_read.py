"""GET /account's reads on PostgreSQL are one statement (billing/account.py, issue 34), made
by the API key's own statement when the counters are there (accounts.auth.BesideKey): both
must answer exactly what the ORM's reads apart answer (the embedded default's way), whatever
the account holds, and their SQL must be compiled once."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from accounts import auth
from accounts.keys import digest_of
from accounts.models import Business
from billing import account
from billing.cod import credit_wallet, remit_cod
from billing.models import Invoice, InvoiceStatus
from billing.services import invoice_period
from core import reads, throttling
from fleet.models import VehicleType
from tests.billing.cod_helpers import delivered_cod

pytestmark = pytest.mark.django_db


def both_ways(tenant, environment: str = "sandbox") -> tuple:
    """The answer read in one statement, and read apart; asserting first that the key's
    statement, reading beside the key, reads what the one statement does."""
    business = Business.objects.select_related("pricing_plan").get(pk=tenant.business.pk)
    at = timezone.now()
    in_one = account._read_in_one(business, environment, at)
    assert beside_the_key(tenant, environment, at) == in_one
    return in_one, account._read_apart(business, environment, at)


def beside_the_key(tenant, environment: str, at) -> tuple:
    plaintext = tenant.sandbox_key if environment == "sandbox" else tenant.live_key
    hit = throttling.Hit("default", throttling.rate_of("default"), time.time())
    key, window, rows = auth._read_key(
        digest_of(plaintext), hit, account.beside_key(environment, at)
    )
    assert key.business == tenant.business and window.hits >= 1 and len(rows) == 1
    return account._answer_of(rows[0], key.business, invoice_period(at))


def test_a_new_wallet_account_reads_the_same_both_ways(make_tenant):
    tenant = make_tenant(sandbox_balance="12.34")
    in_one, apart = both_ways(tenant)
    assert in_one == apart
    assert in_one[0]["wallet"] == {"balance": "12.34", "owed": "0.00"}
    assert in_one[1] == {name: Decimal("0.00") for name in in_one[1]}


def test_cod_totals_of_each_kind_and_of_this_environment_only(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="100.00")
    delivered_cod(api, tenant, {"COD-1": "60.00", "COD-2": "40.00"})
    remit_cod(business=tenant.business, environment="sandbox", amount="50.00", reference="T-1")
    credit_wallet(business=tenant.business, environment="sandbox", amount=Decimal("20.00"))
    in_one, apart = both_ways(tenant)
    assert in_one == apart
    assert in_one[1] == {
        "owed": Decimal("30.00"),
        "collected_total": Decimal("100.00"),
        "remitted_total": Decimal("50.00"),
        "credited_total": Decimal("20.00"),
    }
    in_one, apart = both_ways(tenant, "live")
    assert in_one == apart and in_one[1]["collected_total"] == Decimal("0.00")


def test_an_invoiced_account_without_and_with_this_months_invoice(make_tenant):
    tenant = make_tenant(billing="invoiced")
    assert both_ways(tenant)[0] == both_ways(tenant)[1]
    last_month = invoice_period(timezone.now() - timedelta(days=40))
    Invoice.objects.create(
        business=tenant.business, environment="sandbox", period=last_month, accrued="9.00"
    )
    in_one, apart = both_ways(tenant)
    assert in_one == apart and in_one[0]["invoice"]["accrued"] == "0.00"
    Invoice.objects.create(
        business=tenant.business,
        environment="sandbox",
        period=invoice_period(timezone.now()),
        accrued="7.50",
        status=InvoiceStatus.ISSUED,
    )
    in_one, apart = both_ways(tenant)
    assert in_one == apart
    assert in_one[0]["invoice"]["accrued"] == "7.50"
    assert in_one[0]["invoice"]["status"] == InvoiceStatus.ISSUED


def test_vehicles_changed_by_operators_and_an_account_without_a_plan(make_tenant):
    tenant = make_tenant()
    VehicleType.objects.filter(code="van").update(active=False)
    VehicleType.objects.filter(code="car").update(price_multiplier="1.25")
    in_one, apart = both_ways(tenant)
    assert in_one == apart
    assert list(in_one[0]["pricing"]["vehicle_multipliers"]) == ["motorbike", "car", "tuktuk"]
    Business.objects.filter(pk=tenant.business.pk).update(pricing_plan=None)
    in_one, apart = both_ways(tenant)
    assert in_one == apart and in_one[0]["pricing"]["base_fee"] is None


def test_the_statement_is_compiled_once(make_tenant, api):
    tenant = make_tenant()
    beside = (connection.vendor, ("beside the key", ("account", "sandbox")))
    alone = (connection.vendor, ("account", "sandbox"))
    reads._compiled.pop(beside, None)
    reads._compiled.pop(alone, None)
    assert api.get("/account", tenant.sandbox_key).status_code == 200
    # Kept: the params guessed in billing.account._params are the ones Django binds, with
    # the business's id bound (read alone) and named by the key's statement (beside it).
    assert beside in reads._compiled
    both_ways(tenant)
    assert alone in reads._compiled
