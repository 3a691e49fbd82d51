"""Sending the messages collected (notifications/collect.py): claim, throttle, send, record.

At most once (docs/notifications.md, "Guarantees"): a claim marks messages SENDING for a
lease and commits before anything goes out; the outcome is recorded after. A worker killed
mid-send leaves its messages SENDING; once their lease has run out `expire_claims` marks them
FAILED ("may have been sent"), and they are never sent again. A failure that surely left a
message unsent (a refused connection, SMTP 4xx, HTTP 429 or 5xx) is tried again, up to
NOTIFY_MAX_ATTEMPTS.

The throttle: at most NOTIFY_PER_RECIPIENT_PER_HOUR messages to one address (per channel and
environment) in any hour, counted when they are claimed; the rest are THROTTLED, not
delayed (a late "courier nearby" is worse than none). Claims of one address are serialised by
an advisory lock per address held for the claim's short transaction, so two workers never
both pass the same count. Sandbox messages are claimed and counted like live ones, then
logged SANDBOX and never sent.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction

from accounts.models import Environment
from core import stopping
from notifications.channels import Outcome, Outgoing, sender_for
from notifications.models import Channel, Message, MessageStatus
from notifications.optout import is_suppressed, suppressed_among, unsubscribe_url

# Messages per claim. Outcomes are recorded per claim (one statement), so a worker killed
# mid-claim leaves at most this many FAILED as "may have been sent", some never tried.
CLAIM_AT_MOST = 20
# A run claims nothing new after this; the periodic job's next run goes on.
SEND_BUDGET_SECONDS = 30
# A message is retried this long after a failure that left it unsent, times its attempts.
RETRY_AFTER = timedelta(minutes=1)
_COUNTED = (MessageStatus.SENDING, MessageStatus.SENT, MessageStatus.SANDBOX)


def lease() -> timedelta:
    """Longer than sending a claim's messages can take (each within its timeout)."""
    return timedelta(seconds=CLAIM_AT_MOST * settings.NOTIFY_TIMEOUT_SECONDS + 60)


def send_due() -> int:
    """Claim and send due messages, a claim at a time, until none is due or SEND_BUDGET is
    spent (the next run goes on); how many were claimed (sent, logged for sandbox,
    throttled or failed)."""
    total, started = 0, time.monotonic()
    # A worker asked to stop (core/stopping.py) finishes the claim under way, no more.
    while (
        not stopping.requested.is_set()
        and time.monotonic() - started < SEND_BUDGET_SECONDS
        and (claimed := claim(now=timezone.now()))
    ):
        total += len(claimed)
        sending = [m for m in claimed if m.status == MessageStatus.SENDING]
        by_channel = defaultdict(list)
        for message in sending:
            by_channel[message.channel].append(message)
        for channel, messages in by_channel.items():
            outgoing = [_outgoing(m) for m in messages]
            record(messages, sender_for(channel).send(outgoing))
    return total


def _outgoing(message: Message) -> Outgoing:
    link = unsubscribe_url(message) if message.channel == Channel.EMAIL else ""
    return Outgoing(message.to, message.subject, message.body, unsubscribe_url=link)


def claim(*, now: datetime) -> list[Message]:
    """Take up to CLAIM_AT_MOST due messages: each is then SENDING (to send now), SANDBOX,
    SUPPRESSED (its recipient asked the business to stop: notifications.optout) or
    THROTTLED. One short transaction: the rows (SKIP LOCKED), the recipients' locks, one
    count of their last hour, one update."""
    with exclusive_transaction():  # on SQLite, which ignores FOR UPDATE: one claimer at a time
        messages = list(
            Message.objects.select_for_update(skip_locked=True)
            .filter(status__among=(MessageStatus.PENDING,), next_attempt_at__lte=now)
            .order_by("id")[:CLAIM_AT_MOST]
        )
        if not messages:
            return []
        recipients = {_recipient(m) for m in messages}
        _lock_recipients(recipients)
        sent = _sent_last_hour(recipients, now)
        allowed = settings.NOTIFY_PER_RECIPIENT_PER_HOUR
        suppressed = suppressed_among(messages)
        for message in messages:
            key = _recipient(message)
            message.claimed_at, message.attempts = now, message.attempts + 1
            if is_suppressed(message, suppressed):
                message.status, message.next_attempt_at = MessageStatus.SUPPRESSED, None
                message.error = "The recipient asked this business to stop messages."
                continue
            if sent[key] >= allowed:
                message.status, message.next_attempt_at = MessageStatus.THROTTLED, None
                message.error = f"The recipient had {allowed} messages in the last hour."
                continue
            sent[key] += 1
            if message.environment == Environment.SANDBOX:
                message.status, message.next_attempt_at = MessageStatus.SANDBOX, None
            else:
                message.status, message.next_attempt_at = MessageStatus.SENDING, None
                message.claimed_until = now + lease()
        Message.objects.bulk_update(
            messages,
            ["status", "attempts", "error", "claimed_at", "claimed_until", "next_attempt_at"],
        )
    return messages


def _recipient(message: Message) -> tuple[str, str, str]:
    return (message.environment, message.channel, message.to)


def _lock_recipients(recipients: set[tuple[str, str, str]]) -> None:
    """Until commit, the lock of each recipient's count, in a fixed order (no deadlock)."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    keys = sorted({_lock_key(recipient) for recipient in recipients})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k", [keys]
        )


def _lock_key(recipient: tuple[str, str, str]) -> int:
    digest = hashlib.blake2b(("notify:" + ":".join(recipient)).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def _sent_last_hour(recipients: set[tuple[str, str, str]], now: datetime) -> Counter:
    """How many messages each recipient was sent (or is being sent) in the hour before now."""
    counts = (
        Message.objects.filter(
            to__in={to for _, _, to in recipients},
            status__in=_COUNTED,
            claimed_at__gt=now - timedelta(hours=1),
        )
        .values_list("environment", "channel", "to")
        .annotate(count=Count("id"))
    )
    return Counter({(env, channel, to): count for env, channel, to, count in counts})


def record(messages: list[Message], outcomes: list[Outcome]) -> None:
    """Each message's outcome, in one statement; only messages still SENDING under their
    claim are written (one expired meanwhile stays as `expire_claims` left it)."""
    now = timezone.now()
    for message, outcome in zip(messages, outcomes, strict=True):
        message.claimed_until = None
        if outcome.sent:
            message.status, message.sent_at, message.error = MessageStatus.SENT, now, ""
        elif outcome.retry and message.attempts < settings.NOTIFY_MAX_ATTEMPTS:
            message.status, message.error = MessageStatus.PENDING, outcome.error
            message.next_attempt_at = now + RETRY_AFTER * message.attempts
        else:
            message.status, message.error = MessageStatus.FAILED, outcome.error
    with transaction.atomic():
        still_ours = set(
            Message.objects.select_for_update()
            .filter(pk__in=[m.pk for m in messages], status=MessageStatus.SENDING)
            .values_list("pk", flat=True)
        )
        Message.objects.bulk_update(
            [m for m in messages if m.pk in still_ours],
            ["status", "sent_at", "error", "next_attempt_at", "claimed_until"],
        )


def expire_claims(*, now: datetime) -> int:
    """Messages whose worker stopped mid-send (their lease ran out): FAILED, never resent."""
    sending = Message.objects.filter(status__among=(MessageStatus.SENDING,), claimed_until__lt=now)
    return sending.update(
        status=MessageStatus.FAILED,
        claimed_until=None,
        error="The worker stopped while sending; it may have been sent, so it is not sent "
        "again (at most once).",
    )
