"""Sending webhooks (docs/contract.md §11), in-process against a real receiver on loopback.

`send_due_deliveries_of` is what a send task runs; outside a task worker it sends in the
caller's thread with the worker's sender (events.delivery.Sender), so calling it here is the
worker's work minus the process (tests/events/test_worker_deliveries.py and
test_hanging_receivers.py run real workers). Every
request the receiver records was verified with the `standardwebhooks` library.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from events.delivery import claim_due, lease_seconds
from events.endpoints import resend_delivery, rotate_secret, send_test_event
from events.models import Delivery, DeliveryStatus, Event, EventType, WebhookEndpoint
from events.selectors import event_object
from events.services import record_events
from events.tasks import purge_old_events, send_due_deliveries_of, sweep_deliveries
from events.transport import USER_AGENT
from tests.events.webhooks import deliveries_of, emit, make_endpoint, public_ids
from tests.helpers import in_own_connection


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """The receiver listens on loopback: allowed here as in local demos (SSRF tests undo it)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800]


@pytest.fixture
def endpoint(alice, webhook_receiver):
    endpoint = make_endpoint(alice, webhook_receiver.url())
    webhook_receiver.trust(endpoint.secret)
    return endpoint


def queued_sends(endpoint: WebhookEndpoint) -> list[DBTaskResult]:
    return list(
        DBTaskResult.objects.filter(
            status=TaskResultStatus.READY,
            task_path="events.tasks.send_due_deliveries",
            args_kwargs__args=[str(endpoint.pk)],
        )
    )


# --- one delivery, as Standard Webhooks ---------------------------------------------------------


def test_each_event_is_posted_signed_as_standard_webhooks(alice, endpoint, webhook_receiver):
    events = emit(alice, 3)

    sent_from, started = int(time.time()), time.monotonic()
    assert send_due_deliveries_of(endpoint.pk) == 3
    took_ms, sent_by = (time.monotonic() - started) * 1000, time.time()

    received = {r.id: r for r in webhook_receiver.received}
    assert sorted(received) == sorted(public_ids(events))  # about no drop: side by side
    for event in events:
        request = received[event.public_id]
        assert request.verified
        assert request.json == event_object(event)
        assert request.headers["content-type"] == "application/json"
        assert request.headers["user-agent"] == USER_AGENT
        assert request.headers["host"] == f"127.0.0.1:{webhook_receiver.port}"
        assert sent_from <= int(request.headers["webhook-timestamp"]) <= sent_by
        assert len(request.signatures) == 1 and request.signatures[0].startswith("v1,")
    for delivery in deliveries_of(endpoint):
        assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == (
            DeliveryStatus.SUCCEEDED,
            1,
            None,
        )
        [attempt] = delivery.log.all()
        assert attempt.status_code == 200 and attempt.error == ""
        assert attempt.response_excerpt == '{"ok": true}'
        assert 0 <= attempt.duration_ms <= took_ms
    endpoint.refresh_from_db()
    assert endpoint.last_success_at is not None and endpoint.failing_since is None


def test_only_due_pending_deliveries_of_that_endpoint_are_sent(
    alice, bob, endpoint, start_receiver
):
    other = start_receiver()
    bobs = make_endpoint(bob, other.url())
    emit(alice, 2)
    emit(bob, 2)
    later = deliveries_of(endpoint)[1]
    Delivery.objects.filter(pk=later.pk).update(next_attempt_at=timezone.now() + timedelta(hours=1))

    assert send_due_deliveries_of(endpoint.pk) == 1
    assert send_due_deliveries_of(endpoint.pk) == 0  # sent ones are not sent again

    assert other.received == []
    assert {d.status for d in deliveries_of(bobs)} == {DeliveryStatus.PENDING}


def test_a_disabled_or_deleted_endpoint_is_not_called(alice, endpoint, webhook_receiver):
    emit(alice, 1)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    assert send_due_deliveries_of(endpoint.pk) == 0
    endpoint.delete()
    assert send_due_deliveries_of(endpoint.pk) == 0
    assert webhook_receiver.received == []


