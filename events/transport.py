"""One webhook attempt over the wire (docs/contract.md §11): the Standard Webhooks request,
signed with the endpoint's secret (and, during a rotation's grace period, its previous one),
POSTed to an address the SSRF check approved (events/ssrf.py) with the URL's host name kept
for the Host header, SNI and the certificate, within WEBHOOK_TIMEOUT_SECONDS in all.

The request is made where the database is (`prepare`, on the sender's thread); the attempt
itself is a coroutine on the process's wire, one event loop on a thread of its own (`wire`,
`start`), over raw asyncio streams with h11 framing HTTP/1.1: a receiver that never answers
costs a socket there, not a thread or a worker (docs/webhooks.md, "How we send").

`attempt` never raises for anything the network does: it says what happened (`Outcome`).
The sender (events/delivery.py) decides what comes next; this module knows nothing of
deliveries, leases or claims.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import SplitResult

import h11
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
READ_BYTES = 16 * 1024


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
class Request:
    """One attempt's signed request, made on the sender's thread (it reads the rows)."""

    url: str
    body: bytes
    headers: dict[str, str]
    at: datetime


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


def prepare(endpoint: WebhookEndpoint, event: Event) -> Request:
    """The event as a Standard Webhooks request to the endpoint, signed now."""
    at = timezone.now()
    body = orjson.dumps(event_object(event)).decode()
    headers = {
        "webhook-id": event.public_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature_header(endpoint, event.public_id, at, body),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    return Request(url=endpoint.url, body=body.encode(), headers=headers, at=at)


# The wire: one event loop per process -----------------------------------------------------

_wire: asyncio.AbstractEventLoop | None = None
_wire_lock = threading.Lock()


def wire() -> asyncio.AbstractEventLoop:
    """The process's event loop for webhook attempts, started on first use.

    Name look-ups block, so they run on the loop's executor, sized to the attempts a sender
    keeps in flight: a name server that stalls for one host holds one of those threads, and
    never the look-ups of other businesses' endpoints.
    """
    global _wire
    with _wire_lock:
        if _wire is None:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(
                concurrent.futures.ThreadPoolExecutor(
                    max_workers=settings.WEBHOOK_CONCURRENCY, thread_name_prefix="webhook-dns"
                )
            )
            threading.Thread(target=loop.run_forever, name="webhook-wire", daemon=True).start()
            _wire = loop
        return _wire


def start(request: Request) -> concurrent.futures.Future[Outcome]:
    """Start the attempt on the wire; its future is done when it is (it never raises)."""
    return asyncio.run_coroutine_threadsafe(attempt(request), wire())


# One attempt ------------------------------------------------------------------------------


async def attempt(request: Request) -> Outcome:
    """POST the request once; never raises for anything the network does."""
    started = time.monotonic()  # the event loop's clock: asyncio.timeout_at reads the same
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    deadline = started + timeout

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        async with asyncio.timeout_at(deadline):
            url, addresses = await asyncio.to_thread(checked_addresses, request.url)
        status, excerpt = await post(url, addresses, request, deadline=deadline)
    except UnsafeUrl as exc:
        return Outcome(at=request.at, duration_ms=took(), error=f"Refused: {exc}")
    except (ValueError, h11.LocalProtocolError) as exc:  # a header or path we will not send
        return Outcome(at=request.at, duration_ms=took(), error=_describe(exc))
    except (OSError, EOFError, h11.RemoteProtocolError) as exc:
        if isinstance(exc, TimeoutError) or time.monotonic() >= deadline:
            error = f"Timed out after {timeout:g} s."
            return Outcome(at=request.at, duration_ms=took(), error=error, timed_out=True)
        return Outcome(at=request.at, duration_ms=took(), error=_describe(exc))
    return Outcome(at=request.at, duration_ms=took(), status_code=status, excerpt=excerpt)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:ERROR_CHARS]


def tls_context() -> ssl.SSLContext:
    """The system's trusted authorities, the certificate checked against the host name."""
    return ssl.create_default_context()


async def post(
    url: SplitResult, addresses: list[str], request: Request, *, deadline: float
) -> tuple[int, str]:
    """POST to the first address that accepts, within the deadline; (status, first 1 KB).

    Connecting (and the TLS handshake) gets WEBHOOK_CONNECT_TIMEOUT_SECONDS across all the
    addresses; the whole exchange ends at `deadline`, however slowly the receiver trickles.
    Redirects are not followed: a 3xx is a status like any other non-2xx.
    """
    connect_by = min(deadline, time.monotonic() + settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS)
    reader, writer = await _connect(url, addresses, connect_by=connect_by)
    try:
        protocol = h11.Connection(h11.CLIENT)
        async with asyncio.timeout_at(deadline):
            writer.write(_request_bytes(protocol, url, request))
            await writer.drain()
            status = await _status(reader, protocol)
        return status, await _excerpt(reader, protocol, deadline=deadline)
    finally:
        writer.transport.abort()  # nothing more to say or hear: no lingering close


async def _connect(
    url: SplitResult, addresses: list[str], *, connect_by: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first checked address that accepts (TLS with the URL's name)."""
    tls = tls_context() if url.scheme == "https" else None
    port = url.port or default_port(url.scheme)
    for address in addresses:
        left = connect_by - time.monotonic()
        if left <= 0:
            raise TimeoutError("connect")
        try:
            async with asyncio.timeout(left):
                return await asyncio.open_connection(
                    address, port, ssl=tls, server_hostname=url.hostname if tls else None
                )
        except OSError:
            if address == addresses[-1]:
                raise
    raise OSError("The host name resolved to no address.")


def _host_header(url: SplitResult) -> str:
    """As http.client says it: the name (IDNA), and the port unless it is the scheme's."""
    host = url.hostname.encode("idna").decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    port = url.port
    return host if port is None or port == default_port(url.scheme) else f"{host}:{port}"


def _request_bytes(protocol: h11.Connection, url: SplitResult, request: Request) -> bytes:
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [
        ("Host", _host_header(url)),
        *request.headers.items(),
        ("Content-Length", str(len(request.body))),
    ]
    return (
        protocol.send(h11.Request(method="POST", target=path, headers=headers))
        + protocol.send(h11.Data(data=request.body))
        + protocol.send(h11.EndOfMessage())
    )


async def _next_event(reader: asyncio.StreamReader, protocol: h11.Connection):
    while (event := protocol.next_event()) is h11.NEED_DATA:
        protocol.receive_data(await reader.read(READ_BYTES))
    return event


async def _status(reader: asyncio.StreamReader, protocol: h11.Connection) -> int:
    """The response's status, after any 1xx."""
    while True:
        event = await _next_event(reader, protocol)
        if isinstance(event, h11.Response):
            return event.status_code
        if not isinstance(event, h11.InformationalResponse):
            raise h11.RemoteProtocolError("The connection ended without a response.")


async def _excerpt(
    reader: asyncio.StreamReader, protocol: h11.Connection, *, deadline: float
) -> str:
    """Up to EXCERPT_BYTES of the body; the status decided the outcome, this only informs."""
    data = b""
    try:
        async with asyncio.timeout_at(deadline):
            while len(data) < EXCERPT_BYTES:
                event = await _next_event(reader, protocol)
                if not isinstance(event, h11.Data):
                    break  # the end of the body
                data += event.data
    except (OSError, EOFError, h11.RemoteProtocolError):
        pass  # a body cut short (or cut at the deadline) still came with its status
    return data[:EXCERPT_BYTES].decode("utf-8", errors="replace")
