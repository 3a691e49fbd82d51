"""The COD account keeps its entries' sums by kind (billing.cod._append): GET
/account reads them as columns, never every entry ever written, so its cost does not grow
with a business's history; the kept totals always equal the sums of the entries."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.cod import CodExceedsOwed, credit_wallet, remit_cod
from billing.models import CodAccount, CodEntry
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod

pytestmark = pytest.mark.django_db

KEPT = importlib.import_module("billing.migrations.0006_cod_totals_kept")


def kept(tenant, environment: str = "sandbox") -> dict[str, Decimal]:
    account = CodAccount.objects.get(business=tenant.business, environment=environment)
    return {
        "owed": account.owed,
        "collected": account.collected_total,
        "remitted": account.remitted_total,
        "credited": account.credited_total,
    }


def test_each_move_adds_to_its_own_total(open_for_business, make_tenant, api):
    tenant = make_tenant(sandbox_balance="10.00")
    delivered_cod(api, tenant, {"KT-1": "60.00", "KT-2": "40.00"})
    remit_cod(business=tenant.business, environment="sandbox", amount="25.00", reference="T-1")
    credit_wallet(business=tenant.business, environment="sandbox", amount=Decimal("15.50"))
    delivered_cod(api, tenant, {"KT-3": "0.50"})

    assert kept(tenant) == {
        "owed": Decimal("60.00"),
        "collected": Decimal("100.50"),
        "remitted": Decimal("25.00"),
        "credited": Decimal("15.50"),
    }
    cod = api.get("/account", tenant.sandbox_key).json()["data"]["cod"]
    assert cod == {
        "owed": "60.00",
        "collected_total": "100.50",
        "remitted_total": "25.00",
        "credited_total": "15.50",
    }
    assert_cod_consistent()


def test_a_refused_move_changes_no_total(open_for_business, make_tenant, api):
    tenant = make_tenant()
    delivered_cod(api, tenant, {"KT-R": "20.00"})
    before = kept(tenant)

    with pytest.raises(CodExceedsOwed):
        remit_cod(business=tenant.business, environment="sandbox", amount="20.01", reference="X")

    assert kept(tenant) == before
    assert_cod_consistent()


def test_get_account_reads_no_entry(open_for_business, make_tenant, api):
    """Its cost must not grow with the entries: no statement of the call reads them."""
    tenant = make_tenant()
    delivered_cod(api, tenant, {"KT-Q": "5.00"})

    with CaptureQueriesContext(connection) as captured:
        assert api.get("/account", tenant.sandbox_key).status_code == 200

    statements = [query["sql"] for query in captured]
    assert statements and not [sql for sql in statements if CodEntry._meta.db_table in sql]


def test_the_migration_gives_existing_accounts_the_sums_of_their_entries(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="10.00")
    delivered_cod(api, tenant, {"KT-M1": "30.00", "KT-M2": "12.25"})
    remit_cod(business=tenant.business, environment="sandbox", amount="10.00", reference="T-2")
    credit_wallet(business=tenant.business, environment="sandbox", amount=Decimal("2.25"))
    other = make_tenant()
    CodAccount.objects.create(business=other.business, environment="live")  # no entries
    expected = kept(tenant)
    CodAccount.objects.update(collected_total=0, remitted_total=0, credited_total=0)

    KEPT.keep_totals(apps, connection.schema_editor())

    assert kept(tenant) == expected
    assert expected == {
        "owed": Decimal("30.00"),
        "collected": Decimal("42.25"),
        "remitted": Decimal("10.00"),
        "credited": Decimal("2.25"),
    }
    assert kept(other, "live") == dict.fromkeys(expected, Decimal("0.00"))
    assert_cod_consistent()
