"""The dashboard's list of recipients who asked the business to stop, and lifting one with
their consent noted (docs/notifications.md, "Stopping messages")."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from notifications.models import Channel, OptOut, Suppression
from notifications.optout import suppress

pytestmark = pytest.mark.django_db

PAGE = reverse("dashboard:suppressions")


def stop(tenant, address: str, channel: str = Channel.SMS) -> Suppression:
    source = OptOut.SMS_STOP if channel == Channel.SMS else OptOut.EMAIL_UNSUBSCRIBE
    suppress(
        business_id=tenant.business.pk,
        channel=channel,
        address=address,
        source=source,
        at=timezone.now(),
    )
    return Suppression.objects.get(business=tenant.business, address=address.lower())


def test_the_page_lists_the_business_own_suppressions_only(alice, bob, alice_web):
    stop(alice, "+85512000101")
    stop(alice, "Sokha@Example.com", Channel.EMAIL)
    stop(bob, "+85512000999")

    page = alice_web.get(PAGE)

    assert page.status_code == 200
    text = page.content.decode()
    assert "+85512000101" in text and "sokha@example.com" in text and "Replied STOP" in text
    assert "+85512000999" not in text  # Bob's


def test_lifting_needs_the_recipients_consent_noted(alice, alice_web):
    stopped = stop(alice, "+85512000102")
    lift = reverse("dashboard:suppression_lift", args=[stopped.pk])

    refused = alice_web.post(lift, {"note": "ok"})  # too short to say anything
    assert refused.status_code == 400 and "at least 10 characters" in refused.content.decode()
    stopped.refresh_from_db()
    assert stopped.active

    note = "Asked by phone on 28 Nov to get delivery texts again."
    assert alice_web.post(lift, {"note": note}).status_code == 302
    stopped.refresh_from_db()
    assert not stopped.active and stopped.lifted_note == note
    assert stopped.lifted_by == alice_web.user.get_username()
    assert note in alice_web.get(PAGE).content.decode()  # the record stays, lifted
    # The phone may now be stopped again: a new record beside the lifted one.
    suppress(
        business_id=alice.business.pk,
        channel=Channel.SMS,
        address="+85512000102",
        source=OptOut.SMS_STOP,
        at=timezone.now(),
    )
    assert Suppression.objects.filter(address="+85512000102").count() == 2


def test_another_business_suppression_cannot_be_lifted(alice, bob, alice_web):
    theirs = stop(bob, "+85512000103")
    answer = alice_web.post(
        reverse("dashboard:suppression_lift", args=[theirs.pk]), {"note": "Said yes on the phone."}
    )
    assert answer.status_code == 404
    theirs.refresh_from_db()
    assert theirs.active


def test_the_page_needs_a_signed_in_user(client):
    assert client.get(PAGE).status_code == 302
