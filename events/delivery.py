"""Sending webhook deliveries (docs/contract.md §11): claim, send outside any transaction, record.

A business's due deliveries are sent by one sender at a time, its turn, as Standard
Webhooks, each endpoint's in creation order. The delivery rows are the source of truth:
claiming one only moves its `next_attempt_at` a lease ahead, so a worker killed mid-send
leaves it due again when the lease runs out, and the sweep (events.tasks.sweep_deliveries)
asks a new worker to send it. Delivery is therefore at least once; receivers deduplicate
on `webhook-id`.

A send to a receiver that never answers takes WEBHOOK_TIMEOUT_SECONDS, so (docs/webhooks.md,
"How we send"; docs/decisions.md, "A business holds at most one worker: its turn, one
thread per endpoint"):
- a business holds one worker at most: a task takes its business's turn (`_take_turn`,
  one statement under a per-business lock, leased like a claim) or returns at once;
- in its turn the sender sends to each of the business's due endpoints at once, one
  thread per endpoint (`_Sender`), and looks every POLL_SECONDS for endpoints that became
  due, so a hanging endpoint never delays the business's other endpoints;
- an endpoint's thread stops at its first timeout and pauses the endpoint (`_pause_for`):
  its next attempt, one probe, waits for the pause to end whatever is asked meanwhile;
- the turn starts no attempt after `send_budget()`; when it ends (`_end_turn`) it asks
  for the task that goes on, at the back of the queue if deliveries are due.
So a business whose receivers all hang holds one worker; the others deliver on the rest.
Run more workers than the businesses you expect to hang at the same time.

This module sends and says what comes next (`Sent.next_tasks`); events.tasks enqueues it.
Each attempt over the wire (signing, the pinned connection, the deadline) is
events/transport.py's.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, Min, OuterRef
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction

from core import stopping
from events.models import Delivery, DeliveryAttempt, DeliveryStatus, WebhookEndpoint
from events.transport import ERROR_CHARS, Outcome, attempt

# The pending deliveries, as the partial indexes delivery_due and delivery_queue name them:
# written into the SQL (core.lookups.Among), so a prepared statement's plan can use them.
PENDING = (DeliveryStatus.PENDING,)

BATCH_SIZE = 50  # deliveries claimed at a time
# How often a sender in its turn looks for its business's endpoints that became due.
POLL_SECONDS = 0.25
# A timed-out endpoint's pause grows with each timed-out probe up to this (`_pause_for`).
LONGEST_PAUSE = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class NextTask:
    """A send task to ask for: `at` None is now, at the back of the queue."""

    endpoint_id: object
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Sent:
    """What one task's sending came to: attempts made, and the tasks that go on from it."""

    attempted: int
    next_tasks: tuple[NextTask, ...]


def send_due(endpoint_id) -> Sent:
    """Send the due deliveries of this endpoint's business, in one turn; the attempts made
    and the task that goes on.

    A task refused the turn (`_take_turn`: its business's sender is running) returns at
    once: that sender sees the endpoint's deliveries when it next looks. The task that goes
    on (`_end_turn`): now, at the back of the queue, if deliveries are due (the budget ran
    out, or they came as the turn ended); else when the business's next one is due.
    """
    turn = _take_turn(endpoint_id)
    if turn is None:
        return Sent(0, ())
    sender = _Sender(business_id=turn[0], lease=turn[1], started=time.monotonic())
    try:
        sender.run()
    finally:
        sender.join()
        next_task = _end_turn(sender.business_id, sender.lease)
    return Sent(sender.attempted, () if next_task is None else (next_task,))


def _take_turn(endpoint_id) -> tuple[object, datetime] | None:
    """Take the turn of the endpoint's business: (its id, the turn's lease), or None if
    another sender holds it (or the endpoint is gone).

    The turn is every endpoint of the business marked `sending_until` the lease; it lasts
    until `_end_turn` or the lease, whichever is first, and the sender renews it while it
    runs (`_renew_turn`), so a sender killed mid-turn holds it only until the lease ends.
    Checking and marking happen under a per-business lock held for this short transaction
    (`_lock_senders_of`), so two tasks of a business never both take it.
    """
    now = timezone.now()
    lease = now + timedelta(seconds=lease_seconds())
    with exclusive_transaction():  # on SQLite, which has no advisory lock: one at a time
        business_id = (
            WebhookEndpoint.objects.filter(pk=endpoint_id)
            .values_list("business_id", flat=True)
            .first()
        )
        if business_id is None:
            return None
        _lock_senders_of(business_id)
        endpoints = WebhookEndpoint.objects.filter(business_id=business_id)
        if endpoints.filter(sending_until__gt=now).exists():
            return None
        endpoints.update(sending_until=lease)
    return business_id, lease


