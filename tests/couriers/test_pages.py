"""The courier app's pages, /courier/ (docs/couriers.md): sign-in behind the dashboard's
throttle, the route a courier sees (their own drops only), moves by plain form posts (the app
without JavaScript), and a switched-off courier signed out."""

from __future__ import annotations

import re
import uuid

import pytest
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from couriers.services import deactivate_courier
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop

S = DropStatus
PNG = (settings.BASE_DIR / "tracking" / "assets" / "sandbox-proof.png").read_bytes()


@pytest.fixture
def phone_of():
    def signed_in(courier) -> Client:
        client = Client()
        answer = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
        assert answer.status_code == 302 and answer["Location"] == "/courier/"
        return client

    return signed_in


def move(client: Client, drop_id, **fields):
    return client.post(f"/courier/drops/{drop_id}/move", fields)


def test_the_sign_in_page_then_the_home_page(dara, phone_of):
    courier, _ = dara
    assert Client().get("/courier/")["Location"] == "/courier/sign-in"
    page = Client().get("/courier/sign-in")
    assert page.status_code == 200
    assert b'name="phone"' in page.content and b'name="password"' in page.content
    assert "default-src 'none'" in page["Content-Security-Policy"]
    home = phone_of(courier).get("/courier/")
    assert home.status_code == 200 and b"Sign out" in home.content
    assert b"No job offered" in home.content and b"data-offer-area" in home.content
    assert b"No route yet" in home.content


def test_a_phone_typed_with_spaces_signs_in(dara):
    courier, _ = dara
    spaced = courier.phone[:4] + " " + courier.phone[4:7] + "-" + courier.phone[7:]
    answer = Client().post("/courier/sign-in", {"phone": spaced, "password": PASSWORD})
    assert answer.status_code == 302


def test_a_wrong_password_is_refused_and_failures_are_throttled(dara):
    courier, _ = dara
    client = Client()
    wrong = client.post("/courier/sign-in", {"phone": courier.phone, "password": "nope nope"})
    assert wrong.status_code == 200 and b"The phone or the password is wrong." in wrong.content
    for _ in range(9):
        client.post("/courier/sign-in", {"phone": courier.phone, "password": "nope nope"})
    # Locked out: even the right password is refused, and nothing signs in.
    locked = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert locked.status_code == 429 and b"Too many failed sign-ins" in locked.content
    assert b"Sign out" not in client.get("/courier/").content


def test_the_lockout_is_shared_with_the_api(dara, api):
    courier, _ = dara
    for _ in range(10):
        api.post("/courier/session", {"phone": courier.phone, "password": "x"}, None)
    locked = Client().post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert locked.status_code == 429


def test_sign_out_ends_the_courier_session(dara, phone_of):
    courier, _ = dara
    client = phone_of(courier)
    answer = client.post("/courier/sign-out")
    assert answer.status_code == 302 and answer["Location"] == "/courier/sign-in"
    assert client.get("/courier/")["Location"] == "/courier/sign-in"


def test_a_switched_off_courier_is_signed_out(dara, phone_of):
    courier, _ = dara
    client = phone_of(courier)
    deactivate_courier(courier=courier)
    page = client.get("/courier/")
    assert page.status_code == 302 and page["Location"] == "/courier/sign-in"
    # And cannot sign in again.
    again = Client().post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert again.status_code == 200 and b"wrong" in again.content


def test_the_route_shows_each_stop_with_its_links_and_moves(
    open_for_business, alice, api, dara, phone_of
):
    courier, _ = dara
    drops = assigned_drops(
        api, alice, courier,
        {**drop("R-1", name="Sreyneang Phan"), "notes": "Blue <gate>"},
        {**drop("R-2", name="Kosal Meas"), "cod": {"amount": "12.50"}},
    )  # fmt: skip
    first = next(d for d in drops if d.client_order_id == "R-1")
    html = phone_of(courier).get("/courier/").content.decode()
    # Numbered by its place in the run: the order's pickup is stop 1.
    assert f"Stop {drops.index(first) + 2} · Sreyneang" in html and "Phan" not in html
    assert html.index(f'id="pickup-{first.order_id}"') < html.index(f"stop-{drops[0].pk}")
    assert "Blue &lt;gate&gt;" in html  # escaped
    assert f"tel:{first.recipient_phone}" in html
    lat_long = f"{first.lat},{first.long}"
    assert f"geo:{lat_long}" in html
    assert f"destination={lat_long.replace(',', '%2C')}" in html
    assert re.search(r'class="cod">Collect <strong>12\.50 USD</strong>', html)
    # In stop order: the order's drops by id until dispatch sequences them (docs/contract.md §20).
    assert html.index(f"stop-{drops[0].pk}") < html.index(f"stop-{drops[1].pk}")
    assert html.count('value="PICKED_UP"') == 2 and 'value="DELIVERED"' not in html
    assert 'capture="environment"' not in html  # no delivery form before pickup


