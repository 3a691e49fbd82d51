"""Recipient notifications made from events and sent for real: SMS to a loopback HTTP
provider, email to a real SMTP server (aiosmtpd). The task is run in process here, and by a
real db_worker in test_worker.py."""

from __future__ import annotations

import base64
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.models import Event, EventType
from events.services import NewEvent, record_many
from notifications import collect as collect_module
from notifications.channels import EmailSender, Outgoing
from notifications.models import Channel, Kind, Message, MessageStatus, NotificationFeed
from notifications.sending import expire_claims, lease, send_due
from notifications.tasks import notify_recipients, purge_old_messages
from orders.models import DropStatus
from tests.factories import HOME, batch, drop, group
from tests.notifications.conftest import SMS_FROM, SMS_SID, SMS_TOKEN, form_of, switch_on
from tests.notifications.helpers import place, walk_live

run = notify_recipients.call  # the task's own function, in this process


def messages_of(tenant) -> list[Message]:
    return list(Message.objects.filter(business=tenant.business).order_by("id"))


@pytest.mark.django_db
def test_nothing_is_made_or_sent_while_the_business_has_not_opted_in(
    alice, api, open_for_business, sms_provider
):
    walk_live(place(api, alice.live_key, "OFF-1"))
    run()
    assert Message.objects.count() == 0
    assert sms_provider.received == []


@pytest.mark.django_db
def test_a_delivered_live_order_texts_its_recipient_once_per_event_it_opted_into(
    alice, api, open_for_business, sms_provider
):
    switch_on(alice, "live", Kind.DISPATCHED, Kind.DELIVERED)  # not FAILED, not NEARBY
    [drop_id] = place(api, alice.live_key, "ON-1", phone="+85512000042")
    walk_live([drop_id])
    run()

    sent = messages_of(alice)
    assert [(m.kind, m.channel, m.status) for m in sent] == [
        (Kind.DISPATCHED, Channel.SMS, MessageStatus.SENT),
        (Kind.DELIVERED, Channel.SMS, MessageStatus.SENT),
    ]
    requests = sms_provider.wait_for(2)
    assert [r.path for r in requests] == [f"/2010-04-01/Accounts/{SMS_SID}/Messages.json"] * 2
    expected_auth = "Basic " + base64.b64encode(f"{SMS_SID}:{SMS_TOKEN}".encode()).decode()
    assert {r.headers["authorization"] for r in requests} == {expected_auth}
    forms = [form_of(r) for r in requests]
    assert {f["To"] for f in forms} == {"+85512000042"} and {f["From"] for f in forms} == {SMS_FROM}
    dispatched = forms[0]["Body"]
    assert dispatched.startswith("Alice Shop: your order is on its way, expected at ")
    tracking_url = api.track(["ON-1"], alice.live_key).json()["data"]["orders"][0]["tracking_url"]
    assert tracking_url in dispatched
    assert forms[1]["Body"] == "Alice Shop: your order ON-1 was delivered. Thank you!"
    # Running again sends nothing more: the events were read, the messages settled.
    run()
    assert len(sms_provider.received) == 2 and len(messages_of(alice)) == 2


@pytest.mark.django_db
def test_a_sandbox_account_writes_the_log_and_never_sends(
    alice, api, open_for_business, sms_provider
):
    switch_on(alice, "sandbox")
    [drop_id] = place(api, alice.sandbox_key, "SB-1")
    response = api.post(
        "/sandbox/orders/advance", {"identifiers": ["SB-1"], "to": "DELIVERED"}, alice.sandbox_key
    )
    assert response.status_code == 200, response.content
    run()
    logged = messages_of(alice)
    assert [(m.kind, m.status) for m in logged] == [
        (Kind.DISPATCHED, MessageStatus.SANDBOX),
        (Kind.DELIVERED, MessageStatus.SANDBOX),
    ]
    assert {str(m.drop_id) for m in logged} == {drop_id}
    assert logged[1].body == "Alice Shop: your order SB-1 was delivered. Thank you!"
    assert sms_provider.received == []


