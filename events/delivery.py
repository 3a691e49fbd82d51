"""Sending webhook deliveries (docs/contract.md §11): claim, send outside any transaction, record.

One call sends one endpoint's due deliveries, in creation order, as Standard Webhooks. The
delivery rows are the source of truth: claiming one only moves its `next_attempt_at` a lease
ahead, so a worker killed mid-send leaves it due again when the lease runs out, and the
sweep (events.tasks.sweep_deliveries) asks a new worker to send it. Delivery is therefore
at least once; receivers deduplicate on `webhook-id`.

A worker runs one task at a time, and a send to a receiver that never answers holds it for
WEBHOOK_TIMEOUT_SECONDS, so what one business can hold of the workers is bounded
(docs/webhooks.md, "How we send"; docs/decisions.md, Issue 27):
- a sender takes a turn (`_take_turn`): one per endpoint, and at most SENDERS_PER_BUSINESS
  per business at once, counted in the turn's claim; a task refused a turn returns at once;
- a sender yields to its business's other waiting endpoints after each batch, and hands its
  turn on to the one waiting longest when it ends (`NextTask`), so they take turns;
- a sender stops at its endpoint's first timeout and pauses the endpoint (`_pause_for`):
  its next attempt, one probe, waits for the pause to end whatever is asked meanwhile;
- a sender starts no attempt after `send_budget()` and leaves the rest to a new task at
  the back of the queue, so a slow endpoint takes turns with the others.
So a business whose receivers all hang holds SENDERS_PER_BUSINESS workers at most; the
others deliver on the rest. Run more workers than that times the businesses you expect to
hang at the same time.

This module sends and says what comes next (`Sent.next_tasks`); events.tasks enqueues it.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import SplitResult

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction
from standardwebhooks.webhooks import Webhook

from events.models import Delivery, DeliveryAttempt, DeliveryStatus, Event, WebhookEndpoint
from events.selectors import event_object
from events.ssrf import UnsafeUrl, checked_addresses, default_port

USER_AGENT = "delivery-orders-webhooks/1"
BATCH_SIZE = 50  # deliveries claimed at a time
EXCERPT_BYTES = 1024  # of each response, kept in the attempt log
ERROR_CHARS = 500  # DeliveryAttempt.error
# Endpoints of one business (both environments) sent to at once: what its receivers can
# hold of the workers if they all hang. One, so that the two workers of docs/scaling.md
# always keep one for everyone else (docs/webhooks.md, "How we send").
SENDERS_PER_BUSINESS = 1
# A timed-out endpoint's pause grows with each timed-out probe up to this (`_pause_for`).
LONGEST_PAUSE = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to; `status_code` is None when no response was read."""

    at: datetime
    duration_ms: int
    status_code: int | None = None
    excerpt: str = ""
    error: str = ""
    timed_out: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


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
    """Send this endpoint's due deliveries, in turns; the attempts and the tasks to ask for.

    A task refused a turn (`_take_turn`: the endpoint's or its business's senders are busy,
    it is paused or off) returns at once: the sender in its turn sends what it was asked
    for, or hands the turn on to it. The tasks that go on: this endpoint's, at once if the
    budget ran out or it yielded to its business's other endpoints, when the pause ends if
    it timed out, at the earliest retry it scheduled; and the business's endpoint waiting
    longest, now that the turn is free.
    """
    run = _Run(started=time.monotonic())
    waiting = None
    while not run.stopped and (business_id := _take_turn(endpoint_id)) is not None:
        try:
            endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
            while (
                endpoint is not None
                and not run.stopped
                and (claimed := claim_due(endpoint_id=endpoint.pk, limit=BATCH_SIZE))
            ):
                endpoint = run.send(endpoint, claimed)
                if endpoint is not None and _longest_waiting(business_id, but=endpoint_id):
                    run.yield_turn()  # its business's other endpoints go first
        finally:
            _end_turn(endpoint_id)
        waiting = _longest_waiting(business_id, but=endpoint_id)
        # A task that came while we held the turn left its deliveries to us: look again
        # now the turn is free, or they would wait for the sweep; unless others of the
        # business wait, whose turn it is.
        if waiting is not None:
            if not run.stopped and _has_due(endpoint_id):
                run.yield_turn()
            break
        if not _has_due(endpoint_id):
            break
    handed_on = () if waiting is None else (NextTask(waiting),)
    return Sent(run.attempted, handed_on + run.next_tasks(endpoint_id))


