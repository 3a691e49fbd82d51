"""A courier's shift end (docs/couriers.md "Online, offline, and the phone's position"): set
with the status (the API's `shift_ends_at`, the app's "Until" time, the console's field),
echoed and shown, cleared by going offline; a time past, too far ahead or unreadable is
refused naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from couriers.models import Driver
from tests.couriers.conftest import PASSWORD
from tests.operators import staff_client

# The clock of open_for_business: Monday 2026-11-23 10:00 in Phnom Penh (03:00 UTC).
NOW = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


def shift_of(courier) -> datetime | None:
    return Driver.objects.get(pk=courier.pk).shift_ends_at


def refused_field(answer) -> list[dict]:
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    return error["details"]


def test_going_online_with_a_shift_end_sets_echoes_and_shows_it(open_for_business, dara):
    courier, client = dara
    answer = client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T18:00:00+07:00"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"] == {"online": True, "shift_ends_at": "2026-11-23T11:00:00.000Z"}
    assert shift_of(courier) == datetime(2026, 11, 23, 11, 0, tzinfo=UTC)
    assert client.get("/route").json()["data"]["shift_ends_at"] == "2026-11-23T11:00:00.000Z"


def test_the_same_status_twice_is_fine(open_for_business, dara):
    courier, client = dara
    body = {"online": True, "shift_ends_at": "2026-11-23T11:00:00Z"}
    first, again = client.post("/status", body), client.post("/status", body)
    assert first.status_code == again.status_code == 200
    assert first.json()["data"] == again.json()["data"]
    assert shift_of(courier) == datetime(2026, 11, 23, 11, 0, tzinfo=UTC)


def test_going_offline_clears_the_shift_end_and_online_without_one_has_none(
    open_for_business, dara
):
    courier, client = dara
    client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T11:00:00Z"})
    answer = client.post("/status", {"online": False})
    assert answer.json()["data"] == {"online": False, "shift_ends_at": None}
    assert shift_of(courier) is None
    client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T11:00:00Z"})
    answer = client.post("/status", {"online": True})
    assert answer.json()["data"] == {"online": True, "shift_ends_at": None}
    assert shift_of(courier) is None
    assert client.get("/route").json()["data"]["shift_ends_at"] is None


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ("2026-11-23T02:59:00Z", "Must be in the future."),  # a minute ago
        ("2026-11-24T03:00:01Z", "Must be at most 24 hours from now."),
        ("2026-11-23T18:00:00", "Must carry a time zone, e.g. 2026-01-31T09:30:00Z."),
        ("18:00", "Must be an ISO 8601 timestamp with a time zone."),
        (1790000000, "Must be an ISO 8601 timestamp with a time zone."),
    ],
)
def test_a_shift_end_past_too_far_naive_or_malformed_is_a_400_naming_it(
    open_for_business, dara, sent, message
):
    courier, client = dara
    answer = client.post("/status", {"online": True, "shift_ends_at": sent})
    assert refused_field(answer) == [{"field": "shift_ends_at", "message": message}]
    assert not Driver.objects.get(pk=courier.pk).online and shift_of(courier) is None


def test_a_shift_end_going_offline_is_a_400_and_changes_nothing(open_for_business, dara):
    courier, client = dara
    client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T11:00:00Z"})
    answer = client.post("/status", {"online": False, "shift_ends_at": "2026-11-23T12:00:00Z"})
    (detail,) = refused_field(answer)
    assert detail["field"] == "shift_ends_at"
    assert Driver.objects.get(pk=courier.pk).online
    assert shift_of(courier) == datetime(2026, 11, 23, 11, 0, tzinfo=UTC)


def test_a_shift_end_set_by_someone_else_changes_the_routes_etag(open_for_business, dara):
    courier, client = dara
    client.post("/status", {"online": True})
    tag = client.get("/route")["ETag"]
    Driver.objects.filter(pk=courier.pk).update(shift_ends_at=NOW + timedelta(hours=4))
    answer = client.api.get("/courier/route", client.token, {"If-None-Match": tag})
    assert answer.status_code == 200 and answer["ETag"] != tag
    assert answer.json()["data"]["shift_ends_at"] == "2026-11-23T07:00:00.000Z"


# --- The app: the go-online form's "Until" time (without JavaScript: the page's form) -------


@pytest.fixture
def app_of():
    def signed_in(courier) -> Client:
        client = Client()
        answer = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
        assert answer.status_code == 302
        return client

    return signed_in


def test_the_app_goes_online_until_a_time_and_the_route_screen_says_so(
    open_for_business, dara, app_of
):
    courier, _ = dara
    app = app_of(courier)
    assert b'type="time"' in app.get("/courier/").content
    answer = app.post("/courier/status", {"online": "true", "until": "18:30"})
    assert answer.status_code == 302
    # 18:30 in Phnom Penh, today
    assert shift_of(courier) == datetime(2026, 11, 23, 11, 30, tzinfo=UTC)
    assert b"On shift until" in (home := app.get("/courier/").content)
    assert b">18:30</time>" in home
    app.post("/courier/status", {"online": "false"})
    assert shift_of(courier) is None
    assert b"On shift until" not in app.get("/courier/").content


def test_the_app_goes_online_without_a_time_with_no_end(open_for_business, dara, app_of):
    courier, _ = dara
    app = app_of(courier)
    assert app.post("/courier/status", {"online": "true", "until": ""}).status_code == 302
    courier.refresh_from_db()
    assert courier.online and courier.shift_ends_at is None


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("09:59", b"That time has passed"),  # the clock reads 10:00 in Phnom Penh
        ("25:00", b"Type the time your shift ends as HH:MM"),
    ],
)
def test_the_app_refuses_a_past_or_unreadable_time_saying_so(
    open_for_business, dara, app_of, typed, said
):
    courier, _ = dara
    app = app_of(courier)
    answer = app.post("/courier/status", {"online": "true", "until": typed})
    assert answer.status_code == 400 and said in answer.content
    courier.refresh_from_db()
    assert not courier.online and courier.shift_ends_at is None


def test_an_online_courier_changes_or_clears_the_shift_end_in_the_app(
    open_for_business, dara, app_of
):
    courier, _ = dara
    app = app_of(courier)
    app.post("/courier/status", {"online": "true", "until": "18:30"})
    home = app.get("/courier/").content
    assert b'name="until" value="18:30"' in home  # the change form holds the end as set
    assert app.post("/courier/status", {"online": "true", "until": "20:00"}).status_code == 302
    courier.refresh_from_db()
    assert courier.online and courier.shift_ends_at == datetime(2026, 11, 23, 13, 0, tzinfo=UTC)
    assert b">20:00</time>" in app.get("/courier/").content
    answer = app.post("/courier/status", {"online": "true", "until": "09:00"})
    assert answer.status_code == 400 and b"That time has passed" in answer.content
    assert shift_of(courier) == datetime(2026, 11, 23, 13, 0, tzinfo=UTC)  # kept
    app.post("/courier/status", {"online": "true", "until": ""})
    courier.refresh_from_db()
    assert courier.online and courier.shift_ends_at is None
    assert b"On shift until" not in app.get("/courier/").content


def test_the_change_form_shows_only_while_online(open_for_business, dara, app_of):
    courier, _ = dara
    app = app_of(courier)
    assert b"data-shift-form" not in app.get("/courier/").content
    app.post("/courier/status", {"online": "true"})
    assert b"data-shift-form" in app.get("/courier/").content


def test_a_shift_that_ended_is_said_so(open_for_business, dara, app_of):
    courier, client = dara
    client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T03:30:00Z"})
    open_for_business.shift(timedelta(hours=1))
    assert b"Your shift ended at" in app_of(courier).get("/courier/").content


# --- The console: operators see and set an online courier's shift end -----------------------


def change_form(courier, **overrides) -> dict:
    return {
        "name": courier.name,
        "phone": courier.phone,
        "vehicle": courier.vehicle,
        "active": "on",
        "new_password": "",
        "shift_ends_at_0": "",
        "shift_ends_at_1": "",
        **overrides,
    }


def test_the_console_sets_an_online_couriers_shift_end(open_for_business, dara):
    courier, client = dara
    client.post("/status", {"online": True})
    operator = staff_client("op", groups=["Operators"])
    change = f"/admin/couriers/driver/{courier.pk}/change/"
    assert b"shift_ends_at" in operator.get(change).content

    ends = {"shift_ends_at_0": "2026-11-23", "shift_ends_at_1": "17:00:00"}
    answer = operator.post(change, change_form(courier, **ends))

    assert answer.status_code == 302, answer.content
    assert shift_of(courier) == datetime(2026, 11, 23, 10, 0, tzinfo=UTC)  # 17:00 local
    assert client.get("/route").json()["data"]["shift_ends_at"] == "2026-11-23T10:00:00.000Z"
    assert Driver.objects.get(pk=courier.pk).online


@pytest.mark.parametrize(
    ("online", "ends", "message"),
    [
        (True, ("2026-11-23", "09:00:00"), b"Must be in the future."),
        (True, ("2026-11-25", "09:00:00"), b"Must be at most 24 hours from now."),
        (False, ("2026-11-23", "17:00:00"), b"The courier is offline"),
    ],
)
def test_the_console_refuses_a_shift_end_it_cannot_set(
    open_for_business, dara, online, ends, message
):
    courier, client = dara
    client.post("/status", {"online": online})
    operator = staff_client("op", groups=["Operators"])
    change = f"/admin/couriers/driver/{courier.pk}/change/"
    day, time = ends
    answer = operator.post(change, change_form(courier, shift_ends_at_0=day, shift_ends_at_1=time))
    assert answer.status_code == 200 and message in answer.content
    assert "shift_ends_at" in answer.context["adminform"].form.errors
    assert shift_of(courier) is None


def test_a_console_edit_keeps_a_shift_end_that_has_passed(open_for_business, dara):
    courier, client = dara
    client.post("/status", {"online": True, "shift_ends_at": "2026-11-23T03:30:00.250Z"})
    open_for_business.shift(timedelta(hours=1))
    operator = staff_client("op", groups=["Operators"])
    change = f"/admin/couriers/driver/{courier.pk}/change/"
    shown = timezone.localtime(shift_of(courier))  # as the form shows it: to the second
    kept = {"shift_ends_at_0": f"{shown:%Y-%m-%d}", "shift_ends_at_1": f"{shown:%H:%M:%S}"}

    answer = operator.post(change, change_form(courier, name="Dara S.", **kept))

    assert answer.status_code == 302, answer.content
    assert Driver.objects.get(pk=courier.pk).name == "Dara S."
    assert shift_of(courier) == datetime(2026, 11, 23, 3, 30, 0, 250000, tzinfo=UTC)
