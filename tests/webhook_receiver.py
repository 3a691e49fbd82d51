"""A real webhook receiver on loopback: verifies every delivery's signature and records it.

`WebhookReceiver` is a small threaded HTTP server (optionally https) that does what an
integrator's endpoint does with the `standardwebhooks` library: check the signature with
the secret(s) it was given, then answer. Tests script its answers (`answer(500, 200)`),
make it hang (`hang()`), and read what arrived (`received`, `wait_for`).

Fixtures: `webhook_receiver` (one plain-http receiver, stopped after the test) and
`start_receiver` (as many as a test needs, e.g. a hanging one and a healthy one).
`SilentServer` is a hostile receiver: it accepts every connection and never says a word.
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

HOST = "127.0.0.1"
HANG_AT_MOST = 60.0  # a hanging answer ends by itself after this, or when the receiver stops


@dataclass(frozen=True)
class Received:
    """One request as it arrived, and what verifying it found."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: str
    arrived: float  # time.monotonic()
    verified: bool  # some v1 signature matches one of the receiver's secrets
    answered: int | None  # the status sent back; None while (or if) it hung

    @property
    def id(self) -> str:
        return self.headers.get("webhook-id", "")

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    @property
    def signatures(self) -> list[str]:
        return self.headers.get("webhook-signature", "").split()

    def signed_by(self, secret: str) -> bool:
        """Whether one of the signatures (each on its own) is this secret's."""
        expected = Webhook(secret).sign(self.id, self._timestamp(), self.body)
        return expected in self.signatures

    def _timestamp(self):
        from datetime import UTC, datetime

        return datetime.fromtimestamp(int(self.headers["webhook-timestamp"]), tz=UTC)


@dataclass
class _Script:
    answers: collections.deque = field(default_factory=collections.deque)
    default: int = 200
    hanging: bool = False
    delay: float = 0.0


class WebhookReceiver:
    def __init__(self, *, tls: ssl.SSLContext | None = None, host: str = HOST) -> None:
        self.secrets: list[str] = []
        self.received: list[Received] = []
        self._script = _Script()
        self._lock = threading.Condition()
        self._released = threading.Event()
        self._server = ThreadingHTTPServer((host, 0), self._handler_class())
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.port = self._server.server_address[1]
        # stop() waits for the loop to look up: every 0.5 s by default, ~0.25 s a test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    # Setting it up ------------------------------------------------------------------

    def url(self, path: str = "/hooks", host: str = HOST) -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def trust(self, *secrets: str) -> WebhookReceiver:
        """The secrets a signature may be made with (an endpoint's, after a rotation two)."""
        self.secrets = list(secrets)
        return self

    def answer(self, *statuses: int, then: int | None = None) -> WebhookReceiver:
        """Answer the next requests with these statuses, then with `then` (default 200)."""
        with self._lock:
            self._script.answers.extend(statuses)
            if then is not None:
                self._script.default = then
        return self

    def hang(self) -> WebhookReceiver:
        """From now on accept each request and never answer (until `release` or stop)."""
        self._released.clear()
        self._script.hanging = True
        return self

    def slow(self, seconds: float) -> WebhookReceiver:
        """Wait this long before each answer (a slow receiver, not a hanging one)."""
        self._script.delay = seconds
        return self

    def release(self) -> None:
        self._script.hanging = False
        self._released.set()

    def stop(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    # Reading what arrived -----------------------------------------------------------

    def ids(self) -> list[str]:
        with self._lock:
            return [r.id for r in self.received]

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """Block until at least `count` requests arrived; all of them, in arrival order."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the receiver got {len(self.received)} request(s), expected {count}"
                    )
                self._lock.wait(left)
            return list(self.received)

    # Serving ------------------------------------------------------------------------

    def _verify(self, headers: dict[str, str], body: str) -> bool:
        for secret in self.secrets:
            try:
                Webhook(secret).verify(body, headers, json_parse=False)
            except WebhookVerificationError:
                continue
            return True
        return False

    def _next_status(self) -> int:
        with self._lock:
            if self._script.answers:
                return self._script.answers.popleft()
            return self._script.default

    def _record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)
            self._lock.notify_all()

    def _handler_class(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                headers = {name.lower(): value for name, value in self.headers.items()}
                arrived = time.monotonic()
                verified = receiver._verify(headers, body)
                if receiver._script.hanging:
                    receiver._record(
                        Received(self.path, headers, body, arrived, verified, answered=None)
                    )
                    receiver._released.wait(HANG_AT_MOST)
                    return  # hang up without a word
                if receiver._script.delay:
                    time.sleep(receiver._script.delay)
                status = receiver._next_status()
                receiver._record(Received(self.path, headers, body, arrived, verified, status))
                payload = b'{"ok": true}' if 200 <= status < 300 else b'{"error": "try later"}'
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format, *args) -> None:  # noqa: A002
                pass

        return Handler


class SilentServer:
    """A TCP server on loopback that accepts every connection and never says a word."""

    def __init__(self) -> None:
        self._listener = socket.create_server((HOST, 0), backlog=256)
        self.port = self._listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, path: str = "/hooks") -> str:
        return f"http://{HOST}:{self.port}{path}"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed by stop()
            while True:
                connection, _ = self._listener.accept()
                self.accepted.append(connection)  # held open, never read, never answered

    def stop(self) -> None:
        self._listener.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def start_receiver():
    started: list[WebhookReceiver] = []

    def start(**options) -> WebhookReceiver:
        receiver = WebhookReceiver(**options)
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


@pytest.fixture
def webhook_receiver(start_receiver) -> WebhookReceiver:
    return start_receiver()
