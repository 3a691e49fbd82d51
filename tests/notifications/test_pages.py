"""The dashboard's notification pages: settings with templates checked and previewed, and the
delivery log of the business's own orders only."""

from __future__ import annotations

import itertools
import uuid

import pytest
from django.utils import timezone

from notifications.models import (
    Channel,
    Kind,
    Message,
    MessageStatus,
    NotificationFeed,
    NotificationTemplate,
)
from notifications.selectors import templates_of

pytestmark = pytest.mark.django_db
_seqs = itertools.count(1)


def form_data(tenant, environment: str = "sandbox", **changes) -> dict:
    """The settings form as the page shows it (every template, as stored), plus changes."""
    data = {"environment": environment, "action": "save"}
    for template in templates_of(business=tenant.business, environment=environment):
        prefix = template.prefix
        if template.enabled:
            data[f"{prefix}-enabled"] = "on"
        if template.channel == Channel.EMAIL:
            data[f"{prefix}-subject"] = template.subject
        data[f"{prefix}-body"] = template.body
    data.update(changes)
    return data


def test_the_settings_page_lists_every_channel_and_event_with_a_preview(alice, alice_web):
    response = alice_web.get("/notifications/?environment=sandbox")
    assert response.status_code == 200
    page = response.content.decode()
    for channel in Channel.values:
        for kind in Kind.values:
            assert f'data-testid="template-{channel}-{kind}"' in page
    # The default SMS text, rendered with the business's name and sample values.
    assert "Alice Shop: your order ORDER-1001 was delivered. Thank you!" in page
    assert "{tracking_url}" in page  # the list of variables


def test_saving_switches_a_template_on_with_its_text(alice, alice_web):
    body = "{business_name}: {recipient_first_name}, it is coming at {eta}: {tracking_url}"
    response = alice_web.post(
        "/notifications/",
        form_data(alice, **{"sms-dispatched-enabled": "on", "sms-dispatched-body": body}),
    )
    assert response.status_code == 302
    stored = NotificationTemplate.objects.get(
        business=alice.business, environment="sandbox", channel="sms", kind="dispatched"
    )
    assert stored.enabled and stored.body == body
    assert NotificationFeed.objects.get(business=alice.business, environment="sandbox").active
    page = alice_web.get("/notifications/?environment=sandbox").content.decode()
    assert "Alice Shop: Sokha, it is coming at 14:30: https://example.com/t/sample-token" in page


def test_an_unknown_variable_is_a_form_error_and_nothing_is_stored(alice, alice_web):
    response = alice_web.post(
        "/notifications/",
        form_data(
            alice,
            **{"email-failed-enabled": "on", "email-failed-body": "Hi {customer_name}"},
        ),
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Unknown variable {customer_name}" in page
    assert not NotificationTemplate.objects.exists()
    assert not NotificationFeed.objects.exists()


def test_a_format_spec_is_refused_too(alice, alice_web):
    response = alice_web.post(
        "/notifications/", form_data(alice, **{"sms-nearby-body": "{eta:>10}"})
    )
    assert response.status_code == 400
    assert "without a format" in response.content.decode()


def test_preview_renders_the_posted_text_without_saving_it(alice, alice_web):
    response = alice_web.post(
        "/notifications/",
        form_data(alice, action="preview", **{"sms-delivered-body": "Done, {recipient_name}!"}),
    )
    assert response.status_code == 200
    assert "Done, Sokha Chan!" in response.content.decode()
    assert not NotificationTemplate.objects.exists()


def test_live_settings_wait_for_live_access(make_tenant, member):
    approved = make_tenant(name="Not Yet Live", stage="approved")
    web = member(approved.business)
    response = web.post(
        "/notifications/",
        form_data(approved, "live", **{"sms-delivered-enabled": "on"}),
    )
    assert response.status_code == 403
    assert not NotificationTemplate.objects.exists()


def logged(tenant, reference: str, status=MessageStatus.SANDBOX) -> Message:
    return Message.objects.create(
        business=tenant.business,
        environment="sandbox",
        event_seq=next(_seqs),
        drop_id=uuid.uuid4(),
        client_order_id=reference,
        kind=Kind.DELIVERED,
        channel=Channel.SMS,
        to="+85512000001",
        body=f"Your order {reference} was delivered.",
        status=status,
        created_at=timezone.now(),
    )


def test_the_log_shows_the_business_its_own_messages_only(alice, bob, alice_web, bob_web):
    logged(alice, "ALICE-1")
    logged(bob, "BOB-1", status=MessageStatus.THROTTLED)
    alice_page = alice_web.get("/notifications/log/?environment=sandbox").content.decode()
    bob_page = bob_web.get("/notifications/log/?environment=sandbox").content.decode()
    assert "Your order ALICE-1 was delivered." in alice_page and "BOB-1" not in alice_page
    assert "BOB-1" in bob_page and "ALICE-1" not in bob_page
    assert "Throttled" in bob_page
    live = alice_web.get("/notifications/log/?environment=live")
    assert live.status_code == 200 and "ALICE-1" not in live.content.decode()


def test_the_pages_need_a_login(client):
    assert client.get("/notifications/").status_code == 302
    assert client.get("/notifications/log/").status_code == 302