def _lock_senders_of(business_id) -> None:
    """Until commit, the lock that serialises taking and ending one business's turn."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"webhook-senders:{business_id}".encode(), digest_size=8)
    key = int.from_bytes(digest.digest(), "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def _renew_turn(business_id, lease: datetime) -> datetime | None:
    """The turn's new lease, or None if it is no longer ours (its lease ran out and another
    sender took it)."""
    renewed = timezone.now() + timedelta(seconds=lease_seconds())
    held = WebhookEndpoint.objects.filter(business_id=business_id, sending_until=lease)
    return renewed if held.update(sending_until=renewed) else None


def _end_turn(business_id, lease: datetime) -> NextTask | None:
    """Give the turn up (if still ours) and say which task goes on, if any.

    Under the lock that taking a turn holds: a task refused the turn before this saw its
    deliveries committed, so they are found here (no wake-up is lost); one after it takes
    the turn itself.
    """
    now = timezone.now()
    with exclusive_transaction():
        _lock_senders_of(business_id)
        WebhookEndpoint.objects.filter(business_id=business_id, sending_until=lease).update(
            sending_until=None
        )
        return _next_task(business_id, now)


def _next_task(business_id, now: datetime) -> NextTask | None:
    """The business's endpoint whose next delivery is due first (its pause counted): now,
    or when it is due; None if nothing is pending."""
    pending = (
        WebhookEndpoint.objects.filter(
            business_id=business_id, enabled=True, deliveries__status__among=PENDING
        )
        .annotate(due=Min("deliveries__next_attempt_at"))
        .values_list("pk", "due", "paused_until")
    )
    times = [(max(due, paused or due), pk) for pk, due, paused in pending if due is not None]
    if not times:
        return None
    at, endpoint_id = min(times)
    return NextTask(endpoint_id, at=None if at <= now else at)


def _sendable(business_id) -> list:
    """The business's endpoints with due deliveries that can be sent now (on, not paused)."""
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status__among=PENDING, next_attempt_at__lte=now
    )
    return list(
        WebhookEndpoint.objects.filter(business_id=business_id, enabled=True)
        .exclude(paused_until__gt=now)
        .filter(Exists(due))
        .values_list("pk", flat=True)
    )