# --- failures and the retry schedule ------------------------------------------------------------


def test_a_500_then_200_is_retried_on_schedule_and_every_attempt_is_logged(
    clock, alice, endpoint, webhook_receiver
):
    webhook_receiver.answer(500, 503)
    [event] = emit(alice)
    DBTaskResult.objects.all().delete()  # as if its task were running

    assert send_due_deliveries_of(endpoint.pk) == 1
    [delivery] = deliveries_of(endpoint)
    first_failure = delivery.log.get().at
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
    assert_due_in(delivery, seconds=5)
    endpoint.refresh_from_db()
    assert endpoint.failing_since == first_failure and endpoint.last_success_at is None
    # A task waits for the retry: it is made on time, not at the next sweep.
    assert delivery.next_attempt_at in [t.run_after for t in queued_sends(endpoint)]

    assert send_due_deliveries_of(endpoint.pk) == 0  # not due yet
    clock.shift(timedelta(seconds=5))
    assert send_due_deliveries_of(endpoint.pk) == 1
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert_due_in(delivery, seconds=300)

    clock.shift(timedelta(seconds=299))
    assert send_due_deliveries_of(endpoint.pk) == 0
    clock.shift(timedelta(seconds=1))
    assert send_due_deliveries_of(endpoint.pk) == 1

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SUCCEEDED, 3)
    assert [(a.status_code, a.response_excerpt) for a in delivery.log.all()] == [
        (500, '{"error": "try later"}'),
        (503, '{"error": "try later"}'),
        (200, '{"ok": true}'),
    ]
    assert [r.id for r in webhook_receiver.received] == [event.public_id] * 3
    assert all(r.verified for r in webhook_receiver.received)
    endpoint.refresh_from_db()
    assert endpoint.failing_since is None and endpoint.last_success_at is not None


def assert_due_in(delivery: Delivery, *, seconds: float) -> None:
    [*_, last] = delivery.log.all()
    waited = (delivery.next_attempt_at - last.at).total_seconds()
    # Never before its backoff; the upper bound only tells this step from the next one.
    assert seconds <= waited < seconds + 60, waited


def test_after_the_last_retry_the_delivery_is_failed(
    settings, clock, alice, endpoint, webhook_receiver
):
    settings.WEBHOOK_RETRY_SCHEDULE = [1, 2]
    webhook_receiver.answer(then=500)
    emit(alice)

    for wait in (0, 1, 2):
        clock.shift(timedelta(seconds=wait))
        assert send_due_deliveries_of(endpoint.pk) == 1
    clock.shift(timedelta(hours=1))
    assert send_due_deliveries_of(endpoint.pk) == 0

    [delivery] = deliveries_of(endpoint)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == (
        DeliveryStatus.FAILED,
        3,
        None,
    )
    assert [a.status_code for a in delivery.log.all()] == [500, 500, 500]


@pytest.mark.parametrize("status", [301, 302, 307, 308, 404, 410])
def test_a_redirect_or_other_non_2xx_is_a_failure_and_is_not_followed(
    alice, endpoint, webhook_receiver, status
):
    webhook_receiver.answer(status)
    emit(alice)

    send_due_deliveries_of(endpoint.pk)

    [delivery] = deliveries_of(endpoint)
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
    assert delivery.log.get().status_code == status
    assert len(webhook_receiver.received) == 1  # the Location was not visited


def test_an_unreachable_endpoint_is_a_logged_failure(alice, webhook_receiver):
    webhook_receiver.stop()  # nothing listens on its port any more
    endpoint = make_endpoint(alice, webhook_receiver.url())
    emit(alice)

    assert send_due_deliveries_of(endpoint.pk) == 1

    [delivery] = deliveries_of(endpoint)
    attempt = delivery.log.get()
    assert attempt.status_code is None and "ConnectionRefusedError" in attempt.error
    assert delivery.status == DeliveryStatus.PENDING
    endpoint.refresh_from_db()
    assert endpoint.paused_until is None  # refused at once: no worker was held


