"""A real gunicorn serving the production settings against the test database.

`Gunicorn` starts `gunicorn config.wsgi` with `gunicorn.conf.py` in a clean environment (as a
deployment has), waits until a worker answers /healthz, and talks HTTP to it; `serving` does
that around a block and always stops it. `wait_for` is the one bounded poll every wait uses.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson
from django.conf import settings
from django.db import connection

HOST = "127.0.0.1"
WAIT_SECONDS = 30  # every wait has this deadline; a healthy run needs a fraction of it

T = TypeVar("T")


def database_url(database: dict) -> str:
    """The URL of the test database (a Django settings dict) for a process of its own: the
    throwaway PostgreSQL, or the SQLite file of the embedded default's run."""
    if database.get("ENGINE") == "django.db.backends.sqlite3":
        return f"sqlite:///{database['NAME']}"
    return f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"


def wait_for(what: str, check: Callable[[], T], timeout: float = WAIT_SECONDS) -> T:
    """Poll `check` until it returns something truthy; fail loudly at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(0.02)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return orjson.loads(self.body)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _children_of(pid: int) -> list[int]:
    """Live (not zombie) child processes of `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


class Gunicorn:
    """`gunicorn config.wsgi` with one sync worker (or `workers`), the production settings
    (DEBUG off), and the pytest-django test database (or `database`), configured through
    the environment as in production."""

    def __init__(
        self, database: dict, log_path: Path, *, workers: int = 1, conn_max_age: int = 0
    ) -> None:
        self.port = _free_port()
        self.log_path = log_path
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None
        # A clean environment, as a deployment has: none of the test settings' defaults.
        inherited = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
        self.env = {
            **{name: os.environ[name] for name in inherited if name in os.environ},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url(database),
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "false",
            "ALLOWED_HOSTS": HOST,
            "SECURE_SSL_REDIRECT": "false",
            "CONN_MAX_AGE": str(conn_max_age),
        }

    def start(self) -> Gunicorn:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "gunicorn"),
                    "-c",
                    str(Path(settings.BASE_DIR) / "gunicorn.conf.py"),
                    "config.wsgi",
                    "--bind",
                    f"{HOST}:{self.port}",
                    "--workers",
                    str(self.workers),
                    "--timeout",
                    "120",
                    "--no-control-socket",
                ],
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our own signals only, never the terminal's
            )
        self.wait_ready()
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # gunicorn's graceful stop; the master reaps its worker
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def worker(self) -> int | None:
        """The pid of the one worker, or None while there is none (or not yet one)."""
        assert self.process is not None
        workers = _children_of(self.process.pid)
        return workers[0] if len(workers) == 1 else None

    def wait_ready(self) -> int:
        """Wait until a worker answers /healthz; its pid (with several workers, the
        master's, once they are all up)."""

        def answering() -> int | None:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{self.log_tail()}")
            try:
                reply = self.request("GET", "/healthz", timeout=2)
            except (OSError, http.client.HTTPException):
                return None
            if reply.status != 200:
                return None
            if self.workers == 1:
                return self.worker()
            up = len(_children_of(self.process.pid)) == self.workers
            return self.process.pid if up else None

        try:
            return wait_for("gunicorn to answer /healthz", answering)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- gunicorn log ---\n{self.log_tail()}") from None

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = WAIT_SECONDS,
    ) -> Reply:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            headers = {name.lower(): value for name, value in response.getheaders()}
            return Reply(response.status, headers, response.read())
        finally:
            conn.close()

    def bulk(self, body: bytes, key: str, idempotency_key: str) -> Reply:
        return self.request(
            "POST",
            "/api/v1/orders/bulk",
            body,
            {
                "Authorization": f"Bearer {key}",
                "Content-Type": "application/json",
                "Idempotency-Key": idempotency_key,
            },
        )

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@contextlib.contextmanager
def serving(log_path: Path) -> Iterator[Gunicorn]:
    """A gunicorn on the test database (pytest-django must have created it), always stopped."""
    server = Gunicorn(connection.settings_dict, log_path)
    try:
        yield server.start()
    finally:
        server.stop()