@dataclass
class _Sender:
    """One turn of one business: a thread per endpoint with due deliveries, at most one per
    endpoint, each sending its endpoint's deliveries in order with its own connection."""

    business_id: object
    lease: datetime
    started: float
    attempted: int = 0
    threads: dict[object, threading.Thread] = field(default_factory=dict)  # by endpoint id
    counting: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> None:
        """Until nothing is due or the budget is spent: start a thread for each endpoint
        that is due and has none, look again every POLL_SECONDS, keep the turn's lease."""
        # Inside a caller's transaction other connections cannot see its rows: send here.
        inline = connection.in_atomic_block
        renewed_at = time.monotonic()
        while not self.out_of_budget():
            due = [pk for pk in _sendable(self.business_id) if not self.sending(pk)]
            attempted = self.attempted
            for endpoint_id in due:
                self.start(endpoint_id, inline=inline)
            if not due and not self.sending():
                return
            if inline and self.attempted == attempted:
                return  # due but not claimable (another's lease or lock): the next task's
            time.sleep(0 if inline else POLL_SECONDS)
            if time.monotonic() - renewed_at >= 1:
                renewed_at, lease = time.monotonic(), _renew_turn(self.business_id, self.lease)
                if lease is None:
                    return  # the lease ran out and another sender has the turn
                self.lease = lease

    def sending(self, endpoint_id=None) -> bool:
        """Whether a thread sends to the endpoint (to any, without one)."""
        threads = self.threads.values() if endpoint_id is None else [self.threads.get(endpoint_id)]
        return any(thread is not None and thread.is_alive() for thread in threads)

    def start(self, endpoint_id, *, inline: bool) -> None:
        if inline:
            self.send_endpoint(endpoint_id)
            return
        thread = threading.Thread(target=self.in_own_connection, args=(endpoint_id,), daemon=True)
        self.threads[endpoint_id] = thread
        thread.start()

    def in_own_connection(self, endpoint_id) -> None:
        try:
            self.send_endpoint(endpoint_id)
        finally:
            connection.close()  # this thread's: Django's connections are per thread

    def join(self) -> None:
        """Wait for the threads: each ends within a timeout of the budget."""
        for thread in self.threads.values():
            thread.join()

    def out_of_budget(self) -> bool:
        """The turn's time is spent, or its worker was asked to stop: a stop waits for the
        attempts under way (a timeout at most), not for the rest of the turn's budget."""
        return stopping.requested.is_set() or time.monotonic() - self.started >= send_budget()

    def send_endpoint(self, endpoint_id) -> None:
        """Send the endpoint's due deliveries, a batch at a time, until none is due, the
        budget is spent, or it times out (paused) or is switched off."""
        endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
        while endpoint is not None and (
            claimed := claim_due(endpoint_id=endpoint_id, limit=BATCH_SIZE)
        ):
            endpoint = self.send(endpoint, claimed)

    def send(self, endpoint: WebhookEndpoint, claimed: list[Delivery]) -> WebhookEndpoint | None:
        """Send the claimed deliveries in order; the endpoint if it goes on, else None."""
        for index, delivery in enumerate(claimed):
            if self.out_of_budget():
                release(claimed[index:])  # due now: the turn's next task sends them
                return None
            outcome = attempt(endpoint, delivery.event)
            with self.counting:
                self.attempted += 1
            endpoint, _ = record(delivery_id=delivery.pk, endpoint_id=endpoint.pk, outcome=outcome)
            if endpoint is None or not endpoint.enabled:
                return None  # gone, or switched off: its deliveries wait or failed with it
            if _is_paused(endpoint, timezone.now()):
                release(claimed[index + 1 :])  # due, sent when the pause ends
                return None
        return endpoint


def _is_paused(endpoint: WebhookEndpoint, now: datetime) -> bool:
    return endpoint.paused_until is not None and endpoint.paused_until > now


def send_budget() -> float:
    """A turn starts no attempt after this many seconds and leaves the rest to a new task at
    the back of the queue, so a busy business takes turns with the others for the worker.
    """
    return 3 * settings.WEBHOOK_TIMEOUT_SECONDS


def lease_seconds() -> float:
    """How long a claimed delivery (and a turn, renewed while it runs) stays taken: longer
    than any turn keeps it unsent (the budget, then one last attempt, then recording it),
    short enough that what a killed worker held is soon taken again.
    """
    return send_budget() + 2 * settings.WEBHOOK_TIMEOUT_SECONDS


def claim_due(*, endpoint_id, limit: int) -> list[Delivery]:
    """Take up to `limit` due deliveries of the endpoint, oldest first, for one lease.

    The row locks last only as long as this short transaction; the lease (not a lock)
    keeps them ours while we send. There is a second sender of the endpoint only if a turn
    outlived its lease (a stalled name lookup): SKIP LOCKED then has it take the next ones
    instead of waiting, and neither sends what the other claimed.
    """
    now = timezone.now()
    with exclusive_transaction():  # on SQLite, which ignores FOR UPDATE: one claimer at a time
        ids = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(endpoint_id=endpoint_id, status__among=PENDING, next_attempt_at__lte=now)
            .order_by("id")
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return []
        Delivery.objects.filter(id__in=ids).update(
            next_attempt_at=now + timedelta(seconds=lease_seconds()), updated_at=now
        )
    return list(Delivery.objects.filter(id__in=ids).select_related("event").order_by("id"))


def release(deliveries: list[Delivery]) -> None:
    """Give claimed, unsent deliveries back: due now, for the next task."""
    if not deliveries:
        return
    now = timezone.now()
    Delivery.objects.filter(
        id__in=[d.pk for d in deliveries], status=DeliveryStatus.PENDING
    ).update(next_attempt_at=now, updated_at=now)


