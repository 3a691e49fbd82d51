"""Sign-out and credentials (docs/couriers.md "Signing out"): DELETE /courier/session revokes
the token it carries or signs the app's session out; a new password or a deactivation ends
every token and app session of that courier, and only theirs."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client

from couriers.models import CourierToken, Driver
from couriers.services import (
    CourierRefused,
    deactivate_courier,
    issue_token,
    set_courier_password,
)
from tests.couriers.conftest import PASSWORD
from tests.operators import staff_client

NEW_PASSWORD = "another long password"


def signed_in_app(courier, *, enforce_csrf: bool = False) -> Client:
    """A phone signed in to the courier app by its form."""
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.get("/courier/sign-in")  # the CSRF cookie
    answer = client.post(
        "/courier/sign-in",
        {
            "phone": courier.phone,
            "password": PASSWORD,
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    )
    assert answer.status_code == 302 and answer["Location"] == "/courier/"
    assert client.get("/courier/").status_code == 200
    return client


def sign_out(api, token: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return api.client.delete("/api/v1/courier/session", **headers)


def sent_to_sign_in(client: Client) -> bool:
    page = client.get("/courier/")
    return page.status_code == 302 and page["Location"] == "/courier/sign-in"


def test_delete_revokes_the_token_it_carries(dara, api):
    courier, phone = dara

    answer = sign_out(api, phone.token)

    assert answer.status_code == 200, answer.content
    assert answer.json() == {"statusCode": 200, "success": True, "data": {"revoked": True}}
    assert not CourierToken.objects.filter(courier=courier).exists()
    gone = phone.get("/route")
    assert gone.status_code == 401 and gone["WWW-Authenticate"] == "Bearer"
    assert gone.json()["error"]["code"] == "UNAUTHENTICATED"
    # Sent again: a revoked token, 401 like any other call with it.
    again = sign_out(api, phone.token)
    assert again.status_code == 401 and again.json()["error"]["code"] == "UNAUTHENTICATED"


def test_the_couriers_other_tokens_and_sessions_outlive_one_sign_out(dara, api):
    courier, phone = dara
    tablet = issue_token(courier=courier)
    app = signed_in_app(courier)

    assert sign_out(api, phone.token).status_code == 200

    assert api.get("/courier/route", tablet).status_code == 200
    assert app.get("/courier/").status_code == 200
    assert phone.get("/route").status_code == 401


@pytest.mark.parametrize("key", [None, "crr_" + "x" * 40, "svc_test_not_a_courier_token"])
def test_delete_without_a_courier_credential_is_401(db, api, key):
    answer = sign_out(api, key)

    assert answer.status_code == 401 and answer["WWW-Authenticate"] == "Bearer"
    assert answer.json()["error"]["code"] == "UNAUTHENTICATED"


def test_delete_with_the_apps_session_signs_it_out(dara, api):
    courier, phone = dara
    app = signed_in_app(courier, enforce_csrf=True)
    csrf = app.cookies["csrftoken"].value

    refused = app.delete("/api/v1/courier/session")  # a cookie without the CSRF token
    assert refused.status_code == 403 and app.get("/courier/").status_code == 200

    answer = app.delete("/api/v1/courier/session", HTTP_X_CSRFTOKEN=csrf)

    assert answer.status_code == 200 and answer.json()["data"] == {"revoked": True}
    assert sent_to_sign_in(app)
    assert app.get("/api/v1/courier/route").status_code == 401
    assert phone.get("/route").status_code == 200  # the courier's token is not the session


def test_the_apps_sign_out_button_posts_with_csrf_and_sends_to_sign_in(dara):
    courier, _ = dara
    app = signed_in_app(courier, enforce_csrf=True)
    home = app.get("/courier/").content.decode()
    assert 'action="/courier/sign-out"' in home and "csrfmiddlewaretoken" in home

    assert app.post("/courier/sign-out").status_code == 403  # no CSRF token: nothing happens
    assert app.get("/courier/").status_code == 200
    answer = app.post("/courier/sign-out", {"csrfmiddlewaretoken": app.cookies["csrftoken"].value})

    assert answer.status_code == 302 and answer["Location"] == "/courier/sign-in"
    assert sent_to_sign_in(app)
    page = app.get("/courier/sign-in")
    assert page.status_code == 200 and b'name="password"' in page.content


def test_a_new_password_ends_every_token_and_app_session(dara, sophea, api):
    courier, phone = dara
    tablet = issue_token(courier=courier)
    app = signed_in_app(courier)
    other, other_phone = sophea
    other_app = signed_in_app(other)

    set_courier_password(courier=courier, password=NEW_PASSWORD)

    assert phone.get("/route").status_code == 401
    assert api.get("/courier/route", tablet).status_code == 401
    assert not CourierToken.objects.filter(courier=courier).exists()
    assert sent_to_sign_in(app)
    # Another courier's credentials are untouched.
    assert other_phone.get("/route").status_code == 200
    assert other_app.get("/courier/").status_code == 200
    # The new password signs in again.
    new = api.post("/courier/session", {"phone": courier.phone, "password": NEW_PASSWORD}, None)
    assert new.status_code == 200
    assert api.get("/courier/route", new.json()["data"]["token"]).status_code == 200


def test_a_too_short_password_is_refused_and_ends_nothing(dara):
    courier, phone = dara
    with pytest.raises(CourierRefused):
        set_courier_password(courier=courier, password="short")
    assert phone.get("/route").status_code == 200


def test_the_password_set_back_does_not_bring_old_sign_ins_back(dara):
    courier, phone = dara
    app = signed_in_app(courier)

    set_courier_password(courier=courier, password=NEW_PASSWORD)
    set_courier_password(courier=courier, password=PASSWORD)

    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)


def test_a_password_written_by_any_other_path_still_ends_sign_ins(dara):
    """Sign-ins carry a stamp of the password hash: code that writes a password without the
    service still signs everyone out."""
    courier, phone = dara
    app = signed_in_app(courier)

    Driver.objects.filter(pk=courier.pk).update(password="pbkdf2_sha256$1$salt$other")

    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)


def test_deactivation_ends_every_token_and_app_session_for_good(dara, sophea, api):
    courier, phone = dara
    app = signed_in_app(courier)
    other, other_phone = sophea

    deactivate_courier(courier=courier)

    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)
    assert not CourierToken.objects.filter(courier=courier).exists()
    assert other_phone.get("/route").status_code == 200
    # Switched on again, the courier signs in again: nothing from before comes back.
    Driver.objects.filter(pk=courier.pk).update(active=True)
    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)


def change_form(courier, **overrides) -> dict:
    return {
        "name": courier.name,
        "phone": courier.phone,
        "vehicle": courier.vehicle,
        "active": "on",
        "new_password": "",
        **overrides,
    }


def test_a_password_changed_in_the_console_signs_the_courier_out(dara, sophea, api):
    courier, phone = dara
    app = signed_in_app(courier)
    _, other_phone = sophea
    operator = staff_client("op", groups=["Operators"])
    change = f"/admin/couriers/driver/{courier.pk}/change/"

    answer = operator.post(change, change_form(courier, new_password=NEW_PASSWORD))

    assert answer.status_code == 302, answer.content
    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)
    assert other_phone.get("/route").status_code == 200
    signed = api.post("/courier/session", {"phone": courier.phone, "password": NEW_PASSWORD}, None)
    assert signed.status_code == 200


def test_a_console_edit_without_a_password_keeps_the_courier_signed_in(dara):
    courier, phone = dara
    app = signed_in_app(courier)
    operator = staff_client("op", groups=["Operators"])

    answer = operator.post(
        f"/admin/couriers/driver/{courier.pk}/change/", change_form(courier, name="Dara S.")
    )

    assert answer.status_code == 302, answer.content
    assert Driver.objects.get(pk=courier.pk).name == "Dara S."
    assert phone.get("/route").status_code == 200
    assert app.get("/courier/").status_code == 200


def test_switching_a_courier_off_in_the_console_signs_them_out(dara):
    courier, phone = dara
    app = signed_in_app(courier)
    operator = staff_client("op", groups=["Operators"])
    change = f"/admin/couriers/driver/{courier.pk}/change/"

    assert operator.post(change, change_form(courier, active="")).status_code == 302
    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)
    # Switched on again: still signed out.
    assert operator.post(change, change_form(courier)).status_code == 302
    assert Driver.objects.get(pk=courier.pk).active
    assert phone.get("/route").status_code == 401
    assert sent_to_sign_in(app)


def test_tokens_issued_before_stamps_existed_keep_working(dara, api):
    """The migration stamps the tokens it finds with their courier's stamp of then."""
    courier, phone = dara
    CourierToken.objects.filter(courier=courier).update(stamp="")
    assert phone.get("/route").status_code == 401  # an unstamped token is no credential

    migration = importlib.import_module("couriers.migrations.0006_credential_stamp")
    migration.stamp_issued_tokens(apps, SimpleNamespace(connection=connection))

    assert phone.get("/route").status_code == 200
