"""Couriers' pay in the console (docs/operator.md "Pay plans and couriers' pay"): pay plans
under Couriers, and the CSV of each courier's pay over a period, for Finance only."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest

from couriers.models import PayPlan
from tests.couriers.earning import bring_back, deliver, live_run, make_plans, signed_in_courier
from tests.operators import staff_client

EXPORT = "/admin/couriers/payplan/export/"


def rows_of(answer) -> list[dict[str, str]]:
    assert answer["Content-Type"].startswith("text/csv")
    text = answer.content.decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def two_days_of_work(open_for_business, alice, api):
    """Dara: a delivery (run 2.00 km) and a return (run 1.00 km) on the 23rd, a delivery
    (run 3.00 km) on the 24th. Sophea: a delivery (run 4.00 km) on the 24th."""
    make_plans()
    courier, client = signed_in_courier(api, "Dara Sok", "+85512340010")
    other, other_client = signed_in_courier(api, "Sophea Chan", "+85512340011")
    (first,) = live_run(api, alice, courier, 2.0)
    (back,) = live_run(api, alice, courier, 1.0)
    deliver(client, first)
    bring_back(client, back)
    open_for_business.shift(timedelta(days=1))
    (later,) = live_run(api, alice, courier, 3.0)
    (hers,) = live_run(api, alice, other, 4.0)
    deliver(client, later)
    deliver(other_client, hers)
    return courier, other


def test_finance_exports_each_couriers_pay_over_the_period(two_days_of_work):
    dara, sophea = two_days_of_work
    finance = staff_client("finance", groups=["Finance"])

    rows = rows_of(finance.get(EXPORT, {"first": "2026-11-23", "last": "2026-11-24"}))
    first_day = rows_of(finance.get(EXPORT, {"first": "2026-11-23", "last": "2026-11-23"}))

    assert rows == [
        {
            "courier_id": str(dara.pk), "courier": "Dara Sok", "phone": f"'{dara.phone}",
            "vehicles": "motorbike", "from": "2026-11-23", "to": "2026-11-24",
            "currency": "USD", "delivered": "2", "returned": "1", "km": "6.00",
            "delivered_pay": "2.50", "km_pay": "2.10", "returned_pay": "0.60", "total": "5.20",
        },
        {
            "courier_id": str(sophea.pk), "courier": "Sophea Chan", "phone": f"'{sophea.phone}",
            "vehicles": "motorbike", "from": "2026-11-23", "to": "2026-11-24",
            "currency": "USD", "delivered": "1", "returned": "0", "km": "4.00",
            "delivered_pay": "1.25", "km_pay": "1.40", "returned_pay": "0.00", "total": "2.65",
        },
    ]  # fmt: skip
    assert [(row["courier"], row["delivered"], row["km"], row["total"]) for row in first_day] == [
        ("Dara Sok", "1", "3.00", "2.90")  # 1.25 + 3.00 × 0.35 + 0.60
    ]


def test_an_operator_without_the_export_permission_cannot_export(two_days_of_work):
    operator = staff_client("operator", groups=["Operators"])

    plans_page = operator.get("/admin/couriers/payplan/")
    answer = operator.get(EXPORT, {"first": "2026-11-23", "last": "2026-11-24"})

    assert plans_page.status_code == 200 and b"Export pay" not in plans_page.content
    assert answer.status_code == 403 and not answer["Content-Type"].startswith("text/csv")


def test_finance_finds_the_export_on_the_pay_plans_page_and_a_bad_period_is_refused(
    two_days_of_work,
):
    finance = staff_client("finance", groups=["Finance"])

    plans_page = finance.get("/admin/couriers/payplan/")
    form = finance.get(EXPORT)
    backwards = finance.get(EXPORT, {"first": "2026-11-24", "last": "2026-11-23"})
    too_long = finance.get(EXPORT, {"first": "2025-01-01", "last": "2026-11-23"})

    assert EXPORT.encode() in plans_page.content
    assert form.status_code == 200 and b'name="first"' in form.content
    assert backwards.status_code == 200 and b"comes after the last" in backwards.content
    assert too_long.status_code == 200 and b"at most 366 days" in too_long.content


def test_operators_set_pay_plans_and_the_form_refuses_a_negative_amount(db):
    operator = staff_client("operator", groups=["Operators"])
    body = {"vehicle": "van", "per_drop": "3.00", "per_km": "-0.10", "per_return": "1.50"}

    refused = operator.post("/admin/couriers/payplan/add/", body)
    assert refused.status_code == 200 and not PayPlan.objects.exists()

    made = operator.post("/admin/couriers/payplan/add/", {**body, "per_km": "0.80"})
    assert made.status_code == 302
    plan = PayPlan.objects.get(vehicle_id="van")
    assert (str(plan.per_drop), str(plan.per_km), str(plan.per_return)) == ("3.00", "0.80", "1.50")
