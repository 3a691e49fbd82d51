"""Unsubscribing from emails (docs/notifications.md, "Stopping messages"): the List-Unsubscribe
headers of RFC 8058 on every email a real SMTP server (aiosmtpd) receives, the one-click
POST a mail client makes to the link, and what the link refuses."""

from __future__ import annotations

import urllib.parse

import pytest
from django.core import signing
from django.test import Client
from django.utils import timezone

from notifications.models import Channel, Kind, Message, MessageStatus, OptOut, Suppression
from notifications.optout import UNSUBSCRIBE_SALT, lift
from notifications.tasks import notify_recipients
from tests.factories import batch, drop, group
from tests.notifications.conftest import switch_on
from tests.notifications.helpers import walk_live

pytestmark = pytest.mark.django_db

run = notify_recipients.call  # the task's own function, in this process
ADDRESS = "sokha@example.com"
ONE_CLICK = "List-Unsubscribe=One-Click"


def deliver(api, tenant, client_order_id: str, email: str = ADDRESS) -> None:
    body = batch(group(drop(client_order_id, name="Sokha Chan", email=email)))
    response = api.bulk(body, tenant.live_key)
    assert response.json()["data"]["counts"]["accepted"] == 1, response.content
    walk_live([o["drop_id"] for o in response.json()["data"]["orders"]])
    run()


def link_of(mail) -> str:
    """The link of the List-Unsubscribe header (https under BASE_URL; unset here)."""
    header = "".join(mail["List-Unsubscribe"].split())  # unfolded: a long header is folded
    assert header.startswith("<") and header.endswith(">"), header
    return header[1:-1]


def one_click(link: str):
    """What a mail client does for RFC 8058: POST the form to the link, no cookie."""
    path = urllib.parse.urlsplit(link).path
    return Client(enforce_csrf_checks=True).post(
        path, ONE_CLICK, content_type="application/x-www-form-urlencoded"
    )


def test_each_email_carries_one_click_unsubscribe_and_it_stops_that_business(
    alice, bob, api, open_for_business, smtp_server
):
    switch_on(alice, "live", Kind.DELIVERED, channels=(Channel.EMAIL,))
    switch_on(bob, "live", Kind.DELIVERED, channels=(Channel.EMAIL,))
    deliver(api, alice, "U-1")
    [(_, to, mail)] = smtp_server.wait_for(1)
    assert to == [ADDRESS]
    assert mail["List-Unsubscribe-Post"] == ONE_CLICK
    link = link_of(mail)
    assert "/unsubscribe/" in link and link in mail.get_payload()  # under the text too

    # Opening the link only asks: scanners that follow links unsubscribe no one.
    asked = Client().get(urllib.parse.urlsplit(link).path)
    assert asked.status_code == 200 and b'<form method="post">' in asked.content
    assert not Suppression.objects.exists()

    answer = one_click(link)
    assert answer.status_code == 200 and b"You are unsubscribed" in answer.content
    [stopped] = Suppression.objects.all()
    assert (stopped.business, stopped.channel, stopped.address, stopped.source) == (
        alice.business,
        Channel.EMAIL,
        ADDRESS,
        OptOut.EMAIL_UNSUBSCRIBE,
    )

    deliver(api, alice, "U-2")  # nothing more from Alice Shop...
    deliver(api, bob, "B-1")  # ...while Bob Shop, not unsubscribed, still emails
    mails = smtp_server.wait_for(2)
    assert [m["Subject"] for _, _, m in mails] == [
        "Your Alice Shop order was delivered",
        "Your Bob Shop order was delivered",
    ]
    later = Message.objects.get(client_order_id="U-2", channel=Channel.EMAIL)
    assert later.status == MessageStatus.SUPPRESSED


def test_a_link_works_once(alice, api, open_for_business, smtp_server):
    switch_on(alice, "live", Kind.DELIVERED, channels=(Channel.EMAIL,))
    deliver(api, alice, "U-3")
    [(_, _, mail)] = smtp_server.wait_for(1)
    link = link_of(mail)
    assert b"You are unsubscribed" in one_click(link).content
    # The recipient agreed to hear again (the dashboard); the old link does not stop them.
    lift(suppression=Suppression.objects.get(), note="Said yes by phone.", by="", at=timezone.now())
    again = one_click(link)
    assert again.status_code == 200 and b"already used" in again.content
    assert not Suppression.objects.filter(lifted_at=None).exists()


def test_a_link_is_useless_for_another_address_or_altered(
    alice, api, open_for_business, smtp_server
):
    switch_on(alice, "live", Kind.DELIVERED, channels=(Channel.EMAIL,))
    deliver(api, alice, "U-4")
    [(_, _, mail)] = smtp_server.wait_for(1)
    link = link_of(mail)
    message = Message.objects.get(client_order_id="U-4", channel=Channel.EMAIL)
    base = link.split("/unsubscribe/")[0] + "/unsubscribe/"
    forged = [
        # Our signature, this email, another address: not the address it was sent to.
        signing.dumps({"m": message.pk, "a": "dara@example.com"}, salt=UNSUBSCRIBE_SALT),
        # The same values signed for another purpose.
        signing.dumps({"m": message.pk, "a": ADDRESS}, salt="another.purpose"),
        link.rsplit("/", 1)[1][:-2] + "xx",  # altered
        "",
        "%00%ff/../",
    ]
    for token in forged:
        answer = one_click(base + token)
        assert answer.status_code == 404 and b"not valid" in answer.content, token
    assert not Suppression.objects.exists()
    assert Client().put(urllib.parse.urlsplit(link).path).status_code == 405
