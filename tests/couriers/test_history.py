"""A courier's history (docs/contract.md §24, docs/couriers.md "History"): GET
/courier/history?date= and the page /courier/history: the day's done stops of that courier
only, with their times in Phnom Penh, outcomes and cash, never a recipient's phone or
address; a bad date is a 400."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from orders.models import DropStatus
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop
from tests.fixtures import OPEN_HOURS

S = DropStatus


def by_id(drops):
    return sorted(drops, key=lambda d: d.client_order_id)


def a_day_of_work(api, alice, courier, client):
    """H-1 delivered with its cash, H-2 failed then returned, H-3 still on the way."""
    cash, back, open_ = by_id(
        assigned_drops(
            api, alice, courier,
            {**drop("H-1", name="Dara Chea", phone="+85512666001"), "cod": {"amount": "12.50"}},
            drop("H-2", name="Sokha Lim", phone="+85512666002"),
            drop("H-3", name="Vanna Kim", phone="+85512666003"),
        )
    )  # fmt: skip
    for one in (cash, back, open_):
        assert client.move(one.pk, to="PICKED_UP").status_code == 200
    assert client.move(cash.pk, to="DELIVERED", cod_collected=True).status_code == 200
    assert client.move(back.pk, to="FAILED", reason="REFUSED").status_code == 200
    assert client.move(back.pk, to="RETURNING").status_code == 200
    assert client.move(back.pk, to="RETURNED", received_by="Lina").status_code == 200
    return cash, back, open_


def test_history_lists_the_day_s_done_stops_with_times_outcomes_and_cash(
    open_for_business, alice, api, dara
):
    courier, client = dara
    cash, back, _ = a_day_of_work(api, alice, courier, client)

    answer = client.get("/history")

    assert answer.status_code == 200
    data = answer.json()["data"]
    assert (data["date"], data["time_zone"]) == ("2026-11-23", "Asia/Phnom_Penh")
    shown = [
        (s["drop_id"], s["outcome"], s["recipient_first_name"], s["cod_collected"])
        for s in data["stops"]
    ]
    assert shown == [
        (str(cash.pk), "delivered", "Dara", {"amount": "12.50", "currency": "USD"}),
        (str(back.pk), "failed", "Sokha", None),
        (str(back.pk), "returned", "Sokha", None),
    ]
    assert data["stops"][1]["failure_reason"] == "REFUSED"
    assert all(s["shop"] == "Alice Shop" and s["time"] == "10:00" for s in data["stops"])
    assert data["cod_collected"] == [{"currency": "USD", "amount": "12.50"}]
    assert b"+85512666" not in answer.content and b"address" not in answer.content


def test_history_is_the_courier_s_own_and_the_day_asked(
    open_for_business, alice, api, dara, sophea
):
    courier, client = dara
    _, stranger = sophea
    a_day_of_work(api, alice, courier, client)

    assert stranger.get("/history").json()["data"]["stops"] == []
    assert client.get("/history?date=2026-11-22").json()["data"]["stops"] == []
    assert len(client.get("/history?date=2026-11-23").json()["data"]["stops"]) == 3
    # 23:30 in Phnom Penh is still that day there, though it is 16:30 UTC.
    open_for_business.move_to(OPEN_HOURS + timedelta(hours=13, minutes=30))
    assert len(client.get("/history?date=2026-11-23").json()["data"]["stops"]) == 3
    assert client.get("/history").json()["data"]["date"] == "2026-11-23"


@pytest.mark.parametrize("day", ["23-11-2026", "2026-02-30", "today", "2026-1-5"])
def test_a_bad_date_is_a_400_in_the_envelope(open_for_business, dara, day):
    _, client = dara
    answer = client.get(f"/history?date={day}")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == "date"


def test_history_needs_a_courier(open_for_business, alice, api):
    assert api.get("/courier/history", alice.sandbox_key).status_code == 401
    assert api.get("/courier/history", None).status_code == 401


def test_the_history_page_shows_the_day_and_is_linked_from_home(
    open_for_business, alice, api, dara
):
    courier, client = dara
    a_day_of_work(api, alice, courier, client)
    phone = Client()
    phone.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})

    home = phone.get("/courier/")
    page = phone.get("/courier/history")
    bad = phone.get("/courier/history?date=nope")

    assert b'href="/courier/history"' in home.content
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    text = page.content.decode()
    assert "Delivered</strong> to Dara" in text and "Cash collected: 12.50 USD" in text
    assert "Not delivered</strong>: Sokha" in text and "Refused by the recipient" in text
    assert "Returned</strong> to Alice Shop" in text
    assert "Cash collected this day: 12.50 USD" in text
    assert "+85512666" not in text
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.content.decode()