def _take_turn(endpoint_id):
    """Become one of the endpoint's business's senders; its business's id, or None if refused.

    The turn lasts until `_end_turn` or the lease, whichever is first: a sender killed
    mid-turn holds it only until the lease ends (as it holds its claimed deliveries). A
    disabled or paused endpoint gives no turn; nor does one with a sender, or whose
    business has SENDERS_PER_BUSINESS of them. The business's senders are counted in the
    conditional UPDATE that takes the turn, under a per-business lock held for this short
    transaction (`_lock_senders_of`), so two endpoints of a business cannot both take its
    last place.
    """
    now = timezone.now()
    with exclusive_transaction():  # on SQLite, which has no advisory lock: one at a time
        business_id = (
            WebhookEndpoint.objects.filter(pk=endpoint_id)
            .values_list("business_id", flat=True)
            .first()
        )
        if business_id is None:
            return None
        _lock_senders_of(business_id)
        senders = (
            WebhookEndpoint.objects.filter(business_id=business_id, sending_until__gt=now)
            .order_by()
            .values("business_id")
            .annotate(count=Count("pk"))
            .values("count")
        )
        taken = (
            WebhookEndpoint.objects.filter(pk=endpoint_id, enabled=True)
            .exclude(paused_until__gt=now)
            .filter(Q(sending_until__isnull=True) | Q(sending_until__lte=now))
            .alias(senders=Coalesce(Subquery(senders), 0))
            .filter(senders__lt=SENDERS_PER_BUSINESS)
            .update(sending_until=now + timedelta(seconds=lease_seconds()))
        )
    return business_id if taken == 1 else None


def _lock_senders_of(business_id) -> None:
    """Until commit, the lock that serialises turn-taking among one business's endpoints."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"webhook-senders:{business_id}".encode(), digest_size=8)
    key = int.from_bytes(digest.digest(), "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def _end_turn(endpoint_id) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint_id).update(sending_until=None)


def _has_due(endpoint_id) -> bool:
    return Delivery.objects.filter(
        endpoint_id=endpoint_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=timezone.now()
    ).exists()


def _longest_waiting(business_id, *, but):
    """The business's endpoint (other than `but`) whose oldest due delivery is oldest, among
    those that could take a turn now (on, not paused, no sender); None if none waits."""
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).order_by("id")
    return (
        WebhookEndpoint.objects.filter(business_id=business_id, enabled=True)
        .exclude(pk=but)
        .exclude(paused_until__gt=now)
        .exclude(sending_until__gt=now)
        .filter(Exists(due))
        .alias(oldest=Subquery(due.values("id")[:1]))
        .order_by("oldest")
        .values_list("pk", flat=True)
        .first()
    )


@dataclass
class _Run:
    """One task's sending for one endpoint, and what it leaves to the next task."""

    started: float
    attempted: int = 0
    stopped: bool = False  # budget spent, yielded, or the endpoint timed out or is gone
    resume_at: datetime | None = None  # a new task goes on from here (budget, yield, pause)
    retry_at: datetime | None = None  # the earliest retry scheduled by this run

    def send(self, endpoint: WebhookEndpoint, claimed: list[Delivery]) -> WebhookEndpoint | None:
        """Send the claimed deliveries in order; the endpoint if the run goes on, else None."""
        for index, delivery in enumerate(claimed):
            if time.monotonic() - self.started >= send_budget():
                release(claimed[index:])
                self.resume_at = timezone.now()
                return self.stop()
            outcome = attempt(endpoint, delivery.event)
            self.attempted += 1
            endpoint, retry_at = record(
                delivery_id=delivery.pk, endpoint_id=endpoint.pk, outcome=outcome
            )
            if retry_at is not None:
                self.retry_at = min(retry_at, self.retry_at or retry_at)
            if endpoint is None or not endpoint.enabled:
                self.retry_at = None  # disabled: its pending deliveries failed with it
                return self.stop()
            if _is_paused(endpoint, timezone.now()):
                release(claimed[index + 1 :])
                self.resume_at = endpoint.paused_until
                return self.stop()
        return endpoint

    def yield_turn(self) -> None:
        """Stop here; a new task at the back of the queue goes on with what is left."""
        self.resume_at = timezone.now()
        self.stop()

    def stop(self) -> None:
        self.stopped = True

    def next_tasks(self, endpoint_id) -> tuple[NextTask, ...]:
        tasks = []
        if self.resume_at is not None:
            tasks.append(NextTask(endpoint_id, at=self.resume_at))
        # A retry before resume_at is sent by that task; only a later one needs its own.
        if self.retry_at is not None and (self.resume_at is None or self.retry_at > self.resume_at):
            tasks.append(NextTask(endpoint_id, at=self.retry_at))
        return tuple(tasks)


def _is_paused(endpoint: WebhookEndpoint, now: datetime) -> bool:
    return endpoint.paused_until is not None and endpoint.paused_until > now


def send_budget() -> float:
    """A task starts no attempt after this many seconds and leaves the rest to a new task,
    so a slow (not hanging) endpoint takes turns with the others instead of holding a worker.
    """
    return 3 * settings.WEBHOOK_TIMEOUT_SECONDS