def test_addresses_read_as_text_on_the_route_and_in_its_json(
    open_for_business, alice, api, dara, phone_of
):
    """Its complete_address, else its parts joined: never a Python dict on the page nor in
    the API's route (docs/contract.md §24)."""
    courier, app = dara
    first, second = assigned_drops(api, alice, courier)
    Drop.objects.filter(pk=first.pk).update(address={"complete_address": "St 271, Toul Kork"})
    parts = {"city": "Phnom Penh", "street": "St 310", "sangkat": "Boeng Keng Kang 1"}
    Drop.objects.filter(pk=second.pk).update(address=parts)
    Order.objects.filter(pk=first.order_id).update(
        pickup_address={"complete_address": "Central Market, Phnom Penh"}
    )

    html = phone_of(courier).get("/courier/").content.decode()
    route = app.get("/route").json()["data"]["route"]

    assert '<p class="address">Central Market, Phnom Penh</p>' in html  # the pickup
    assert '<p class="address">St 271, Toul Kork</p>' in html
    assert '<p class="address">St 310, Boeng Keng Kang 1, Phnom Penh</p>' in html
    assert "complete_address" not in html and "{&#x27;" not in html
    stops = {stop["drop_id"]: stop for stop in route["stops"]}
    assert stops[None]["address"] == "Central Market, Phnom Penh"  # the pickup
    assert stops[str(second.pk)]["address"] == "St 310, Boeng Keng Kang 1, Phnom Penh"
    assert stops[str(first.pk)]["address"] == "St 271, Toul Kork"


def test_moves_by_form_post_pick_up_and_deliver_with_pin_and_cash(
    open_for_business, alice, api, dara, phone_of
):
    courier, _ = dara
    (one,) = assigned_drops(
        api, alice, courier,
        {**drop("P-1"), "cod": {"amount": "9.00"}, "dropoff_verification": {"pin": True}},
    )  # fmt: skip
    client = phone_of(courier)
    assert move(client, one.pk, to="PICKED_UP").status_code == 302
    html = client.get("/courier/").content.decode()
    assert 'name="pin"' in html and 'capture="environment"' in html
    assert 'name="cod_collected"' in html and 'name="reason"' in html
    refused = move(client, one.pk, to="DELIVERED", pin=one.dropoff_pin, cod_collected="")
    assert refused.status_code == 422 and "Collect the cash first" in refused.content.decode()
    wrong = "0000" if one.dropoff_pin != "0000" else "1111"
    refused = move(client, one.pk, to="DELIVERED", pin=wrong, cod_collected="true")
    assert refused.status_code == 422 and b"Wrong PIN (1 wrong so far)." in refused.content
    made = move(
        client, one.pk, to="DELIVERED", pin=one.dropoff_pin, cod_collected="true",
        received_by="Sok",
    )  # fmt: skip
    assert made.status_code == 302 and made["Location"] == f"/courier/#stop-{one.pk}"
    one.refresh_from_db()
    assert one.status == S.DELIVERED and one.cod_collected_at is not None
    assert DeliveryEvent.objects.filter(drop_id=one.pk, status=S.DELIVERED).count() == 1


def test_an_illegal_move_and_a_bad_field_are_shown_at_the_stop(
    open_for_business, alice, api, dara, phone_of
):
    courier, _ = dara
    (one,) = assigned_drops(api, alice, courier, drop("I-1"))
    client = phone_of(courier)
    illegal = move(client, one.pk, to="RETURNED")
    assert illegal.status_code == 409
    assert b"This stop is assigned, so it cannot be marked returned." in illegal.content
    bad = move(client, one.pk, to="DELIVERED", pin="12")
    assert bad.status_code == 400 and b"Pin: A PIN is four digits" in bad.content
    assert Drop.objects.get(pk=one.pk).status == S.ASSIGNED


def test_failed_with_a_reason_by_form_post(open_for_business, alice, api, dara, phone_of):
    courier, _ = dara
    # Two drops: the route stays while the other is still to carry (a failed drop alone
    # leaves the route: orders.statuses.STILL_TO_CARRY).
    one, _ = assigned_drops(api, alice, courier, drop("F-1"), drop("F-2"))
    client = phone_of(courier)
    move(client, one.pk, to="PICKED_UP")
    assert move(client, one.pk, to="FAILED", reason="ADDRESS_NOT_FOUND").status_code == 302
    one.refresh_from_db()
    assert one.status == S.FAILED and one.failure_reason == "ADDRESS_NOT_FOUND"
    html = client.get("/courier/").content.decode()
    assert 'value="RETURNING"' in html  # the drop returns (the default undeliverable action)


