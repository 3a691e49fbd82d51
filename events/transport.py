"""One webhook attempt over the wire (docs/contract.md §11): the Standard Webhooks request,
signed with the endpoint's secret (and, during a rotation's grace period, its previous one),
POSTed to an address the SSRF check approved (events/ssrf.py) with the URL's host name kept
for the Host header, SNI and the certificate, within WEBHOOK_TIMEOUT_SECONDS in all.

`attempt` never raises for anything the network does: it says what happened (`Outcome`).
The sender (events/delivery.py) decides what comes next; this module knows nothing of
deliveries, leases or turns.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import SplitResult

import orjson
from django.conf import settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from events.models import Event, WebhookEndpoint
from events.selectors import event_object
from events.ssrf import UnsafeUrl, checked_addresses, default_port

USER_AGENT = "delivery-orders-webhooks/1"
EXCERPT_BYTES = 1024  # of each response, kept in the attempt log
ERROR_CHARS = 500  # DeliveryAttempt.error


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
