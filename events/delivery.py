"""Sending webhook deliveries (docs/contract.md §11, §28): claim, send on the wire, record.

A sender keeps up to WEBHOOK_CONCURRENCY attempts in flight, at most WEBHOOK_PER_ENDPOINT
to one endpoint, and a drop's deliveries to an endpoint one at a time, in order (`_lane`).
The database is the sender's thread's (claims, leases, the attempt log); the requests are
coroutines on the process's wire (events/transport.py), so a receiver that accepts and never
answers costs a socket for one timeout, not a worker (docs/webhooks.md, "How we send";
docs/decisions.md, "A worker's sender keeps many deliveries in flight").

- In a task worker the sender runs on a thread of its own beside the task loop
  (`start_sender`, started by db_worker through TASK_WORKER_COMPANIONS): a send task only
  wakes it, so other tasks never wait behind a webhook. Anywhere else (a shell, a test) a
  send task sends the endpoint's business's due deliveries in the caller's thread until
  none is due or in flight (`send_due`).
- An endpoint gets one attempt at a time until it has answered 2xx and is not failing
  (`_allowance`), then up to WEBHOOK_PER_ENDPOINT, counted across every worker (a claim
  marks `claimed_until`, `claim_due` counts them): endpoints that never answer hold one
  socket each in the whole service, and the rest of the room stays for the others.
- A timeout pauses the endpoint (`_pause_for`): nothing more is claimed for it until the
  pause ends, then one probe; what it held unsent is given back (`release`).

The delivery rows are the source of truth: claiming one only moves its `next_attempt_at`
(and `claimed_until`) a lease ahead, so a worker killed mid-flight leaves it due again when
the lease runs out, and the sweep (events.tasks.sweep_deliveries) asks for it. Delivery is
therefore at least once; receivers deduplicate on `webhook-id`.

This module sends and says what comes next (`Sent.next_tasks`); events.tasks enqueues it.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.db.models import Exists, F, Min, OuterRef
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction

from core import stopping
from events.models import Delivery, DeliveryAttempt, DeliveryStatus, WebhookEndpoint
from events.transport import ERROR_CHARS, Outcome, prepare, start

logger = logging.getLogger(__name__)

# The pending deliveries, as the partial indexes delivery_due and delivery_queue name them:
# written into the SQL (core.lookups.Among), so a prepared statement's plan can use them.
PENDING = (DeliveryStatus.PENDING,)

# How often a sender with attempts in flight looks for deliveries that became due.
POLL_SECONDS = 0.25
# The longest a worker's idle sender sleeps without a wake-up (a send task wakes it at once).
IDLE_SECONDS = 60.0
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
    """Have this endpoint's due deliveries sent; the attempts made here, and what goes on.

    In a task worker the process's sender sends them: it is woken, and nothing is sent
    here. Elsewhere the business's due deliveries are sent in this thread, all of its
    endpoints at once, until none is due or in flight; then one task is asked for each
    endpoint still pending, when its next delivery is due.
    """
    if _running is not None and _running.is_alive():
        _running.wake()
        return Sent(0, ())
    business_id = (
        WebhookEndpoint.objects.filter(pk=endpoint_id).values_list("business_id", flat=True).first()
    )
    if business_id is None:
        return Sent(0, ())
    sender = Sender(business_id=business_id)
    sender.run(until_idle=True)
    return Sent(sender.attempted, _next_tasks(business_id))


def _next_tasks(business_id) -> tuple[NextTask, ...]:
    """For each endpoint of the business still pending: a task when its next delivery is due
    (its pause counted), None meaning now."""
    now = timezone.now()
    pending = (
        WebhookEndpoint.objects.filter(
            business_id=business_id, enabled=True, deliveries__status__among=PENDING
        )
        .annotate(due=Min("deliveries__next_attempt_at"))
        .values_list("pk", "due", "paused_until")
    )
    tasks = []
    for pk, due, paused in pending:
        if due is not None:
            at = max(due, paused or due)
            tasks.append(NextTask(pk, at=None if at <= now else at))
    return tuple(tasks)


def _sendable(business_id=None) -> list[WebhookEndpoint]:
    """Endpoints with due deliveries that can be sent now (on, not paused); of one business,
    or of all."""
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status__among=PENDING, next_attempt_at__lte=now
    )
    endpoints = WebhookEndpoint.objects.filter(enabled=True).exclude(paused_until__gt=now)
    if business_id is not None:
        endpoints = endpoints.filter(business_id=business_id)
    return list(endpoints.filter(Exists(due)))


def _next_due() -> datetime | None:
    """When the first pending delivery of an enabled endpoint is due, its pause counted."""
    pending = (
        WebhookEndpoint.objects.filter(enabled=True, deliveries__status__among=PENDING)
        .annotate(due=Min("deliveries__next_attempt_at"))
        .values_list("due", "paused_until")
    )
    times = [max(due, paused or due) for due, paused in pending if due is not None]
    return min(times, default=None)


def _allowance(endpoint: WebhookEndpoint) -> int:
    """The endpoint's share: how many of its deliveries may be claimed at once, across every
    worker (in flight, or waiting for their drop's): WEBHOOK_PER_ENDPOINT once it has answered
    2xx and is not failing, else one, so a receiver that never answers holds one socket."""
    answering = endpoint.last_success_at is not None and endpoint.failing_since is None
    return settings.WEBHOOK_PER_ENDPOINT if answering else 1


def _lane(delivery: Delivery) -> str | None:
    """What the delivery's order is kept within: its drop (or courier's order); None for
    events that are about no drop, which go out side by side."""
    data = delivery.event.data if isinstance(delivery.event.data, dict) else {}
    lane = data.get("drop_id") or data.get("pass_order_id")
    return str(lane) if lane else None


@dataclass(frozen=True, slots=True)
class _Flight:
    delivery_id: int
    endpoint_id: object
    lane: str | None


@dataclass
class Sender:
    """Claims due deliveries, keeps their attempts in flight on the wire, records each
    outcome as it comes: of one business (`send_due`), or of all (a worker's sender)."""

    business_id: object = None
    attempted: int = 0
    flights: dict[Future, _Flight] = field(default_factory=dict)
    # Claimed and waiting for their lane (an earlier delivery of their drop is in flight).
    held: dict[object, collections.deque] = field(default_factory=dict)
    endpoints: dict[object, WebhookEndpoint] = field(default_factory=dict)
    woken: Future = field(default_factory=Future)
    renewed_at: float = field(default_factory=time.monotonic)
    looked_at: float = 0.0  # when the endpoints with due deliveries were last looked up
    more: set = field(default_factory=set)  # endpoints that may have more due right now

    def run(self, *, until_idle: bool, stop: threading.Event | None = None) -> None:
        """Claim, start and record until nothing is due or in flight (`until_idle`), or
        until asked to stop; a stop starts nothing more and waits for what is in flight."""
        while True:
            stopping_now = stopping.requested.is_set() or (stop is not None and stop.is_set())
            looked = False
            if stopping_now:
                self.give_back_held()
            else:
                self.renew_held()
                looked = self.fill()
            if not self.flights and not self.held:
                if stopping_now or (until_idle and looked):
                    return
                if until_idle:
                    self.looked_at = 0.0  # one more look before calling it idle
                    continue
                self.sleep()
                continue
            done, _ = wait([*self.flights, self.woken], POLL_SECONDS, FIRST_COMPLETED)
            self.settle(done)

    def wake(self) -> None:
        """Look for due deliveries now (from another thread: a send task)."""
        if not self.woken.done():
            self.woken.set_result(None)

    def sleep(self) -> None:
        """Idle: until woken, or the next delivery is due."""
        due = _next_due()
        seconds = IDLE_SECONDS if due is None else (due - timezone.now()).total_seconds()
        wait([self.woken], timeout=min(max(seconds, POLL_SECONDS), IDLE_SECONDS))
        if self.woken.done():
            self.woken = Future()

    def in_flight(self, endpoint_id) -> int:
        return sum(1 for f in self.flights.values() if f.endpoint_id == endpoint_id)

    def fill(self) -> bool:
        """Start what waited for room; then claim for the endpoints with due deliveries (those
        with nothing in flight first) and start what each one's share allows.

        Which endpoints have due deliveries is looked up every POLL_SECONDS (and when woken);
        in between, only those whose last claim took all it asked for are claimed for again.
        Whether it looked them up.
        """
        for endpoint_id in list(self.held):
            self.start_ready(endpoint_id)
        if len(self.flights) >= settings.WEBHOOK_CONCURRENCY:
            return False
        now = timezone.now()
        looked = time.monotonic() - self.looked_at >= POLL_SECONDS
        if looked:
            self.looked_at = time.monotonic()
            endpoints = _sendable(self.business_id)
        else:
            endpoints = [self.endpoints[pk] for pk in self.more]
        for endpoint in sorted(endpoints, key=lambda e: self.in_flight(e.pk)):
            self.endpoints[endpoint.pk] = endpoint
            waiting = len(self.held.get(endpoint.pk, ()))
            share = _allowance(endpoint)
            take = share - self.in_flight(endpoint.pk) - waiting
            self.more.discard(endpoint.pk)
            if take <= 0 or not endpoint.enabled or _is_paused(endpoint, now):
                continue
            claimed = claim_due(endpoint_id=endpoint.pk, limit=take, share=share)
            if claimed:
                if len(claimed) == take:
                    self.more.add(endpoint.pk)  # there may be more due
                self.held.setdefault(endpoint.pk, collections.deque()).extend(claimed)
                self.start_ready(endpoint.pk)
            if len(self.flights) >= settings.WEBHOOK_CONCURRENCY:
                break
        return looked

    def start_ready(self, endpoint_id) -> None:
        """Start the endpoint's claimed deliveries, in claim order, while it has room (its
        share, the sender's) and their drop has nothing in flight."""
        waiting = self.held.get(endpoint_id)
        if not waiting:
            self.held.pop(endpoint_id, None)
            return
        flights = [f for f in self.flights.values() if f.endpoint_id == endpoint_id]
        busy = {f.lane for f in flights}
        room = _allowance(self.endpoints[endpoint_id]) - len(flights)
        for delivery in list(waiting):
            if room <= 0 or len(self.flights) >= settings.WEBHOOK_CONCURRENCY:
                break
            lane = _lane(delivery)
            if lane is not None and lane in busy:
                continue  # it, and every later one of its drop, waits for the one in flight
            waiting.remove(delivery)
            busy.add(lane)
            room -= 1
            request = prepare(self.endpoints[endpoint_id], delivery.event)
            self.flights[start(request)] = _Flight(delivery.pk, endpoint_id, lane)
        if not waiting:
            del self.held[endpoint_id]

    def settle(self, done) -> None:
        """Record the finished attempts (an endpoint's successes together, in one short
        transaction); then each endpoint's next, unless it is off or paused now."""
        woken = self.woken
        if woken in done:
            self.woken = Future()
            self.looked_at = 0.0  # asked to look: at once
        successes: dict[object, list[tuple[int, Outcome]]] = {}
        settled: dict[object, WebhookEndpoint | None] = {}
        for future in done:
            if future is woken:
                continue
            flight = self.flights.pop(future)
            outcome = _outcome_of(future)
            self.attempted += 1
            if outcome.succeeded:
                successes.setdefault(flight.endpoint_id, []).append((flight.delivery_id, outcome))
                continue
            settled[flight.endpoint_id], _ = record(
                delivery_id=flight.delivery_id, endpoint_id=flight.endpoint_id, outcome=outcome
            )
        for endpoint_id, delivered in successes.items():
            settled[endpoint_id] = record_successes(endpoint_id=endpoint_id, delivered=delivered)
        now = timezone.now()
        for endpoint_id, endpoint in settled.items():
            if endpoint is None or not endpoint.enabled or _is_paused(endpoint, now):
                self.more.discard(endpoint_id)
                release(list(self.held.pop(endpoint_id, ())))  # due: sent when it can be
            else:
                self.endpoints[endpoint_id] = endpoint
                self.start_ready(endpoint_id)

    def renew_held(self) -> None:
        """Keep the lease of what waits claimed (behind its drop's attempts, for room): a
        third of a lease after the last renewal, one statement for all of them."""
        if time.monotonic() - self.renewed_at < lease_seconds() / 3:
            return
        self.renewed_at = time.monotonic()
        ids = [d.pk for waiting in self.held.values() for d in waiting]
        if ids:
            lease = timezone.now() + timedelta(seconds=lease_seconds())
            Delivery.objects.filter(id__in=ids, status=DeliveryStatus.PENDING).update(
                next_attempt_at=lease, claimed_until=lease
            )

    def give_back_held(self) -> None:
        for endpoint_id in list(self.held):
            release(list(self.held.pop(endpoint_id)))


def _outcome_of(future: Future) -> Outcome:
    """The attempt's outcome; a bug in it is logged and recorded as a failed attempt."""
    try:
        return future.result()
    except Exception as exc:  # attempt() never raises for the network: this is a bug
        logger.exception("A webhook attempt failed unexpectedly")
        error = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
        return Outcome(at=timezone.now(), duration_ms=0, error=error)


def _is_paused(endpoint: WebhookEndpoint, now: datetime) -> bool:
    return endpoint.paused_until is not None and endpoint.paused_until > now


# A worker's sender ------------------------------------------------------------------------

_running: _WorkerSender | None = None


class _WorkerSender(threading.Thread):
    """The task worker's sender: all businesses' deliveries, beside the task loop, until the
    worker stops. Not a daemon: the process waits for the attempts in flight when it exits
    (a timeout at most), and records them."""

    def __init__(self) -> None:
        super().__init__(name="webhook-sender")
        self.sender = Sender()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not (self.stopped.is_set() or stopping.requested.is_set()) or self.sender.flights:
            try:
                self.sender.run(until_idle=False, stop=self.stopped)
            except (OperationalError, InterfaceError) as exc:
                logger.warning("Database unavailable; the webhook sender tries again: %s", exc)
                time.sleep(1)
            except Exception:
                logger.exception("The webhook sender failed; it goes on in a second")
                time.sleep(1)
            finally:
                close_old_connections()
        connection.close()

    def wake(self) -> None:
        self.sender.wake()

    def stop(self) -> None:
        """Start nothing more, record what is in flight, end."""
        self.stopped.set()
        self.sender.wake()
        self.join()


def start_sender() -> _WorkerSender:
    """Start this process's sender (db_worker does, TASK_WORKER_COMPANIONS)."""
    global _running
    _running = _WorkerSender()
    _running.start()
    return _running


def lease_seconds() -> float:
    """How long a claimed delivery stays taken: renewed while it waits for its drop's
    (`Sender.renew_held`, every third of this), it outlasts a renewal's interval, its attempt
    and recording it by far; short enough that what a killed worker held is soon taken
    again."""
    return 5 * settings.WEBHOOK_TIMEOUT_SECONDS


def claim_due(*, endpoint_id, limit: int, share: int | None = None) -> list[Delivery]:
    """Take up to `limit` due deliveries of the endpoint, oldest first, for one lease; with
    `share`, no more than leaves the endpoint's claimed deliveries, every worker's, at that.

    The row locks last only as long as this short transaction; the lease (not a lock) keeps
    them ours while we send. Several workers' senders claim side by side: SKIP LOCKED has
    each take the next ones instead of waiting, none sends what another claimed, and the
    endpoint's lock (`_lock_claims_of`) keeps their count within the share.
    """
    now = timezone.now()
    with exclusive_transaction():  # on SQLite, which ignores FOR UPDATE: one claimer at a time
        if share is not None:
            _lock_claims_of(endpoint_id)
            held = Delivery.objects.filter(
                endpoint_id=endpoint_id, status__among=PENDING, claimed_until__gt=now
            ).count()
            limit = min(limit, share - held)
            if limit <= 0:
                return []
        ids = list(
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(endpoint_id=endpoint_id, status__among=PENDING, next_attempt_at__lte=now)
            .order_by("id")
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return []
        lease = now + timedelta(seconds=lease_seconds())
        Delivery.objects.filter(id__in=ids).update(
            next_attempt_at=lease, claimed_until=lease, updated_at=now
        )
    return list(Delivery.objects.filter(id__in=ids).select_related("event").order_by("id"))


def _lock_claims_of(endpoint_id) -> None:
    """Until commit, the lock that serialises counting and claiming one endpoint's share."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return  # SQLite: exclusive_transaction already lets one claimer in at a time
    digest = hashlib.blake2b(f"webhook-claims:{endpoint_id}".encode(), digest_size=8)
    key = int.from_bytes(digest.digest(), "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def release(deliveries: list[Delivery]) -> None:
    """Give claimed, unsent deliveries back: due now, for the next claim."""
    if not deliveries:
        return
    now = timezone.now()
    Delivery.objects.filter(
        id__in=[d.pk for d in deliveries], status=DeliveryStatus.PENDING
    ).update(next_attempt_at=now, claimed_until=None, updated_at=now)


def endpoints_to_sweep() -> list:
    """Enabled, unpaused endpoints with a due delivery (events.tasks.sweep_deliveries leaves
    out those with a task queued). A delivery a sender has claimed is not due: its lease
    moved `next_attempt_at` ahead, so a live sender's deliveries are not swept."""
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status__among=PENDING, next_attempt_at__lte=now
    )
    return list(
        WebhookEndpoint.objects.filter(Exists(due), enabled=True)
        .exclude(paused_until__gt=now)
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
        delivery.updated_at, delivery.claimed_until = now, None
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
        delivery.save(
            update_fields=["status", "attempts", "next_attempt_at", "claimed_until", "updated_at"]
        )
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


def record_successes(
    *, endpoint_id, delivered: list[tuple[int, Outcome]]
) -> WebhookEndpoint | None:
    """Log these successful attempts of one endpoint and settle them, as `record` does each,
    in one short transaction; the endpoint as it now is (None if it is gone)."""
    now = timezone.now()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None:
            return None
        outcomes = dict(delivered)
        ids = list(
            Delivery.objects.select_for_update()
            .filter(pk__in=list(outcomes))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        DeliveryAttempt.objects.bulk_create(
            DeliveryAttempt(
                delivery_id=pk,
                at=outcomes[pk].at,
                status_code=outcomes[pk].status_code,
                duration_ms=outcomes[pk].duration_ms,
                response_excerpt=outcomes[pk].excerpt,
                error="",
            )
            for pk in ids
        )
        # Delivered, even if the endpoint was disabled meanwhile: the log tells the truth.
        Delivery.objects.filter(pk__in=ids).update(
            status=DeliveryStatus.SUCCEEDED,
            attempts=F("attempts") + 1,
            next_attempt_at=None,
            claimed_until=None,
            updated_at=now,
        )
        endpoint.last_success_at, endpoint.failing_since, endpoint.paused_until = now, None, None
        endpoint.save(update_fields=["last_success_at", "failing_since", "paused_until"])
    return endpoint


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
