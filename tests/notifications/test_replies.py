"""Replies to our texts: the SMS provider's inbound webhook, STOP and START
(docs/notifications.md, "Stopping messages"). The provider is the loopback receiver the
other notification tests send to; its inbound calls are made here as Twilio makes them: a
form, signed with X-Twilio-Signature."""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse

import pytest
from django.test import Client

from notifications.models import Channel, Kind, Message, MessageStatus, OptOut, Suppression
from notifications.tasks import notify_recipients
from orders.models import DropStatus
from tests.factories import DriverFactory
from tests.notifications.conftest import SMS_TOKEN, form_of, switch_on
from tests.notifications.helpers import place
from tracking.services import move_drops_as_operator

pytestmark = pytest.mark.django_db

run = notify_recipients.call  # the task's own function, in this process
INBOUND = "/api/v1/sms/inbound"
PHONE = "+85512000077"


@pytest.fixture(autouse=True)
def auth_token(settings):
    """The provider's account: its auth token signs the inbound calls."""
    settings.SMS_AUTH_TOKEN = SMS_TOKEN


def twilio_signature(url: str, params: dict[str, str], token: str = SMS_TOKEN) -> str:
    """As Twilio documents it: the URL, then each parameter's name and value sorted by name,
    HMAC-SHA1 with the auth token, base64."""
    data = url + "".join(f"{name}{params[name]}" for name in sorted(params))
    return base64.b64encode(hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()).decode()


def reply(body: str, *, phone: str = PHONE, signature: str | None = "valid", **extra):
    params = {"From": phone, "To": "+15005550006", "Body": body, "MessageSid": "SM1", **extra}
    headers = {}
    if signature == "valid":
        signature = twilio_signature(f"http://testserver{INBOUND}", params)
    if signature is not None:
        headers["HTTP_X_TWILIO_SIGNATURE"] = signature
    return Client().post(
        INBOUND,
        urllib.parse.urlencode(params),
        content_type="application/x-www-form-urlencoded",
        **headers,
    )


def move(drop_ids: list[str], *statuses: str, courier=None) -> None:
    for status in statuses:
        extra = {"driver": courier} if status == DropStatus.ASSIGNED else {}
        assert move_drops_as_operator(drop_ids=drop_ids, to=status, actor="op", **extra)


def texts_to(receiver, phone: str = PHONE) -> list[str]:
    return [form_of(r)["Body"] for r in receiver.received if form_of(r)["To"] == phone]


def test_stop_suppresses_the_business_that_texted_and_start_lifts_it(
    alice, bob, api, open_for_business, sms_provider
):
    switch_on(alice, "live", Kind.DISPATCHED, Kind.DELIVERED)
    switch_on(bob, "live", Kind.DELIVERED)
    [first] = place(api, alice.live_key, "STOP-1", phone=PHONE)
    move([first], DropStatus.ASSIGNED, DropStatus.PICKED_UP, courier=DriverFactory())
    run()
    assert len(texts_to(sms_provider)) == 1  # "on its way", from Alice Shop

    answer = reply("Stop ")
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"] == {"action": "stopped"}
    [stopped] = Suppression.objects.all()
    assert (stopped.business, stopped.channel, stopped.address, stopped.source) == (
        alice.business,
        Channel.SMS,
        PHONE,
        OptOut.SMS_STOP,
    )

    # Nothing more from Alice Shop to that phone; Bob Shop, which it did not stop, still texts.
    [other] = place(api, bob.live_key, "BOB-1", phone=PHONE)
    move([first], DropStatus.DELIVERED)
    move([other], DropStatus.ASSIGNED, DropStatus.PICKED_UP, courier=DriverFactory())
    move([other], DropStatus.DELIVERED)
    run()
    delivered = Message.objects.get(drop_id=first, kind=Kind.DELIVERED)
    assert delivered.status == MessageStatus.SUPPRESSED
    sms_provider.wait_for(2)
    assert [body.split(":")[0] for body in texts_to(sms_provider)] == ["Alice Shop", "Bob Shop"]

    assert reply("START").json()["data"] == {"action": "started"}
    stopped.refresh_from_db()
    assert stopped.lifted_at is not None and stopped.lifted_note == "The recipient replied START."
    [again] = place(api, alice.live_key, "STOP-2", phone=PHONE)
    move([again], DropStatus.ASSIGNED, DropStatus.PICKED_UP, courier=DriverFactory())
    run()
    sms_provider.wait_for(3)
    assert texts_to(sms_provider)[-1].startswith("Alice Shop: your order is on its way")


