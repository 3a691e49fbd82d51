"""The courier API (docs/contract.md §20): its own tokens, a courier's own drops only, moves
through the one state machine that a retrying phone can send twice, and validation."""

from __future__ import annotations

import json
import uuid
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from couriers.services import deactivate_courier
from orders.models import DeliveryEvent, Drop, DropStatus
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop

S = DropStatus


def code_of(response) -> str:
    return response.json()["error"]["code"]


# --- Couriers and their tokens -----------------------------------------------------------------


def test_provision_courier_prints_its_id_and_the_courier_signs_in(db, api):
    out = StringIO()
    call_command(
        "provision_courier", "--name", "Vanna Kim", "--phone", "+85512999000",
        "--vehicle", "tuktuk", "--password", PASSWORD, "--json", stdout=out,
    )  # fmt: skip
    courier_id = json.loads(out.getvalue())["courier_id"]
    answer = api.post("/courier/session", {"phone": "+85512999000", "password": PASSWORD}, None)
    assert answer.status_code == 200
    data = answer.json()["data"]
    assert data["courier_id"] == courier_id and data["token"].startswith("crr_")
    assert len(data["token"]) == 44


@pytest.mark.parametrize(
    ("phone", "password"), [("+85512999000", "wrong password"), ("+85512999111", PASSWORD)]
)
def test_a_wrong_password_or_phone_is_a_401_in_the_envelope(db, api, phone, password):
    call_command(
        "provision_courier", "--name", "Vanna", "--phone", "+85512999000",
        "--password", PASSWORD, stdout=StringIO(),
    )  # fmt: skip
    answer = api.post("/courier/session", {"phone": phone, "password": password}, None)
    assert answer.status_code == 401 and code_of(answer) == "UNAUTHENTICATED"


# As couriers type their phone: the app's form and the API read each one the same way.
TYPED = ["+855 12 999 000", "+855-12-999-000", "+855 (12) 999.000", " +85512999000 "]


@pytest.mark.parametrize("typed", TYPED)
def test_the_api_and_the_app_sign_in_a_phone_typed_with_spaces_alike(db, api, typed):
    call_command(
        "provision_courier", "--name", "Vanna", "--phone", "+85512999000",
        "--password", PASSWORD, stdout=StringIO(),
    )  # fmt: skip

    answer = api.post("/courier/session", {"phone": typed, "password": PASSWORD}, None)
    form = Client().post("/courier/sign-in", {"phone": typed, "password": PASSWORD})

    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["token"].startswith("crr_")
    assert form.status_code == 302 and form["Location"] == "/courier/"


def test_one_phone_spaced_many_ways_is_one_count_of_failures(db, api):
    """Spacing a phone differently is no way round its throttle."""
    call_command(
        "provision_courier", "--name", "Vanna", "--phone", "+85512999000",
        "--password", PASSWORD, stdout=StringIO(),
    )  # fmt: skip
    for attempt in range(10):
        typed = TYPED[attempt % len(TYPED)]
        api.post("/courier/session", {"phone": typed, "password": "wrong password"}, None)

    answer = api.post("/courier/session", {"phone": "+85512999000", "password": PASSWORD}, None)

    assert answer.status_code == 429 and code_of(answer) == "RATE_LIMITED"


def test_failed_sign_ins_are_throttled_like_the_dashboards(db, api, settings):
    call_command(
        "provision_courier", "--name", "Vanna", "--phone", "+85512999000",
        "--password", PASSWORD, stdout=StringIO(),
    )  # fmt: skip
    codes = [
        code_of(api.post("/courier/session", {"phone": "+85512999000", "password": "x"}, None))
        for _ in range(12)
    ]
    assert codes[0] == "UNAUTHENTICATED" and codes[-1] == "RATE_LIMITED"
    # Locked out, even the right password is refused without being checked.
    answer = api.post("/courier/session", {"phone": "+85512999000", "password": PASSWORD}, None)
    assert answer.status_code == 429


