"""Changes reach the courier (docs/contract.md §24, docs/api.md "Changes reach the courier"):
the route's version and ETag, 304 while nothing changed, what changed in words since an
earlier answer, a move on a stop that is no longer movable answered with the route, and
nothing of a drop once it is done or gone."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from django.test import Client

from orders.models import DeliveryEvent, Drop, DropStatus
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import drop
from tests.tracking.helpers import cancel
from tracking.services import move_drops_as_operator

S = DropStatus


def route_of(client, **headers):
    return client.api.get("/courier/route", client.token, headers=headers)


def later(clock) -> None:
    """A minute on: what came before is older than the overlap a route's changes allow for."""
    clock.shift(timedelta(minutes=1))


def changes_since(client, as_of: str) -> list[dict]:
    answer = client.get(f"/route?since={as_of.replace('+', '%2B')}")
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]["changes"]


def patch(api, drop_id, body, key: str):
    return api.client.patch(
        f"/api/v1/orders/{drop_id}",
        orjson.dumps(body),
        content_type="application/json",
        **api._headers(key),
    )


def test_the_route_has_a_version_its_etag_and_answers_304_while_unchanged(
    open_for_business, alice, api, dara
):
    courier, client = dara
    assigned_drops(api, alice, courier)
    first = route_of(client)
    assert first.status_code == 200
    version = first.json()["data"]["route"]["version"]
    assert first["ETag"] == f'"{version}"'

    again = route_of(client, **{"If-None-Match": f'"{version}"'})
    other = route_of(client, **{"If-None-Match": '"something-else"'})

    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == f'"{version}"'
    assert other.status_code == 200 and other.json()["data"]["route"]["version"] == version


def test_a_cancellation_by_the_shop_changes_the_version_and_says_so(
    open_for_business, alice, api, dara
):
    courier, client = dara
    one, other = sorted(
        assigned_drops(
            api, alice, courier, drop("K-1", name="Dara Chea"), drop("K-2", name="Sokha Lim")
        ),
        key=lambda d: d.client_order_id,
    )
    later(open_for_business)
    before = client.get("/route").json()["data"]

    assert cancel(api, alice.sandbox_key, "K-1").status_code == 200
    stale = route_of(client, **{"If-None-Match": f'"{before["route"]["version"]}"'})
    changes = changes_since(client, before["as_of"])

    assert stale.status_code == 200
    assert stale.json()["data"]["route"]["version"] != before["route"]["version"]
    assert changes == [
        {
            "drop_id": str(one.pk),
            "kind": "cancelled",
            "at": changes[0]["at"],
            "message": "Alice Shop cancelled the delivery to Dara: don't pick it up.",
        }
    ]


def test_an_edit_of_what_a_stop_shows_changes_the_version_and_says_what(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("E-1", name="Sokha Lim"))
    later(open_for_business)
    before = client.get("/route").json()["data"]

    edited = patch(api, one.pk, {"notes": "Blue gate", "dropoff": {"phone": "+85512000999"}},
                   alice.sandbox_key)  # fmt: skip
    assert edited.status_code == 200, edited.content

    after = client.get("/route").json()["data"]
    assert after["route"]["version"] != before["route"]["version"]
    pickup, stop = after["route"]["stops"]
    assert pickup["kind"] == "pickup" and stop["notes"] == "Blue gate"
    [change] = changes_since(client, before["as_of"])
    assert change["kind"] == "edited" and change["drop_id"] == str(one.pk)
    assert change["message"] == "The phone number and notes of Sokha's delivery changed."


def test_an_edit_of_nothing_the_courier_sees_keeps_the_version(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("E-2"))
    version = client.get("/route").json()["data"]["route"]["version"]

    assert patch(api, one.pk, {"external_waybill": "WB-7"}, alice.sandbox_key).status_code == 200

    assert route_of(client, **{"If-None-Match": f'"{version}"'}).status_code == 304


def test_an_order_added_by_an_operator_changes_the_version_and_says_so(
    open_for_business, alice, api, dara
):
    courier, client = dara
    later(open_for_business)
    before = route_of(client)
    assert before.json()["data"]["route"] is None

    (one,) = assigned_drops(api, alice, courier, drop("A-1", name="Vanna Kim"))

    after = route_of(client, **{"If-None-Match": before["ETag"]})
    assert after.status_code == 200 and after.json()["data"]["route"]["stops"]
    [change] = changes_since(client, before.json()["data"]["as_of"])
    assert (change["kind"], change["drop_id"]) == ("added", str(one.pk))
    assert change["message"] == "New on your route: Alice Shop's delivery to Vanna."


def test_a_move_of_the_courier_changes_the_version_but_is_no_change_to_tell(
    open_for_business, alice, api, dara
):
    courier, client = dara
    one, _ = assigned_drops(api, alice, courier)
    later(open_for_business)
    before = client.get("/route").json()["data"]

    assert client.move(one.pk, to="PICKED_UP").status_code == 200

    after = client.get("/route").json()["data"]
    assert after["route"]["version"] != before["route"]["version"]
    assert changes_since(client, before["as_of"]) == []


