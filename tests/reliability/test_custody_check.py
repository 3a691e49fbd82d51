"""The drills' cash custody check (bench/drill.py check_custody, docs/contract.md §23) reads
the database as it is: it passes on couriers' real collections and fails on the breach it
names. The breaches are written here by hand, as the real run never makes them."""

from __future__ import annotations

from django.db import connection

from bench.drill import check_custody
from tests.billing.custody_helpers import delivered_by
from tests.couriers.conftest import make_courier  # noqa: F401 (fixture)


class Db:
    """The test's connection, read as the drills read their psycopg one."""

    def execute(self, sql: str, params=None):
        cursor = connection.cursor()
        cursor.execute(sql, params)
        return cursor


def custody() -> tuple[bool, str]:
    found: list[tuple[str, bool, str]] = []
    check_custody(Db(), lambda name, ok, detail: found.append((name, ok, detail)))
    [(_, ok, detail)] = found
    return ok, detail


def test_real_collections_add_up(open_for_business, make_tenant, api, make_courier):  # noqa: F811
    courier, _ = make_courier("Dara Sok")
    delivered_by(api, make_tenant(live_balance="100.00"), courier, "12.50", "7.25")

    ok, detail = custody()

    assert ok, detail
    assert detail.startswith("19.75 collected")


def test_cash_in_hand_that_no_ledger_explains_is_a_breach(
    open_for_business,
    make_tenant,
    api,
    make_courier,  # noqa: F811
):
    courier, _ = make_courier("Dara Sok")
    delivered_by(api, make_tenant(live_balance="100.00"), courier, "12.50")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE billing_couriercashaccount SET in_hand = in_hand + 1")

    ok, detail = custody()

    assert not ok and "1 off" in detail


def test_a_collection_no_courier_took_is_a_breach(
    open_for_business,
    make_tenant,
    api,
    make_courier,  # noqa: F811
):
    courier, _ = make_courier("Dara Sok")
    delivered_by(api, make_tenant(live_balance="100.00"), courier, "12.50")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM billing_couriercashentry")

    assert not custody()[0]