@pytest.mark.django_db
def test_a_failed_delivery_tells_the_recipient(alice, api, open_for_business, sms_provider):
    switch_on(alice, "live", Kind.FAILED, Kind.DELIVERED)
    walk_live(place(api, alice.live_key, "FAIL-1"), to=DropStatus.FAILED)
    run()
    assert [(m.kind, m.status) for m in messages_of(alice)] == [(Kind.FAILED, MessageStatus.SENT)]
    assert "could not deliver your order FAIL-1" in form_of(sms_provider.wait_for(1)[0])["Body"]


@pytest.mark.django_db
def test_the_throttle_stops_a_recipients_messages_past_n_an_hour(
    alice, api, open_for_business, sms_provider, settings
):
    settings.NOTIFY_PER_RECIPIENT_PER_HOUR = 2
    switch_on(alice, "live", Kind.DELIVERED)
    walk_live(place(api, alice.live_key, "T-1", "T-2", "T-3", phone="+85512000077"))
    run()
    statuses = sorted(m.status for m in messages_of(alice))
    assert statuses == [MessageStatus.SENT, MessageStatus.SENT, MessageStatus.THROTTLED]
    assert len(sms_provider.wait_for(2)) == 2
    assert Message.objects.get(status=MessageStatus.THROTTLED).error.startswith(
        "The recipient had 2 messages"
    )


@pytest.mark.django_db
def test_a_refused_connection_is_retried_and_a_refused_message_is_not(
    alice, api, open_for_business, sms_provider
):
    switch_on(alice, "live", Kind.DISPATCHED, Kind.DELIVERED)
    sms_provider.answer(503, 400)  # "try later", then a refusal of that message
    walk_live(place(api, alice.live_key, "R-1"))
    run()
    first, second = messages_of(alice)
    assert (first.status, first.attempts) == (MessageStatus.PENDING, 1)
    assert "503" in first.error and first.next_attempt_at > timezone.now()
    assert (second.status, second.attempts) == (MessageStatus.FAILED, 1)
    assert "400" in second.error


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_make_and_send_each_message_once(
    alice, api, open_for_business, sms_provider
):
    switch_on(alice, "live")
    walk_live(place(api, alice.live_key, *[f"C-{i}" for i in range(5)]))
    barrier = threading.Barrier(4)

    def one() -> None:
        try:
            barrier.wait(10)
            run()
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # 5 drops × dispatched and delivered; the throttle (6 an hour) stops the rest.
    made = messages_of(alice)
    assert len(made) == 10
    assert len({(m.drop_id, m.kind, m.channel) for m in made}) == 10
    sent = [m for m in made if m.status == MessageStatus.SENT]
    assert len(sent) == 6
    assert len(sms_provider.wait_for(6)) == 6
    run()
    assert len(sms_provider.received) == 6


@pytest.mark.django_db
def test_a_message_whose_worker_died_mid_send_is_failed_never_sent_again(
    alice, api, open_for_business, sms_provider
):
    switch_on(alice, "live", Kind.DISPATCHED)
    [drop_id] = place(api, alice.live_key, "K-1")
    walk_live([drop_id])
    run()
    assert len(sms_provider.wait_for(1)) == 1
    # As a worker killed after its claim committed leaves it: SENDING, claimed.
    Message.objects.update(status=MessageStatus.SENDING, claimed_until=timezone.now() + lease())
    assert expire_claims(now=timezone.now()) == 0  # its lease still holds
    assert expire_claims(now=timezone.now() + lease() + lease()) == 1
    run()
    [message] = messages_of(alice)
    assert message.status == MessageStatus.FAILED and "at most once" in message.error
    assert len(sms_provider.received) == 1


@pytest.mark.django_db
def test_the_email_channel_sends_through_a_real_smtp_server(smtp_server, settings):
    settings.NOTIFY_FROM_EMAIL = "shop@example.com"
    outcomes = EmailSender().send(
        [
            Outgoing("sokha@example.com", "Your order is on its way", "Track it: https://x/t/1"),
            Outgoing("dara@example.com", "Delivered", "Thank you!"),
        ]
    )
    assert [o.sent for o in outcomes] == [True, True]
    mails = smtp_server.wait_for(2)
    assert [(sender, to) for sender, to, _ in mails] == [
        ("shop@example.com", ["sokha@example.com"]),
        ("shop@example.com", ["dara@example.com"]),
    ]
    assert mails[0][2]["Subject"] == "Your order is on its way"
    assert mails[0][2].get_payload().strip() == "Track it: https://x/t/1"