@pytest.mark.parametrize("since", ["yesterday", "2026-11-28T10:00:00", "x" * 50])
def test_a_bad_since_is_a_400_naming_it(open_for_business, dara, since):
    _, client = dara
    answer = client.get(f"/route?since={since}")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["field"] == "since"


def test_a_move_on_a_cancelled_stop_is_a_409_with_the_route_and_nothing_of_that_drop(
    open_for_business, alice, api, dara
):
    courier, client = dara
    gone, kept = sorted(
        assigned_drops(
            api, alice, courier,
            drop("G-1", name="Dara Chea", phone="+85512777001"),
            drop("G-2", name="Sokha Lim", phone="+85512777002"),
        ),
        key=lambda d: d.client_order_id,
    )  # fmt: skip
    assert cancel(api, alice.sandbox_key, "G-1").status_code == 200

    answer = client.move(gone.pk, to="PICKED_UP")

    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "ILLEGAL_TRANSITION"
    assert error["message"] == "This delivery was cancelled: don't pick it up."
    stops = {stop["drop_id"]: stop for stop in error["route"]["stops"]}
    assert stops[str(kept.pk)]["phone"] == "+85512777002"
    assert stops[str(gone.pk)]["status"] == S.CANCELLED and stops[str(gone.pk)]["done"]
    assert b"+85512777001" not in answer.content
    assert Drop.objects.get(pk=gone.pk).status == S.CANCELLED


def test_a_delivered_stop_sent_again_answers_done_without_the_recipient(
    open_for_business, alice, api, dara
):
    courier, client = dara
    one, _ = sorted(
        assigned_drops(
            api, alice, courier,
            {**drop("D-1", name="Dara Chea", phone="+85512777003"), "notes": "Gate code 1234",
             "cod": {"amount": "12.50"}},
            drop("D-2"),
        ),
        key=lambda d: d.client_order_id,
    )  # fmt: skip
    client.move(one.pk, to="PICKED_UP")
    first = client.move(one.pk, to="DELIVERED", cod_collected=True)
    assert first.status_code == 200

    again = client.move(one.pk, to="DELIVERED", cod_collected=True)
    other = client.move(one.pk, to="FAILED")
    route = client.get("/route")

    assert again.status_code == 200
    assert again.json()["data"]["stop"]["status"] == S.DELIVERED
    assert again.json()["data"]["stop"]["done"] is True
    assert other.status_code == 409 and "done (delivered)" in other.json()["error"]["message"]
    for answer in (first, again, other, route):
        for secret in (b"+85512777003", b"Gate code"):
            assert secret not in answer.content, (secret, answer.content)
    shown = [
        again.json()["data"]["stop"],
        *(s for s in other.json()["error"]["route"]["stops"] if s["drop_id"] == str(one.pk)),
        *(s for s in route.json()["data"]["route"]["stops"] if s["drop_id"] == str(one.pk)),
    ]
    assert len(shown) == 3
    for stop in shown:
        assert stop["done"] and stop["cod"] == {"amount": "12.50", "collected": True}
        hidden = ("phone", "lat", "long", "notes")
        assert all(stop[name] is None for name in hidden) and stop["address"] == ""
    assert DeliveryEvent.objects.filter(drop_id=one.pk, status=S.DELIVERED).count() == 1


def test_a_move_answers_what_it_did_in_words(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(
        api, alice, courier, {**drop("W-1", name="Dara Chea"), "cod": {"amount": "12.50"}}
    )
    picked = client.move(one.pk, to="PICKED_UP").json()["data"]["message"]
    delivered = client.move(one.pk, to="DELIVERED", cod_collected=True).json()["data"]["message"]

    assert picked.startswith("Picked up the parcel for Dara at ")
    assert delivered.startswith("Delivered to Dara at ")
    assert delivered.endswith(" — cash 12.50 USD collected.")


def test_another_courier_s_drop_is_404_before_and_after_it_is_done(
    open_for_business, alice, api, dara, sophea
):
    courier, _ = dara
    _, stranger = sophea
    one, _ = assigned_drops(api, alice, courier)
    assert stranger.move(one.pk, to="PICKED_UP").status_code == 404
    move_drops_as_operator(drop_ids=[one.pk], to=S.PICKED_UP, actor="operator test")
    move_drops_as_operator(drop_ids=[one.pk], to=S.DELIVERED, actor="operator test")

    for to in (S.DELIVERED, S.FAILED):
        answer = stranger.move(one.pk, to=to)
        assert answer.status_code == 404 and one.recipient_phone.encode() not in answer.content
        assert "route" in answer.json()["error"]  # the stranger's own route (none), nothing else
        assert str(one.pk) not in answer.content.decode()
    assert stranger.get("/route").json()["data"]["route"] is None


def test_a_move_by_form_post_is_confirmed_on_the_next_page_once(
    open_for_business, alice, api, dara
):
    courier, _ = dara
    (one,) = assigned_drops(api, alice, courier, drop("P-1", name="Dara Chea"))
    phone = Client()
    phone.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})

    moved = phone.post(f"/courier/drops/{one.pk}/move", {"to": "PICKED_UP"}, follow=True)
    again = phone.get("/courier/")

    assert moved.status_code == 200
    assert "Picked up the parcel for Dara at 10:0" in moved.content.decode()
    assert "Picked up the parcel for" not in again.content.decode()