def test_another_couriers_drop_is_neither_shown_nor_movable(
    open_for_business, alice, api, dara, sophea, phone_of
):
    courier, _ = dara
    other, _ = sophea
    (mine,) = assigned_drops(api, alice, courier, drop("O-1"))
    client = phone_of(other)
    assert str(mine.pk) not in client.get("/courier/").content.decode()
    assert move(client, mine.pk, to="PICKED_UP").status_code == 404
    assert move(client, uuid.uuid4(), to="PICKED_UP").status_code == 404
    assert client.post("/courier/drops/not-a-uuid/move", {"to": "PICKED_UP"}).status_code == 404
    assert Drop.objects.get(pk=mine.pk).status == S.ASSIGNED


def test_signed_out_posts_change_nothing(open_for_business, alice, api, dara):
    courier, _ = dara
    (mine,) = assigned_drops(api, alice, courier, drop("X-1"))
    stranger = Client()
    answer = move(stranger, mine.pk, to="PICKED_UP")
    assert answer.status_code == 302 and answer["Location"] == "/courier/"
    stranger.post("/courier/status", {"online": "true"})
    courier.refresh_from_db()
    assert Drop.objects.get(pk=mine.pk).status == S.ASSIGNED and courier.online is False


def test_going_online_by_form_post(dara, phone_of):
    courier, _ = dara
    client = phone_of(courier)
    assert client.post("/courier/status", {"online": "true"}).status_code == 302
    courier.refresh_from_db()
    assert courier.online is True
    assert b"Go offline" in client.get("/courier/").content


def test_forms_carry_the_csrf_token(dara):
    courier, _ = dara
    client = Client(enforce_csrf_checks=True)
    answer = client.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    assert answer.status_code == 403


def test_a_failed_drop_to_dispose_of_offers_no_return(
    open_for_business, alice, api, dara, phone_of
):
    courier, _ = dara
    drops = assigned_drops(
        api, alice, courier,
        {**drop("D-1"), "undeliverable_action": "dispose"}, drop("D-2"), drop("D-3"),
    )  # fmt: skip
    by_id = {d.client_order_id: d for d in drops}
    client = phone_of(courier)
    for name in ("D-1", "D-2"):
        move(client, by_id[name].pk, to="PICKED_UP")
        move(client, by_id[name].pk, to="FAILED", reason="REFUSED")
    html = client.get("/courier/").content.decode()
    stops = {part[:36]: part for part in html.split('id="stop-')[1:]}  # each stop's html
    assert 'value="RETURNING"' in stops[str(by_id["D-2"].pk)]
    assert 'value="RETURNING"' not in stops[str(by_id["D-1"].pk)]


def test_a_photo_posted_with_the_form_is_kept_and_a_non_image_refused(
    open_for_business, alice, api, dara, phone_of
):
    courier, _ = dara
    (one,) = assigned_drops(api, alice, courier, drop("PH-1"))
    client = phone_of(courier)
    move(client, one.pk, to="PICKED_UP")
    text = SimpleUploadedFile("door.png", b"<svg onload=alert(1)>", content_type="image/png")
    refused = move(client, one.pk, to="DELIVERED", photo=text)
    assert refused.status_code == 400
    assert b"The photo must be a PNG, JPEG or WebP image." in refused.content
    assert Drop.objects.get(pk=one.pk).status == S.PICKED_UP
    # A photo with a move refused (here: no PIN) is not kept.
    Drop.objects.filter(pk=one.pk).update(dropoff_pin="4321")
    name = f"refused-{uuid.uuid4().hex}"
    photo = SimpleUploadedFile(f"{name}.png", PNG, content_type="image/png")
    assert move(client, one.pk, to="DELIVERED", photo=photo).status_code == 422
    assert not [kept for kept in stored_photos() if name in kept]
    Drop.objects.filter(pk=one.pk).update(dropoff_pin=None)
    photo = SimpleUploadedFile("door.png", PNG, content_type="image/png")
    assert move(client, one.pk, to="DELIVERED", photo=photo).status_code == 302
    one.refresh_from_db()
    assert one.status == S.DELIVERED and one.pod_photo.read() == PNG


def stored_photos() -> list[str]:
    """Every file under proof/ in the storage (proof/<year>/<month>/<name>)."""
    found = []
    years = default_storage.listdir("proof")[0] if default_storage.exists("proof") else []
    for year in years:
        for month in default_storage.listdir(f"proof/{year}")[0]:
            found += default_storage.listdir(f"proof/{year}/{month}")[1]
    return found