def test_business_keys_get_401_here_and_courier_tokens_401_everywhere_else(
    open_for_business, alice, api, dara
):
    _, client = dara
    assert api.get("/courier/route", alice.sandbox_key).status_code == 401
    assert api.get("/courier/route", None).status_code == 401
    assert client.get("/route").status_code == 200
    assert api.get("/account", client.token).status_code == 401
    assert api.track(["X"], client.token).status_code == 401


def test_a_deactivated_courier_s_tokens_stop_working(open_for_business, dara):
    courier, client = dara
    assert client.get("/route").status_code == 200
    deactivate_courier(courier=courier)
    answer = client.get("/route")
    assert answer.status_code == 401 and code_of(answer) == "UNAUTHENTICATED"


def test_a_courier_needs_a_valid_phone_vehicle_and_password(db):
    from couriers.services import CourierRefused, provision_courier

    for phone, vehicle, password in [
        ("012345", "motorbike", PASSWORD),
        ("+85512999000", "rocket", PASSWORD),
        ("+85512999000", "motorbike", "short"),
    ]:
        with pytest.raises(CourierRefused):
            provision_courier(name="X", phone=phone, vehicle=vehicle, password=password)


# --- Status and route -------------------------------------------------------------------------


def test_going_online_and_offline(open_for_business, dara):
    courier, client = dara
    online = client.post("/status", {"online": True}).json()["data"]
    assert online == {"online": True, "shift_ends_at": None}
    courier.refresh_from_db()
    assert courier.online
    offline = client.post("/status", {"online": False}).json()["data"]
    assert offline == {"online": False, "shift_ends_at": None}
    answer = client.post("/status", {"online": "yes"})
    assert answer.status_code == 400 and answer.json()["error"]["details"][0]["field"] == "online"


def drop_stops(route: dict) -> list[dict]:
    """The route's drops, in the order to ride (without its pickups)."""
    return [stop for stop in route["stops"] if stop["kind"] == "drop"]


def test_the_route_lists_the_couriers_order_in_stop_order(open_for_business, alice, api, dara):
    courier, client = dara
    assert client.get("/route").json()["data"]["route"] is None
    first, second = assigned_drops(
        api, alice, courier,
        {**drop("R-1", name="Sreyneang Phan"), "notes": "Blue gate"},
        {**drop("R-2"), "cod": {"amount": "12.50"}},
    )  # fmt: skip
    route = client.get("/route").json()["data"]["route"]
    assert route["run_id"] == str(first.order_id)  # an order given before runs: its own run
    pickup, *stops = route["stops"]
    assert (pickup["kind"], pickup["pass_order_id"], pickup["drop_id"]) == (
        "pickup", str(first.order_id), None
    )  # fmt: skip
    assert pickup["name"] == "Shop" and pickup["status"] == "ASSIGNED" and not pickup["done"]
    assert pickup["address"] == "" and pickup["verification"] is None
    assert [s["drop_id"] for s in stops] == [str(first.pk), str(second.pk)]
    assert [s["stop_number"] for s in route["stops"]] == [1, 2, 3]
    assert {s["pass_order_id"] for s in stops} == {str(first.order_id)}
    by_id = {s["client_order_id"]: s for s in stops}
    assert by_id["R-1"]["recipient_first_name"] == by_id["R-1"]["name"] == "Sreyneang"
    assert by_id["R-1"]["notes"] == "Blue gate" and by_id["R-1"]["status"] == "ASSIGNED"
    assert by_id["R-2"]["cod"] == {"amount": "12.50", "collected": False}
    assert by_id["R-1"]["cod"] is None and by_id["R-1"]["parcel"]["size"] == "S"
    assert by_id["R-1"]["verification"] == {"pin": False, "scan": False, "signature": False}


