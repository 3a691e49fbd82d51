"""Operators make couriers in the console (docs/operator.md "Couriers"): a password set there
signs the courier in to the app; switching a courier off ends their tokens."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import check_password

from couriers.models import CourierToken, Driver
from couriers.services import issue_token
from tests.operators import staff_client

ADD = "/admin/couriers/driver/add/"


def form(**overrides) -> dict:
    return {
        "name": "Dara Sok",
        "phone": "+85512777000",
        "vehicle": "tuktuk",
        "active": "on",
        "new_password": "long enough pw",
        **overrides,
    }


def test_an_operator_makes_a_courier_who_can_sign_in(db, api):
    operator = staff_client("op", groups=["Operators"])
    answer = operator.post(ADD, form())
    assert answer.status_code == 302, answer.content
    courier = Driver.objects.get(phone="+85512777000")
    assert courier.vehicle == "tuktuk" and check_password("long enough pw", courier.password)
    assert "long enough pw" not in courier.password
    signed_in = api.post(
        "/courier/session", {"phone": "+85512777000", "password": "long enough pw"}, None
    )
    assert signed_in.status_code == 200


def test_a_phone_typed_with_spaces_is_stored_as_e164(db):
    operator = staff_client("op", groups=["Operators"])

    answer = operator.post(ADD, form(phone="+855 12 777-000"))

    assert answer.status_code == 302, answer.content
    assert Driver.objects.get(name="Dara Sok").phone == "+85512777000"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"phone": "012 777 000"}, "phone"),
        ({"vehicle": "rocket"}, "vehicle"),
        ({"new_password": "short"}, "new_password"),
    ],
)
def test_bad_courier_fields_are_refused_on_the_form(db, overrides, field):
    operator = staff_client("op", groups=["Operators"])
    answer = operator.post(ADD, form(**overrides))
    assert answer.status_code == 200
    assert field in answer.context["adminform"].form.errors
    assert not Driver.objects.filter(name="Dara Sok").exists()


def test_without_manage_courier_no_password_can_be_set(db):
    clerk = staff_client("clerk", perms=["couriers.add_driver", "couriers.view_driver"])
    assert clerk.post(ADD, form()).status_code == 302
    assert Driver.objects.get(phone="+85512777000").password == ""


def test_switching_a_courier_off_ends_their_tokens(db, api):
    operator = staff_client("op", groups=["Operators"])
    operator.post(ADD, form())
    courier = Driver.objects.get(phone="+85512777000")
    token = issue_token(courier=courier)
    assert api.get("/courier/route", token).status_code == 200
    change = f"/admin/couriers/driver/{courier.pk}/change/"
    answer = operator.post(change, form(active="", new_password=""))
    assert answer.status_code == 302, answer.content
    assert not CourierToken.objects.filter(courier=courier).exists()
    assert api.get("/courier/route", token).status_code == 401


def test_a_phone_another_courier_signs_in_with_is_refused_on_the_form(db):
    operator = staff_client("op", groups=["Operators"])
    assert operator.post(ADD, form()).status_code == 302

    answer = operator.post(ADD, form(name="Sok Dara", phone="+855 12 777 000"))

    assert answer.status_code == 200
    assert "Another courier signs in" in str(answer.context["adminform"].form.errors["phone"])
    assert Driver.objects.filter(phone="+85512777000").count() == 1