def lease_seconds() -> float:
    """How long a claimed delivery stays not due: longer than any task keeps it unsent
    (the budget, then one last attempt, then recording it), short enough that a delivery
    whose worker was killed is soon due again.
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
            .filter(
                endpoint_id=endpoint_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
            )
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
    """Enabled, unpaused endpoints with a due delivery and no sender.

    A sender in its turn will send them (events.tasks.sweep_deliveries leaves out those
    with a task queued); a running task is not counted, since a worker killed mid-task
    leaves its task marked running for ever (its turn ends with its lease).
    """
    now = timezone.now()
    due = Delivery.objects.filter(
        endpoint=OuterRef("pk"), status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    )
    return list(
        WebhookEndpoint.objects.filter(Exists(due), enabled=True)
        .exclude(paused_until__gt=now)
        .exclude(sending_until__gt=now)
        .values_list("pk", flat=True)
    )


# Sending --------------------------------------------------------------------------------


def signature_header(endpoint: WebhookEndpoint, msg_id: str, at: datetime, body: str) -> str:
    """`v1,<sig>`; during a rotation's grace period also the previous secret's, space-separated."""
    secrets = [endpoint.secret]
    if (
        endpoint.previous_secret
        and endpoint.previous_secret_expires_at is not None
        and endpoint.previous_secret_expires_at > at
    ):
        secrets.append(endpoint.previous_secret)
    return " ".join(Webhook(secret).sign(msg_id, at, body) for secret in secrets)


def attempt(endpoint: WebhookEndpoint, event: Event) -> Outcome:
    """POST the event to the endpoint once; never raises for anything the network does."""
    at = timezone.now()
    started = time.monotonic()
    body = orjson.dumps(event_object(event)).decode()
    headers = {
        "webhook-id": event.public_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature_header(endpoint, event.public_id, at, body),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    try:
        url, addresses = checked_addresses(endpoint.url)
        status, excerpt = post(url, addresses, body.encode(), headers, deadline=started + timeout)
    except UnsafeUrl as exc:
        return Outcome(at=at, duration_ms=took(), error=f"Refused: {exc}")
    except ValueError as exc:  # e.g. a header or path http.client will not send
        return Outcome(at=at, duration_ms=took(), error=_describe(exc))
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, TimeoutError) or time.monotonic() >= started + timeout:
            error = f"Timed out after {timeout:g} s."
            return Outcome(at=at, duration_ms=took(), error=error, timed_out=True)
        return Outcome(at=at, duration_ms=took(), error=_describe(exc))
    return Outcome(at=at, duration_ms=took(), status_code=status, excerpt=excerpt)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:ERROR_CHARS]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Plain http to a checked address; the Host header still names the URL's host."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def tls_context() -> ssl.SSLContext:
    """The system's trusted authorities, the certificate checked against the host name."""
    return ssl.create_default_context()


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """https to a checked address; SNI and the certificate check use the URL's host name."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        self.tls = tls_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


def post(
    url: SplitResult, addresses: list[str], body: bytes, headers: dict, *, deadline: float
) -> tuple[int, str]:
    """POST to the first address that accepts, within the deadline; (status, first 1 KB).

    Connecting (and the TLS handshake) gets WEBHOOK_CONNECT_TIMEOUT_SECONDS across all the
    addresses; the whole exchange ends at `deadline`. Redirects are not followed: a 3xx is
    a status like any other non-2xx.
    """
    kind = _PinnedHTTPSConnection if url.scheme == "https" else _PinnedHTTPConnection
    port = url.port or default_port(url.scheme)
    connect_by = min(deadline, time.monotonic() + settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS)
    connection = None
    for address in addresses:
        left = connect_by - time.monotonic()
        if left <= 0:
            raise TimeoutError("connect")
        candidate = kind(url.hostname, port, address=address, timeout=left)
        try:
            candidate.connect()
        except OSError:
            candidate.close()
            if address == addresses[-1]:
                raise
            continue
        connection = candidate
        break
    assert connection is not None and connection.sock is not None
    # A socket timeout bounds each read, not their sum: a receiver trickling a byte at a
    # time would outlast it. The watchdog cuts the connection at the deadline instead.
    sock = connection.sock
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    watchdog = threading.Timer(max(deadline - time.monotonic(), 0), _cut, args=(sock,))
    watchdog.daemon = True
    watchdog.start()
    try:
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, _excerpt(response)
    finally:
        watchdog.cancel()
        connection.close()


def _excerpt(response: http.client.HTTPResponse) -> str:
    """Up to EXCERPT_BYTES of the body; the status decided the outcome, this only informs."""
    data = b""
    try:
        while len(data) < EXCERPT_BYTES and (chunk := response.read1(EXCERPT_BYTES - len(data))):
            data += chunk
    except (OSError, http.client.HTTPException):
        pass  # a body cut short (or cut at the deadline) still came with its status
    return data.decode("utf-8", errors="replace")


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


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
    Delivery.objects.filter(endpoint=endpoint, status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, updated_at=now
    )


def _pause_for(endpoint: WebhookEndpoint, now: datetime) -> timedelta:
    """As long as the endpoint has been failing, at least the schedule's first step and at
    most LONGEST_PAUSE.

    The first timeout pauses it about as long as the attempt took (10 s); each timed-out
    probe after that about doubles the pause, up to LONGEST_PAUSE: nothing lifts a pause
    (a test or a resend queues behind it), so a receiver fixed meanwhile waits that long
    at most for its next delivery (docs/decisions.md, Issue 27).
    """
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    failing_for = (now - (endpoint.failing_since or now)).total_seconds()
    longest = min(max(schedule), LONGEST_PAUSE.total_seconds())
    return timedelta(seconds=min(max(failing_for, schedule[0]), longest))