# --- endpoint health ----------------------------------------------------------------------------


def test_an_endpoint_failing_for_5_days_without_success_is_disabled(
    settings, clock, alice, endpoint, webhook_receiver
):
    settings.WEBHOOK_RETRY_SCHEDULE = [60 * 60 * 24 * 10]  # no retry inside the test
    webhook_receiver.answer(200, then=500)
    emit(alice)
    send_due_deliveries_of(endpoint.pk)  # a success, then failures from here on
    emit(alice)
    send_due_deliveries_of(endpoint.pk)
    endpoint.refresh_from_db()
    failing_since = endpoint.failing_since
    assert failing_since is not None and endpoint.enabled

    clock.shift(timedelta(days=5) - timedelta(minutes=1))
    emit(alice)
    send_due_deliveries_of(endpoint.pk)
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.failing_since == failing_since  # 4 days 23:59

    clock.shift(timedelta(minutes=1))
    emit(alice, 2)
    assert send_due_deliveries_of(endpoint.pk) == 1  # the first failure disables it

    endpoint.refresh_from_db()
    assert not endpoint.enabled
    assert endpoint.disabled_reason == "Disabled after 5 days without a successful delivery."
    statuses = [d.status for d in deliveries_of(endpoint)]
    assert statuses == [DeliveryStatus.SUCCEEDED] + [DeliveryStatus.FAILED] * 4
    assert Delivery.objects.filter(endpoint=endpoint, next_attempt_at__isnull=False).count() == 0
    emit(alice)
    assert len(deliveries_of(endpoint)) == 5  # no new deliveries to a disabled endpoint


def test_a_failure_while_its_owner_switched_it_off_waits_for_it_to_be_back(
    alice, endpoint, webhook_receiver, monkeypatch
):
    from events import delivery as sending

    real_start = sending.start

    def attempt_then_switched_off(request):
        attempt = real_start(request)
        attempt.result()  # answered: its owner switches the endpoint off before it is recorded
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
        return attempt

    monkeypatch.setattr(sending, "start", attempt_then_switched_off)
    webhook_receiver.answer(500)
    emit(alice, 2)

    assert send_due_deliveries_of(endpoint.pk) == 1

    first, second = deliveries_of(endpoint)
    assert first.status == DeliveryStatus.PENDING and first.next_attempt_at is not None
    assert second.status == DeliveryStatus.PENDING and second.attempts == 0
    endpoint.refresh_from_db()
    assert endpoint.disabled_reason == ""  # its owner's choice, not ours


