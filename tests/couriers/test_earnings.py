"""A courier's earnings (docs/contract.md §24): pay plans per vehicle type, priced exactly from
the day's delivered and returned drops and the km of their runs, only the courier's own."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from couriers.models import PayPlan
from couriers.pay import pay_by_courier
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.couriers.earning import bring_back, deliver, live_run, make_plans
from tests.factories import drop

DAY = date(2026, 11, 23)  # the open_for_business clock's day in Phnom Penh


@pytest.fixture
def plans(db):
    return make_plans()


def test_the_days_pay_is_exact_for_deliveries_a_return_and_km(
    open_for_business,
    alice,
    api,
    dara,
    plans,
):
    courier, client = dara
    first, second = live_run(api, alice, courier, 2.345, 4.567)  # the run: 4.567 km
    (failed,) = live_run(api, alice, courier, 3.1)
    deliver(client, first)
    deliver(client, second)
    bring_back(client, failed)

    answer = client.get("/earnings")

    assert answer.status_code == 200, answer.content
    assert answer.json()["data"] == {
        "date": "2026-11-23",
        "currency": "USD",
        "delivered": 2,
        "returned": 1,
        "km": "7.67",  # 4.57 + 3.10: each run once, not each drop's ride
        # 2 × 1.25; each run priced on its own, half-up to cents: 4.57 × 0.35 = 1.5995 →
        # 1.60, 3.10 × 0.35 = 1.085 → 1.09 (7.67 × 0.35 = 2.6845 would be 2.68); 1 × 0.60
        "pay": {"delivered": "2.50", "km": "2.69", "returned": "0.60"},
        "total": "5.79",
    }
    assert client.get("/earnings?date=2026-11-23").json()["data"] == answer.json()["data"]


def test_a_periods_pay_is_three_queries_however_many_drops(
    open_for_business, alice, api, dara, plans, django_assert_num_queries
):
    courier, client = dara
    for one in live_run(api, alice, courier, 1.0, 2.0, 3.0) + live_run(api, alice, courier, 4.0):
        deliver(client, one)
    with django_assert_num_queries(3):  # the moves counted, the runs' km, the plans
        (pay,) = pay_by_courier(first=DAY, last=DAY)
    assert (pay.delivered, pay.km, pay.total) == (4, Decimal("7.00"), Decimal("7.45"))


def test_a_day_without_work_is_all_zeros(open_for_business, dara, plans):
    _, client = dara
    data = client.get("/earnings?date=2026-11-01").json()["data"]
    assert data["date"] == "2026-11-01" and data["delivered"] == data["returned"] == 0
    assert data["km"] == "0.00" and data["total"] == "0.00"
    assert data["pay"] == {"delivered": "0.00", "km": "0.00", "returned": "0.00"}


@pytest.mark.parametrize("text", ["2026-13-01", "2026-02-30", "yesterday", "2026-1-5", ""])
def test_a_bad_date_is_a_400_naming_it(dara, text):
    _, client = dara
    answer = client.get(f"/earnings?date={text}")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == "date"


def test_only_the_couriers_own_live_drops_are_paid(
    open_for_business,
    alice,
    bob,
    api,
    dara,
    sophea,
    plans,
):
    courier, client = dara
    other, other_client = sophea
    (mine,) = live_run(api, alice, courier, 1.0)
    (hers,) = live_run(api, bob, other, 5.0)
    (play,) = assigned_drops(api, alice, courier, drop())  # sandbox: no real pay
    deliver(client, mine)
    deliver(other_client, hers)
    deliver(client, play)

    mine_paid = client.get("/earnings").json()["data"]
    hers_paid = other_client.get("/earnings").json()["data"]

    assert (mine_paid["delivered"], mine_paid["km"], mine_paid["total"]) == (1, "1.00", "1.60")
    assert (hers_paid["delivered"], hers_paid["km"], hers_paid["total"]) == (1, "5.00", "3.00")


def test_each_vehicle_types_plan_prices_its_orders(
    open_for_business,
    alice,
    api,
    make_courier,
    plans,
):
    courier, client = make_courier("Vanna Kim", vehicle="tuktuk")
    (by_tuktuk,) = live_run(api, alice, courier, 2.0, vehicle="tuktuk")
    (returned,) = live_run(api, alice, courier, 1.0, vehicle="tuktuk")
    deliver(client, by_tuktuk)
    bring_back(client, returned)

    data = client.get("/earnings").json()["data"]

    # 2.00 a drop, 0.50 a km over 3.00 km, 1.00 a return: the tuktuk plan, not the motorbike's
    assert data["pay"] == {"delivered": "2.00", "km": "1.50", "returned": "1.00"}
    assert data["total"] == "4.50"


def test_a_vehicle_type_without_a_plan_pays_nothing(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = live_run(api, alice, courier, 2.0)
    deliver(client, one)
    data = client.get("/earnings").json()["data"]
    assert (data["delivered"], data["km"], data["total"]) == (1, "2.00", "0.00")


def test_a_runs_km_count_once_on_the_day_of_its_first_paid_move(
    open_for_business,
    alice,
    api,
    dara,
    plans,
):
    courier, client = dara
    today, tomorrow = live_run(api, alice, courier, 1.5, 2.5)
    deliver(client, today)
    open_for_business.shift(timedelta(days=1))
    deliver(client, tomorrow)

    first = pay_by_courier(first=DAY, last=DAY)
    second = pay_by_courier(first=DAY + timedelta(days=1), last=DAY + timedelta(days=1))
    both = pay_by_courier(first=DAY, last=DAY + timedelta(days=1))

    assert [(p.delivered, p.km, p.total) for p in first] == [(1, Decimal("2.50"), Decimal("2.13"))]
    assert [(p.delivered, p.km, p.total) for p in second] == [(1, Decimal("0.00"), Decimal("1.25"))]
    assert [(p.delivered, p.km, p.total) for p in both] == [(2, Decimal("2.50"), Decimal("3.38"))]


@pytest.mark.parametrize("field", ["per_drop", "per_km", "per_return"])
def test_the_database_refuses_a_negative_amount(db, field):
    with pytest.raises(IntegrityError), transaction.atomic():
        PayPlan.objects.create(vehicle_id="van", **{field: Decimal("-0.01")})
    PayPlan.objects.create(vehicle_id="van", **{field: Decimal("0.00")})


def test_the_app_shows_the_days_earnings_and_links_them(open_for_business, alice, api, dara, plans):
    courier, client = dara
    (one,) = live_run(api, alice, courier, 2.0)
    deliver(client, one)
    app = Client()
    assert (
        app.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD}).status_code
        == 302
    )

    home = app.get("/courier/").content.decode()
    page = app.get("/courier/earnings")
    bad = app.get("/courier/earnings?date=someday")

    assert 'href="/courier/earnings"' in home
    assert page.status_code == 200
    text = page.content.decode()
    assert "Delivered · 1 drop" in text and "Runs · 2.00 km" in text
    assert "1.95 USD" in text  # 1.25 + 2.00 × 0.35
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.content.decode()
    assert Client().get("/courier/earnings").status_code == 302  # signed out: to the sign-in
