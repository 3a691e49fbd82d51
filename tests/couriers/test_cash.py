"""GET /courier/cash (docs/contract.md §23): the cash a courier holds, owes, and collected
today, drop by drop; today is the day in Asia/Phnom_Penh."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from billing.custody import hand_over
from billing.models import CourierCashEntry
from tests.billing.custody_helpers import delivered_by
from tests.couriers.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def usd(amount: str) -> list[dict]:
    return [{"currency": "USD", "amount": amount}]


def test_a_courier_with_no_cash_sees_zeros(open_for_business, dara):
    _, client = dara
    answer = client.get("/cash")

    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["in_hand"] == data["courier_owes"] == data["collected_today"] == usd("0.00")
    assert data["entries"] == [] and data["date"] == "2026-11-23"


def test_the_courier_sees_cash_in_hand_and_today_s_collections_drop_by_drop(
    open_for_business, api, alice, dara
):
    courier, client = dara
    first, second = delivered_by(api, alice, courier, "30.00", "12.50")
    hand_over(courier=courier, currency="USD", expected="42.50", counted="40.00", receipt="R-1",
              note="Short at the hub")  # fmt: skip
    [third] = delivered_by(api, alice, courier, "5.25")

    data = client.get("/cash").json()["data"]

    assert data["in_hand"] == usd("5.25")
    assert data["courier_owes"] == usd("2.50")
    assert data["collected_today"] == usd("47.75")
    kinds = [(e["kind"], e["amount"], e["client_order_id"]) for e in data["entries"]]
    assert kinds[0] == ("COLLECTED", "5.25", third.client_order_id)
    assert sorted(kinds[1:3]) == [("HANDED_OVER", "-40.00", None), ("SHORTAGE", "-2.50", None)]
    by_drop = {d.client_order_id: f"{d.cod_amount:.2f}" for d in (first, second)}
    assert sorted(kinds[3:]) == sorted(("COLLECTED", a, c) for c, a in by_drop.items())
    collected = data["entries"][0]
    assert collected["shop"] == "Alice Shop" and collected["recipient_first_name"]
    assert collected["drop_id"] == str(third.pk) and collected["time"] == "10:00"


def test_today_is_the_day_in_phnom_penh(open_for_business, api, alice, dara):
    courier, client = dara
    late, early = delivered_by(api, alice, courier, "3.00", "4.00")
    # 23:59 on Sunday and 00:00 on Monday, Phnom Penh time.
    entries = CourierCashEntry.objects
    entries.filter(drop=late).update(created_at=datetime(2026, 11, 22, 16, 59, tzinfo=UTC))
    entries.filter(drop=early).update(created_at=datetime(2026, 11, 22, 17, 0, tzinfo=UTC))

    data = client.get("/cash").json()["data"]

    assert data["collected_today"] == usd(f"{early.cod_amount:.2f}")
    assert data["in_hand"] == usd("7.00")  # held, whatever the day it was collected
    assert [e["drop_id"] for e in data["entries"]] == [str(early.pk)]


def test_only_couriers_see_cash(open_for_business, api, alice):
    assert api.get("/courier/cash", alice.live_key).status_code == 401
    assert api.get("/courier/cash", None).status_code == 401


def test_a_courier_sees_only_their_own_cash(open_for_business, api, alice, dara, sophea):
    delivered_by(api, alice, dara[0], "9.00")

    assert sophea[1].get("/cash").json()["data"]["in_hand"] == usd("0.00")


def test_the_app_shows_cash_in_hand_on_the_home_page_and_today_s_collections(
    open_for_business, api, alice, dara
):
    courier, _ = dara
    [one] = delivered_by(api, alice, courier, "12.50")
    app = Client()
    signed = app.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert signed.status_code == 302

    home = app.get("/courier/").content.decode()
    page = app.get("/courier/cash")

    assert 'href="/courier/cash"' in home and "12.50 USD" in home
    assert page.status_code == 200
    text = page.content.decode()
    assert "12.50 USD" in text and one.client_order_id in text and "Alice Shop" in text
    assert "300.00" in text  # the limit, said in words
    assert Client().get("/courier/cash").status_code == 302  # signed out: to the sign-in