# --- concurrency: several senders of one endpoint -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_tasks_of_one_endpoint_send_each_delivery_once(
    alice, endpoint, webhook_receiver
):
    events = emit(alice, 200)
    webhook_receiver.slow(0.002)
    counts = []
    threads = [
        threading.Thread(
            target=in_own_connection,
            args=(lambda: counts.append(send_due_deliveries_of(endpoint.pk)),),
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(counts) == 200  # the senders claimed side by side
    assert sorted(webhook_receiver.ids()) == sorted(public_ids(events))  # each exactly once
    assert all(r.verified for r in webhook_receiver.received)
    assert {d.status for d in deliveries_of(endpoint)} == {DeliveryStatus.SUCCEEDED}


# --- many in flight: a sender's room, an endpoint's share, a drop's order -----------------------


def answered_before(endpoint: WebhookEndpoint) -> None:
    """As if the endpoint had answered 2xx before: it may have WEBHOOK_PER_ENDPOINT at once."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(last_success_at=timezone.now())


def most_at_once(arrivals: list[float], held: float) -> int:
    """The most requests in flight together, each held `held` s by its receiver: those that
    arrived within less than that of one another were all in flight at once."""
    arrivals = sorted(arrivals)
    return max(
        sum(1 for other in arrivals if first <= other < first + held * 0.75) for first in arrivals
    )


def test_an_endpoint_has_one_attempt_in_flight_until_it_answers_then_five(
    alice, endpoint, webhook_receiver
):
    webhook_receiver.slow(0.4)
    emit(alice, 11)

    assert send_due_deliveries_of(endpoint.pk) == 11

    arrivals = sorted(r.arrived for r in webhook_receiver.received)
    assert arrivals[1] - arrivals[0] >= 0.4  # the second waited for the first answer
    assert most_at_once(arrivals, 0.4) == 5  # then WEBHOOK_PER_ENDPOINT at once, no more
    assert {d.status for d in deliveries_of(endpoint)} == {DeliveryStatus.SUCCEEDED}


def test_a_sender_keeps_at_most_webhook_concurrency_in_flight(settings, alice, start_receiver):
    settings.WEBHOOK_CONCURRENCY = 3
    receivers = [start_receiver().slow(0.4) for _ in range(2)]
    for receiver in receivers:
        endpoint = make_endpoint(alice, receiver.url())
        receiver.trust(endpoint.secret)
        answered_before(endpoint)
    emit(alice, 5)

    assert send_due_deliveries_of(endpoint.pk) == 10

    arrivals = [r.arrived for receiver in receivers for r in receiver.received]
    assert most_at_once(arrivals, 0.4) == 3
    assert all(r.verified for receiver in receivers for r in receiver.received)


def test_a_drops_deliveries_go_one_at_a_time_in_order_beside_the_others(
    alice, endpoint, webhook_receiver
):
    answered_before(endpoint)
    webhook_receiver.slow(0.3)
    with transaction.atomic():
        events = record_events(
            business_id=alice.business.pk,
            environment="sandbox",
            event_type=EventType.ORDER_STATUS_CHANGED,
            payloads=[{"drop_id": drop, "n": n} for n, drop in enumerate("ABACA")],
            at=timezone.now(),
        )

    assert send_due_deliveries_of(endpoint.pk) == 5

    arrived = {r.id: r.arrived for r in webhook_receiver.received}
    a1, b, a2, c, a3 = (arrived[event.public_id] for event in events)
    assert a1 < a2 < a3  # the drop's in order, each after the answer to the one before
    assert a2 - a1 >= 0.3 and a3 - a2 >= 0.3
    assert abs(b - a1) < 0.25 and abs(c - a1) < 0.25  # the other drops' beside the first


@pytest.mark.django_db(transaction=True)
def test_a_sender_sends_to_each_endpoint_of_its_business_at_once(alice, start_receiver):
    first, second = start_receiver().slow(0.5), start_receiver()
    slow = make_endpoint(alice, first.url(), types=[EventType.BATCH_CREATED])
    fast = make_endpoint(alice, second.url(), types=[EventType.ORDER_STATUS_CHANGED])
    slow_events = emit(alice, 4)
    emit(alice, 20, type=EventType.ORDER_STATUS_CHANGED)
    DBTaskResult.objects.all().delete()

    assert send_due_deliveries_of(slow.pk) == 24  # one task: the business's due deliveries

    # The slow one's first alone (it has not answered yet), then its other three at once;
    # the fast one's twenty beside them, all in before the slow one's last.
    assert second.received[-1].arrived < first.received[-1].arrived
    assert sorted(first.ids()) == sorted(public_ids(slow_events))
    assert first.ids()[0] == slow_events[0].public_id
    assert len(second.received) == 20 and not queued_sends(fast)


# --- a hanging endpoint ------------------------------------------------------------------------


def test_a_timeout_stops_the_task_and_pauses_the_endpoint(settings, alice, start_receiver):
    # The mechanics, with a 1 s timeout; the real 10 s one runs against real workers
    # (test_worker_deliveries.py).
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    hanging = start_receiver().hang()
    stuck = make_endpoint(alice, hanging.url())
    emit(alice, 3)

    started = time.monotonic()
    assert send_due_deliveries_of(stuck.pk) == 1  # stopped at the first timeout
    took = time.monotonic() - started
    # It waited the timeout out; far less than the 10 s default or the receiver's hang.
    assert 1 <= took < 6

    attempt = Delivery.objects.get(endpoint=stuck, attempts=1).log.get()
    assert attempt.status_code is None and attempt.error == "Timed out after 1 s."
    assert 1000 <= attempt.duration_ms <= took * 1000
    # Paused (the retry schedule's first step, 5 s): another task for it returns without an
    # attempt, holding no worker; its events wait, due.
    stuck.refresh_from_db()
    assert stuck.paused_until >= attempt.at + timedelta(seconds=5)
    emit(alice, 2)
    DBTaskResult.objects.all().delete()
    assert send_due_deliveries_of(stuck.pk) == 0
    assert len(hanging.received) == 1
    assert Delivery.objects.filter(endpoint=stuck, attempts=0).count() == 4
    # When the pause ends a task is waiting to go on.
    assert stuck.paused_until in [t.run_after for t in queued_sends(stuck)]


def test_a_test_or_resend_during_a_pause_is_sent_when_it_ends_not_before(
    clock, alice, endpoint, webhook_receiver
):
    [old] = emit(alice)
    pause_ends = timezone.now() + timedelta(minutes=2)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(paused_until=pause_ends)
    test = send_test_event(endpoint=endpoint, at=timezone.now())
    resend_delivery(delivery=deliveries_of(endpoint)[0], at=timezone.now())

    assert send_due_deliveries_of(endpoint.pk) == 0  # asked for, but the pause holds
    assert webhook_receiver.received == []
    clock.shift(timedelta(minutes=2))
    assert send_due_deliveries_of(endpoint.pk) == 2  # then in creation order
    assert webhook_receiver.ids() == [old.public_id, test.public_id]


def test_each_timed_out_probe_about_doubles_the_pause(settings, clock, alice, endpoint):
    from events.delivery import record
    from events.transport import Outcome

    settings.WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800, 7200]
    emit(alice, 6)
    pauses = []
    for delivery in deliveries_of(endpoint):
        timed_out = Outcome(at=timezone.now(), duration_ms=10_000, error="x", timed_out=True)
        clock.shift(timedelta(seconds=10))  # the hang itself
        record(delivery_id=delivery.pk, endpoint_id=endpoint.pk, outcome=timed_out)
        endpoint.refresh_from_db()
        pause = (endpoint.paused_until - timezone.now()).total_seconds()
        pauses.append(round(pause))
        clock.shift(timedelta(seconds=pause))
    # Failing for that long, at least 5 s, at most 5 min: nothing else ends a pause.
    assert pauses == [10, 30, 70, 150, 300, 300]


# --- SSRF at delivery ---------------------------------------------------------------------------


INTERNAL = [
    "http://127.0.0.1:{port}/hooks",
    "http://10.0.0.1/hooks",
    "http://[::1]:{port}/hooks",
    "https://169.254.169.254/latest/meta-data",
    "https://localhost:{port}/hooks",  # a name that resolves to loopback
    "https://127.0.0.1:{port}/hooks",
    "https://10.0.0.1/hooks",
    "https://[::1]:{port}/hooks",
]


@pytest.mark.parametrize("url", INTERNAL)
def test_internal_addresses_are_refused_at_delivery_in_production(
    settings, alice, webhook_receiver, url
):
    from events.ssrf import UnsafeUrl, check_url

    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    url = url.format(port=webhook_receiver.port)
    with pytest.raises(UnsafeUrl):
        check_url(url)  # refused at save (the API's check)
    # Saved anyway (say, before the rule, or the name resolved elsewhere then):
    endpoint = make_endpoint(alice, url)
    emit(alice)

    assert send_due_deliveries_of(endpoint.pk) == 1

    attempt = deliveries_of(endpoint)[0].log.get()
    assert attempt.status_code is None and attempt.error.startswith("Refused: ")
    assert webhook_receiver.received == []  # no connection was made


def test_a_name_that_rebinds_to_loopback_after_the_save_check_is_refused(
    settings, alice, webhook_receiver, monkeypatch
):
    from events.ssrf import check_url

    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    url = f"https://rebind.example:{webhook_receiver.port}/hooks"
    answers = iter(["93.184.216.34", "127.0.0.1"])  # public at save, loopback at delivery
    fake_dns(monkeypatch, {"rebind.example": lambda: next(answers)})
    check_url(url)
    endpoint = make_endpoint(alice, url)
    emit(alice)

    send_due_deliveries_of(endpoint.pk)

    attempt = deliveries_of(endpoint)[0].log.get()
    assert attempt.error.startswith("Refused: ") and webhook_receiver.received == []


def test_the_address_connected_to_is_the_address_checked(alice, webhook_receiver, monkeypatch):
    # The first lookup answers the receiver's address, any later one an address where
    # nothing listens: a delivery that looked the name up again would fail.
    lookups = []

    def answer():
        lookups.append(1)
        return "127.0.0.1" if len(lookups) == 1 else "127.0.0.2"

    fake_dns(monkeypatch, {"hooks.example": answer})
    endpoint = make_endpoint(alice, f"http://hooks.example:{webhook_receiver.port}/in?x=1")
    webhook_receiver.trust(endpoint.secret)
    emit(alice)

    send_due_deliveries_of(endpoint.pk)

    assert len(lookups) == 1
    [request] = webhook_receiver.received
    assert request.verified and request.path == "/in?x=1"
    assert request.headers["host"] == f"hooks.example:{webhook_receiver.port}"


def test_https_goes_to_the_checked_address_with_the_urls_name_for_sni_and_certificate(
    alice, start_receiver, monkeypatch, tmp_path
):
    from tests.events.tls import certificate_authority

    ca = certificate_authority(tmp_path)
    receiver = start_receiver(tls=ca.server_context("hooks.example"))
    monkeypatch.setattr("events.transport.tls_context", ca.client_context)
    loopback = lambda: "127.0.0.1"  # noqa: E731
    fake_dns(monkeypatch, {"hooks.example": loopback, "other.example": loopback})
    good = make_endpoint(alice, receiver.url(host="hooks.example"))
    receiver.trust(good.secret)
    emit(alice)
    send_due_deliveries_of(good.pk)
    [request] = receiver.received
    assert request.verified and request.headers["host"] == f"hooks.example:{receiver.port}"
    assert deliveries_of(good)[0].status == DeliveryStatus.SUCCEEDED

    # The certificate names hooks.example: the same address under another name is refused.
    good.delete()
    wrong = make_endpoint(alice, receiver.url(host="other.example"))
    emit(alice)
    send_due_deliveries_of(wrong.pk)
    attempt = deliveries_of(wrong)[0].log.get()
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.error and len(receiver.received) == 1


def fake_dns(monkeypatch, names: dict) -> None:
    """socket.getaddrinfo answering these names with the address each callable returns."""
    import socket

    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in names:
            address = names[host]()
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


# --- rotating the secret ------------------------------------------------------------------------


def test_after_a_rotation_both_secrets_sign_for_24h_then_only_the_new_one(
    clock, alice, endpoint, webhook_receiver
):
    old = endpoint.secret
    new = rotate_secret(endpoint=endpoint, at=timezone.now()).secret
    webhook_receiver.trust(new)  # a receiver that already switched to the new secret
    emit(alice)
    clock.shift(timedelta(hours=23, minutes=59))
    emit(alice)
    send_due_deliveries_of(endpoint.pk)
    clock.shift(timedelta(minutes=1, seconds=1))
    emit(alice)
    send_due_deliveries_of(endpoint.pk)

    first, just_before, after = webhook_receiver.wait_for(3)
    for request in (first, just_before):
        assert request.verified and len(request.signatures) == 2
        assert request.signed_by(new) and request.signed_by(old)
    assert after.verified and len(after.signatures) == 1
    assert after.signed_by(new) and not after.signed_by(old)


# --- a worker killed mid-delivery, and the sweep ------------------------------------------------


def test_a_delivery_claimed_by_a_worker_that_died_is_sent_after_its_lease(
    clock, alice, endpoint, webhook_receiver
):
    [event] = emit(alice)
    [claimed] = claim_due(endpoint_id=endpoint.pk, limit=50)  # a sender claims, and is killed
    DBTaskResult.objects.all().delete()

    assert send_due_deliveries_of(endpoint.pk) == 0  # leased: not sent twice meanwhile
    [at_lease_end] = queued_sends(endpoint)  # a task is asked for when the lease ends...
    assert at_lease_end.run_after == Delivery.objects.get(pk=claimed.pk).next_attempt_at
    at_lease_end.delete()  # ...and were it lost, the sweep still finds the delivery
    assert sweep_deliveries.call() == 0
    clock.shift(timedelta(seconds=lease_seconds()))
    assert sweep_deliveries.call() == 1  # due again: a task is asked for

    [task] = queued_sends(endpoint)
    assert task.task.call(*task.args_kwargs["args"]) == 1
    assert webhook_receiver.ids() == [event.public_id]
    assert Delivery.objects.get(pk=claimed.pk).status == DeliveryStatus.SUCCEEDED


def test_the_sweep_asks_one_task_per_endpoint_with_due_deliveries_and_none_queued(
    alice, bob, start_receiver
):
    url = start_receiver().url()
    queued = make_endpoint(alice, url)
    unqueued = make_endpoint(alice, url, types=[EventType.ORDER_STATUS_CHANGED])
    paused = make_endpoint(bob, url)
    disabled = make_endpoint(bob, url, types=[EventType.ORDER_STATUS_CHANGED])
    nothing_due = make_endpoint(bob, url, environment="live")
    emit(alice, 3)
    emit(alice, 2, type=EventType.ORDER_STATUS_CHANGED)
    emit(bob, 2)
    emit(bob, 2, type=EventType.ORDER_STATUS_CHANGED)
    DBTaskResult.objects.exclude(args_kwargs__args=[str(queued.pk)]).delete()
    WebhookEndpoint.objects.filter(pk=paused.pk).update(
        paused_until=timezone.now() + timedelta(minutes=1)
    )
    WebhookEndpoint.objects.filter(pk=disabled.pk).update(enabled=False)
    already = queued_sends(queued)

    assert sweep_deliveries.call() == 1

    assert queued_sends(queued) == already  # its task will send them: none added
    assert len(queued_sends(unqueued)) == 1
    assert queued_sends(paused) == queued_sends(disabled) == queued_sends(nothing_due) == []
    assert sweep_deliveries.call() == 0  # now each has its task


# --- retention ----------------------------------------------------------------------------------


def test_events_older_than_the_retention_go_with_their_deliveries_and_log(
    settings, clock, alice, endpoint, webhook_receiver
):
    settings.EVENT_RETENTION_DAYS = 30
    old = emit(alice, 3)
    send_due_deliveries_of(endpoint.pk)
    clock.shift(timedelta(days=29))
    kept = emit(alice, 2)
    send_due_deliveries_of(endpoint.pk)
    clock.shift(timedelta(days=1, seconds=1))

    assert purge_old_events.call() == 3

    assert list(Event.objects.order_by("seq")) == kept
    assert Delivery.objects.count() == 2
    assert sum(d.log.count() for d in deliveries_of(endpoint)) == 2
    assert not Event.objects.filter(pk__in=[e.pk for e in old]).exists()
    assert purge_old_events.call() == 0


def test_operators_can_purge_by_hand(clock, alice, endpoint):
    emit(alice, 2)
    clock.shift(timedelta(days=31))
    out = StringIO()

    call_command("purge_old_events", stdout=out)

    assert out.getvalue().startswith("Purged 2 event(s) older than ")
    assert not Event.objects.exists() and not Delivery.objects.exists()