@pytest.mark.parametrize("word", ["STOP", "stopall", "Unsubscribe", "CANCEL", "end", "QUIT."])
def test_each_stop_word_stops(word, alice, api, open_for_business, sms_provider):
    switch_on(alice, "live", Kind.DISPATCHED)
    [drop_id] = place(api, alice.live_key, "W-1", phone=PHONE)
    move([drop_id], DropStatus.ASSIGNED, DropStatus.PICKED_UP, courier=DriverFactory())
    run()
    assert reply(word).json()["data"] == {"action": "stopped"}
    assert Suppression.objects.filter(business=alice.business, lifted_at=None).count() == 1
    assert reply("yes").json()["data"] == {"action": "started"}
    assert not Suppression.objects.filter(lifted_at=None).exists()


def test_other_words_and_unknown_phones_change_nothing(alice, api, open_for_business, sms_provider):
    assert reply("STOP").json()["data"] == {"action": "ignored"}  # we never texted it
    switch_on(alice, "live", Kind.DISPATCHED)
    [drop_id] = place(api, alice.live_key, "W-2", phone=PHONE)
    move([drop_id], DropStatus.ASSIGNED, DropStatus.PICKED_UP, courier=DriverFactory())
    run()
    assert reply("please stop calling me").json()["data"] == {"action": "ignored"}
    assert reply("START").json()["data"] == {"action": "ignored"}  # nothing to lift
    assert not Suppression.objects.exists()


@pytest.mark.parametrize(
    "signature", [None, "", "bm90IGEgc2lnbmF0dXJl", twilio_signature("http://x/", {"Body": "STOP"})]
)
def test_a_missing_or_wrong_signature_is_403_in_the_envelope(signature, alice):
    answer = reply("STOP", signature=signature)
    assert answer.status_code == 403
    body = answer.json()
    assert body["success"] is False and body["error"]["code"] == "INVALID_SIGNATURE"
    assert not Suppression.objects.exists()


def test_a_signature_made_with_another_token_or_for_other_params_is_403(alice):
    params = {"From": PHONE, "To": "+15005550006", "Body": "STOP", "MessageSid": "SM1"}
    url = f"http://testserver{INBOUND}"
    assert reply("STOP", signature=twilio_signature(url, params, "another")).status_code == 403
    tampered = twilio_signature(url, {**params, "Body": "START"})
    assert reply("STOP", signature=tampered).status_code == 403


def test_without_an_auth_token_configured_every_call_is_403(settings, alice):
    settings.SMS_AUTH_TOKEN = ""
    answer = reply("STOP", signature=twilio_signature(f"http://testserver{INBOUND}", {}, ""))
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "INVALID_SIGNATURE"


def test_bad_input_is_a_clear_4xx(alice):
    answer = reply("STOP", phone="not a phone")
    assert answer.status_code == 400
    assert answer.json()["error"]["details"][0]["field"] == "From"
    signature = twilio_signature(f"http://testserver{INBOUND}", {})
    as_json = Client().post(
        INBOUND, b'{"Body": "STOP"}', content_type="application/json",
        HTTP_X_TWILIO_SIGNATURE=signature,
    )  # fmt: skip
    assert as_json.status_code == 415 and as_json.json()["success"] is False
    assert Client().get(INBOUND).status_code == 405