def test_a_parcel_s_weight_is_the_same_number_on_the_route_and_in_tracking(
    open_for_business, alice, api, dara
):
    courier, client = dara
    assigned_drops(
        api, alice, courier,
        {**drop("W-1"), "parcel": {"size": "M", "weight_kg": 12.5}},
        drop("W-2"),  # says nothing of its parcel: the default 1 kg
    )  # fmt: skip

    stops = drop_stops(client.get("/route").json()["data"]["route"])
    tracked = api.post("/orders/tracking", {"identifiers": ["W-1", "W-2"]}, alice.sandbox_key)

    on_route = {s["client_order_id"]: s["parcel"]["weight_kg"] for s in stops}
    in_tracking = {
        e["client_order_id"]: e["parcel"]["weight_kg"] for e in tracked.json()["data"]["orders"]
    }
    assert on_route == in_tracking == {"W-1": 12.5, "W-2": 1.0}
    assert all(type(weight) is float for weight in [*on_route.values(), *in_tracking.values()])
    schemas = Client().get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    assert schemas["CourierParcel"]["properties"]["weight_kg"]["type"] == "number"
    assert schemas["TrackedParcel"]["properties"]["weight_kg"]["type"] == "number"


def test_a_courier_cannot_see_or_move_anothers_drops(open_for_business, alice, api, dara, sophea):
    courier, _ = dara
    _, other = sophea
    (mine,) = assigned_drops(api, alice, courier, drop("O-1"))
    assert other.get("/route").json()["data"]["route"] is None
    answer = other.move(mine.pk, to="PICKED_UP")
    assert answer.status_code == 404 and code_of(answer) == "NOT_FOUND"
    assert other.move(uuid.uuid4(), to="PICKED_UP").status_code == 404
    assert other.move("not-a-uuid", to="PICKED_UP").status_code == 404
    mine.refresh_from_db()
    assert mine.status == S.ASSIGNED


# --- Moves ------------------------------------------------------------------------------------


def test_moves_through_the_state_machine_with_the_courier_as_actor(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("M-1"))
    answer = client.move(one.pk, to="PICKED_UP")
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["stop"]["status"] == "PICKED_UP"
    answer = client.move(one.pk, to="DELIVERED", received_by="Sok")
    assert answer.json()["data"]["stop"]["status"] == "DELIVERED"
    one.refresh_from_db()
    assert one.status == S.DELIVERED and one.pod_received_by == "Sok"
    actors = set(DeliveryEvent.objects.filter(drop=one, status__in=[S.PICKED_UP, S.DELIVERED])
                 .values_list("actor", flat=True))  # fmt: skip
    assert actors == {f"courier:{courier.pk}"}


def test_the_same_move_sent_twice_answers_the_stop_and_happens_once(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("T-1"))
    first = client.move(one.pk, to="PICKED_UP")
    again = client.move(one.pk, to="PICKED_UP")
    assert first.status_code == again.status_code == 200
    assert first.json()["data"] == again.json()["data"]
    assert DeliveryEvent.objects.filter(drop=one, status=S.PICKED_UP).count() == 1


def test_an_illegal_move_is_a_409_and_changes_nothing(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("I-1"))
    answer = client.move(one.pk, to="RETURNED")
    assert answer.status_code == 409 and code_of(answer) == "ILLEGAL_TRANSITION"
    one.refresh_from_db()
    assert one.status == S.ASSIGNED


def test_a_cod_drop_is_delivered_only_with_the_cash_collected(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, {**drop("D-1"), "cod": {"amount": "9.00"}})
    client.move(one.pk, to="PICKED_UP")
    answer = client.move(one.pk, to="DELIVERED")
    assert answer.status_code == 422 and code_of(answer) == "COD_NOT_COLLECTED"
    answer = client.move(one.pk, to="DELIVERED", cod_collected=True)
    assert answer.status_code == 200
    assert answer.json()["data"]["stop"]["cod"] == {"amount": "9.00", "collected": True}