@pytest.mark.django_db
def test_an_unreachable_mail_server_is_a_retry_not_a_send(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # nothing listens
    [outcome] = EmailSender().send([Outgoing("a@example.com", "S", "B")])
    assert (outcome.sent, outcome.retry) == (False, True)


@pytest.mark.django_db
def test_turning_notifications_on_never_sends_for_what_happened_before(
    alice, api, open_for_business, sms_provider
):
    [earlier] = place(api, alice.live_key, "BEFORE-1")
    walk_live([earlier])
    switch_on(alice, "live")
    [later] = place(api, alice.live_key, "AFTER-1", phone="+85512000099")
    walk_live([later])
    run()
    assert {str(m.drop_id) for m in messages_of(alice)} == {later}


def courier_at(tenant, drop_id: str, lat: float, long: float) -> None:
    """An order.courier_position event as tracking.position_events writes it."""
    with transaction.atomic():
        record_many(
            [
                NewEvent(
                    tenant.business.pk,
                    "live",
                    EventType.ORDER_COURIER_POSITION,
                    {
                        "pass_order_id": "order",
                        "courier": {"name": "Dara", "position": {"lat": lat, "long": long}},
                        "drops": [
                            {
                                "drop_id": drop_id,
                                "client_order_id": "NEAR-1",
                                "status": DropStatus.PICKED_UP,
                                "eta": {"pickup_at": None, "dropoff_at": "2026-11-23T04:05:00Z"},
                            }
                        ],
                    },
                )
            ],
            at=timezone.now(),
        )


@pytest.mark.django_db
def test_courier_nearby_is_sent_once_when_the_courier_comes_within_the_distance(
    alice, api, open_for_business, sms_provider, settings
):
    settings.NOTIFY_NEARBY_METERS = 500
    switch_on(alice, "live", Kind.NEARBY)
    [drop_id] = place(api, alice.live_key, "NEAR-1")
    walk_live([drop_id], to=DropStatus.PICKED_UP)
    home = HOME["lat"], HOME["long"]
    courier_at(alice, drop_id, home[0] + 0.01, home[1])  # about 1.1 km north: not yet
    run()
    assert messages_of(alice) == []
    courier_at(alice, drop_id, home[0] + 0.003, home[1])  # about 330 m
    courier_at(alice, drop_id, home[0] + 0.001, home[1])  # closer still: no second message
    run()
    [nearby] = messages_of(alice)
    assert (nearby.kind, nearby.status) == (Kind.NEARBY, MessageStatus.SENT)
    [request] = sms_provider.wait_for(1)
    assert form_of(request)["Body"].startswith("Alice Shop: your courier is nearby. Track it: ")


@pytest.mark.django_db
def test_a_recipient_with_an_email_gets_the_email_from_a_real_smtp_server(
    alice, api, open_for_business, smtp_server, sms_provider
):
    switch_on(alice, "live", Kind.DELIVERED, channels=(Channel.EMAIL, Channel.SMS))
    body = batch(
        group(
            drop("MAIL-1", name="Sokha Chan", email="sokha@example.com"),
            drop("MAIL-2", name="Dara Kim"),  # no email: an SMS only
        )
    )
    response = api.bulk(body, alice.live_key)
    assert response.json()["data"]["counts"]["accepted"] == 2, response.content
    walk_live([o["drop_id"] for o in response.json()["data"]["orders"]])
    run()

    [(_, to, mail)] = smtp_server.wait_for(1)
    assert to == ["sokha@example.com"]
    assert mail["Subject"] == "Your Alice Shop order was delivered"
    assert mail.get_payload().startswith("Hello Sokha,\n\nYour order MAIL-1 from Alice Shop")
    made = {(m.client_order_id, m.channel): m.status for m in messages_of(alice)}
    assert made == {
        ("MAIL-1", Channel.EMAIL): MessageStatus.SENT,
        ("MAIL-1", Channel.SMS): MessageStatus.SENT,
        ("MAIL-2", Channel.SMS): MessageStatus.SENT,
    }


@pytest.mark.django_db
def test_a_malformed_recipient_email_is_a_400_naming_its_path(alice, api, open_for_business):
    response = api.bulk(batch(group(drop("BAD-1", email="not an address"))), alice.live_key)
    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert [d["field"] for d in details] == ["orders[0].dropoff[0].dropoff.email"]


@pytest.mark.django_db
def test_a_pass_cut_by_its_limit_goes_on_from_where_it_stopped(
    alice, api, open_for_business, monkeypatch
):
    switch_on(alice, "live", Kind.DISPATCHED, Kind.DELIVERED)
    walk_live(place(api, alice.live_key, "CUT-1", "CUT-2", "CUT-3"))
    monkeypatch.setattr(collect_module, "READ_AT_MOST", 2)
    feed = NotificationFeed.objects.get(business=alice.business, environment="live")
    feed_events = Event.objects.filter(business=alice.business, environment="live")
    changes = feed_events.filter(seq__gt=feed.last_seq, type=EventType.ORDER_STATUS_CHANGED)
    # 3 drops × ASSIGNED, PICKED_UP, DELIVERED: 5 passes of 2, each moving the cursor on.
    assert changes.count() == 9
    cursors = []
    for _ in range(5):
        collect_module.collect(now=timezone.now())
        feed.refresh_from_db()
        cursors.append(feed.last_seq)
    assert cursors == sorted(set(cursors)) and cursors[-1] == changes.latest("seq").seq
    made = {(m.client_order_id, m.kind) for m in messages_of(alice)}
    kinds = (Kind.DISPATCHED, Kind.DELIVERED)
    assert made == {(f"CUT-{i}", kind) for i in (1, 2, 3) for kind in kinds}
    # Events of other types move the cursor on without a message.
    api.bulk(batch(group(drop("LATER-1"))), alice.live_key)  # batch.created only
    collect_module.collect(now=timezone.now())
    feed.refresh_from_db()
    assert feed.last_seq == feed_events.latest("seq").seq
    assert len(messages_of(alice)) == 6


@pytest.mark.django_db
def test_the_log_is_purged_after_notify_log_days(alice, api, open_for_business, settings):
    settings.NOTIFY_LOG_DAYS = 30
    switch_on(alice, "sandbox", Kind.DISPATCHED, Kind.DELIVERED)
    place(api, alice.sandbox_key, "OLD-1")
    body = {"identifiers": ["OLD-1"], "to": "DELIVERED"}
    assert api.post("/sandbox/orders/advance", body, alice.sandbox_key).status_code == 200
    run()
    old, recent = messages_of(alice)
    Message.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    assert purge_old_messages.call() == 1
    assert [m.pk for m in messages_of(alice)] == [recent.pk]


def queries_of(work) -> int:
    with CaptureQueriesContext(connection) as captured:
        work()
    return len(captured.captured_queries)


@pytest.mark.django_db
def test_a_pass_costs_the_same_statements_for_2_drops_as_for_8(
    alice, bob, api, open_for_business, sms_provider
):
    for tenant in (alice, bob):
        switch_on(tenant, "live", channels=(Channel.SMS, Channel.EMAIL))
    walk_live(place(api, alice.live_key, "Q-1", "Q-2"))
    small_collect = queries_of(lambda: collect_module.collect(now=timezone.now()))
    small_send = queries_of(send_due)
    assert len(messages_of(alice)) == 4  # 2 drops × dispatched, delivered; SMS (no email)

    # 16 messages: one claim (CLAIM_AT_MOST), as the 4 before.
    walk_live(place(api, alice.live_key, *[f"QA-{i}" for i in range(4)], phone="+85512000201"))
    walk_live(place(api, bob.live_key, *[f"QB-{i}" for i in range(4)], phone="+85512000202"))
    large_collect = queries_of(lambda: collect_module.collect(now=timezone.now()))
    large_send = queries_of(send_due)
    assert Message.objects.count() == 4 + 16
    assert (large_collect, large_send) == (small_collect, small_send)