def endpoints_to_sweep() -> list:
    """Enabled, unpaused endpoints with a due delivery and no sender in its business's turn.

    A sender in its turn will send them (events.tasks.sweep_deliveries leaves out those
    with a task queued); a running task is not counted, since a worker killed mid-task
    leaves its task marked running for ever (its turn ends with its lease).
    """
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status__among=PENDING, next_attempt_at__lte=now
    )
    return list(
        WebhookEndpoint.objects.filter(Exists(due), enabled=True)
        .exclude(paused_until__gt=now)
        .exclude(sending_until__gt=now)
        .values_list("pk", flat=True)
    )


# Recording ------------------------------------------------------------------------------


def record(
    *, delivery_id, endpoint_id, outcome: Outcome
) -> tuple[WebhookEndpoint | None, datetime | None]:
    """Log the attempt, settle the delivery and the endpoint's health; one short transaction.

    The endpoint row is locked first, always (the same order as disabling, which fails the
    endpoint's pending deliveries), so two senders of one endpoint never deadlock. Returns
    the endpoint as it now is (None if it is gone) and when the delivery is retried, if it is.
    """
    now = timezone.now()
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        delivery = Delivery.objects.select_for_update().filter(pk=delivery_id).first()
        if endpoint is None or delivery is None:
            return endpoint, None
        DeliveryAttempt.objects.create(
            delivery=delivery,
            at=outcome.at,
            status_code=outcome.status_code,
            duration_ms=outcome.duration_ms,
            response_excerpt=outcome.excerpt,
            error=outcome.error[:ERROR_CHARS],
        )
        delivery.attempts += 1
        delivery.updated_at = now
        if outcome.succeeded:
            # Delivered, even if the endpoint was disabled meanwhile: the log tells the truth.
            delivery.status, delivery.next_attempt_at = DeliveryStatus.SUCCEEDED, None
            endpoint.last_success_at, endpoint.failing_since = now, None
            endpoint.paused_until = None
        else:
            endpoint.failing_since = endpoint.failing_since or outcome.at
            disabling = endpoint.enabled and _failing_too_long(endpoint, now)
            if disabling:
                _disable(endpoint, now)
            elif outcome.timed_out:
                endpoint.paused_until = now + _pause_for(endpoint, now)
            retries_used = delivery.attempts - 1
            if delivery.status != DeliveryStatus.PENDING:
                pass  # settled meanwhile (failed with its disabled endpoint): stays so
            elif not disabling and retries_used < len(schedule):
                # Switched off by its owner meanwhile: still due, sent once switched on.
                delivery.next_attempt_at = now + timedelta(seconds=schedule[retries_used])
            else:
                delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
        delivery.save(update_fields=["status", "attempts", "next_attempt_at", "updated_at"])
        endpoint.save(
            update_fields=[
                "last_success_at",
                "failing_since",
                "paused_until",
                "enabled",
                "disabled_reason",
            ]
        )
    return endpoint, delivery.next_attempt_at if delivery.status == DeliveryStatus.PENDING else None


def _failing_too_long(endpoint: WebhookEndpoint, now: datetime) -> bool:
    # failing_since is cleared by every success: set, it means no success since then.
    days = settings.WEBHOOK_DISABLE_AFTER_DAYS
    return endpoint.failing_since <= now - timedelta(days=days)


def _disable(endpoint: WebhookEndpoint, now: datetime) -> None:
    days = settings.WEBHOOK_DISABLE_AFTER_DAYS
    endpoint.enabled = False
    endpoint.disabled_reason = f"Disabled after {days} days without a successful delivery."
    Delivery.objects.filter(endpoint=endpoint, status__among=PENDING).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, updated_at=now
    )


def _pause_for(endpoint: WebhookEndpoint, now: datetime) -> timedelta:
    """As long as the endpoint has been failing, at least the schedule's first step and at
    most LONGEST_PAUSE.

    The first timeout pauses it about as long as the attempt took (10 s); each timed-out
    probe after that about doubles the pause, up to LONGEST_PAUSE: nothing lifts a pause
    (a test or a resend queues behind it), so a receiver fixed meanwhile waits that long
    at most for its next delivery (docs/decisions.md, "A pause ends only by itself or by a
    probe's success").
    """
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    failing_for = (now - (endpoint.failing_since or now)).total_seconds()
    longest = min(max(schedule), LONGEST_PAUSE.total_seconds())
    return timedelta(seconds=min(max(failing_for, schedule[0]), longest))