def test_a_pin_drop_needs_its_pin(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(
        api, alice, courier, {**drop("P-1"), "dropoff_verification": {"pin": True}}
    )
    (stop,) = drop_stops(client.get("/route").json()["data"]["route"])
    assert stop["needs_pin"] is True and stop["verification"]["pin"] is True
    client.move(one.pk, to="PICKED_UP")
    one.refresh_from_db()
    wrong = "0000" if one.dropoff_pin != "0000" else "1111"
    for pin in (None, wrong):
        answer = client.move(one.pk, to="DELIVERED", **({"pin": pin} if pin else {}))
        assert answer.status_code == 422 and code_of(answer) == "WRONG_PIN"
    answer = client.move(one.pk, to="DELIVERED", pin=one.dropoff_pin)
    assert answer.status_code == 200


def test_failed_with_a_reason_then_returned(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("F-1"))
    client.move(one.pk, to="PICKED_UP")
    answer = client.move(one.pk, to="FAILED", reason="RECIPIENT_UNAVAILABLE")
    assert answer.json()["data"]["stop"]["status"] == "FAILED"
    one.refresh_from_db()
    assert one.failure_reason == "RECIPIENT_UNAVAILABLE"
    # Failed, to be returned: still on the courier's route, so the app can take it back.
    pickup, stop = client.get("/route").json()["data"]["route"]["stops"]
    assert stop["status"] == "FAILED" and pickup["done"]  # nothing left to take at the shop
    assert client.move(one.pk, to="RETURNING").status_code == 200
    assert client.move(one.pk, to="RETURNED", received_by="Shop clerk").status_code == 200
    assert Drop.objects.get(pk=one.pk).status == S.RETURNED
    assert client.get("/route").json()["data"]["route"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to": "FLYING"}, "to"),
        ({"to": "DELIVERED", "pin": 1234}, "pin"),
        ({"to": "FAILED", "reason": "WRONG_PIN"}, "reason"),
        ({"to": "DELIVERED", "cod_collected": "maybe"}, "cod_collected"),
        ({"to": "DELIVERED", "cod_collected": []}, "cod_collected"),
        ({"to": "DELIVERED", "extra": 1}, "extra"),
    ],
)
def test_a_bad_move_body_is_a_400_naming_its_field(
    open_for_business, alice, api, dara, body, field
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("B-1"))
    answer = client.post(f"/drops/{one.pk}/move", body)
    assert answer.status_code == 400 and code_of(answer) == "VALIDATION_ERROR"
    assert field in [d["field"] for d in answer.json()["error"]["details"]]


def test_a_photo_sent_with_a_refused_move_is_not_kept(open_for_business, alice, api, dara):
    from django.core.files.storage import default_storage
    from django.core.files.uploadedfile import SimpleUploadedFile

    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, {**drop("PH-1"), "cod": {"amount": "5.00"}})
    client.move(one.pk, to="PICKED_UP")
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64

    def send(**fields):
        upload = SimpleUploadedFile("door.png", png, content_type="image/png")
        return api.client.post(
            f"/api/v1/courier/drops/{one.pk}/move",
            {"to": "DELIVERED", "photo": upload, **fields},
            HTTP_AUTHORIZATION=f"Bearer {client.token}",
        )

    def stored() -> list[str]:
        found: list[str] = []
        folders = ["proof"]
        while folders:
            folder = folders.pop()
            if not default_storage.exists(folder):
                continue
            dirs, files = default_storage.listdir(folder)
            found += [f"{folder}/{name}" for name in files]
            folders += [f"{folder}/{name}" for name in dirs]
        return found

    before = stored()
    refused = send()
    assert refused.status_code == 422, refused.content
    assert code_of(refused) == "COD_NOT_COLLECTED"
    assert stored() == before
    answer = send(cod_collected="true")
    assert answer.status_code == 200, answer.content
    one.refresh_from_db()
    assert one.pod_photo and len(stored()) == len(before) + 1
