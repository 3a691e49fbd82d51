"""Notifications sent by real `manage.py db_worker` processes (tests/workers.py): the periodic
job found by the workers' scheduler, and a worker killed -9 while an SMS is on the wire."""

from __future__ import annotations

import pytest
from django.utils import timezone

from notifications.models import Kind, Message, MessageStatus
from notifications.sending import expire_claims, lease
from notifications.tasks import notify_recipients
from tests.notifications.conftest import form_of, sms_env, switch_on
from tests.notifications.helpers import place, walk_live
from tests.reliability.batch_hold import open_all_day
from tests.reliability.gunicorn_server import wait_for
from tests.workers import db_worker, wait_for_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shop(make_tenant):
    """A live account in an area open at any real hour (the workers run on the real clock)."""
    open_all_day()
    return make_tenant(name="Worker Shop", live_balance="100.00")


def test_the_workers_scheduler_runs_the_job_and_the_recipient_gets_the_sms(
    shop, api, webhook_receiver, tmp_path
):
    switch_on(shop, "live", Kind.DELIVERED)
    walk_live(place(api, shop.live_key, "W-1", phone="+85512000111"))
    with db_worker(tmp_path / "worker.log", scheduler=True, env=sms_env(webhook_receiver)):
        [request] = webhook_receiver.wait_for(1, timeout=60)
        wait_for(
            "the message recorded as sent",
            lambda: Message.objects.filter(status=MessageStatus.SENT).exists(),
        )
    assert form_of(request)["To"] == "+85512000111"
    assert form_of(request)["Body"] == "Worker Shop: your order W-1 was delivered. Thank you!"
    assert Message.objects.count() == 1


def test_a_worker_killed_mid_send_leaves_a_claim_that_is_failed_and_never_resent(
    shop, api, webhook_receiver, tmp_path
):
    switch_on(shop, "live", Kind.DELIVERED)
    walk_live(place(api, shop.live_key, "K-1"))
    webhook_receiver.hang()  # the provider takes the request and never answers
    with db_worker(tmp_path / "killed.log", env=sms_env(webhook_receiver)) as worker:
        notify_recipients.enqueue()
        webhook_receiver.wait_for(1, timeout=60)
        worker.kill()
    [message] = Message.objects.all()
    assert message.status == MessageStatus.SENDING  # claimed, committed before the send
    webhook_receiver.release()

    assert expire_claims(now=timezone.now() + 2 * lease()) == 1
    with db_worker(tmp_path / "next.log", env=sms_env(webhook_receiver)):
        result = notify_recipients.enqueue()
        assert wait_for_task(result.id).status == "SUCCESSFUL"
    message.refresh_from_db()
    assert message.status == MessageStatus.FAILED and "at most once" in message.error
    assert len(webhook_receiver.received) == 1  # at most once: never sent again
