"""A throwaway Redis on loopback for the counter tests, and a fixture that counts in it.

The server keeps nothing on disk (`--save ''`, no append-only file) and is stopped with the
session. Without the redis-server binary (`make test-deps` installs it) the Redis tests skip.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

import pytest

REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, binary: str) -> None:
        self.port = _free_port()
        self.workdir = tempfile.mkdtemp(prefix="delivery-redis-")
        self.process = subprocess.Popen(
            [
                binary,
                "--bind", "127.0.0.1",
                "--port", str(self.port),
                "--save", "",
                "--appendonly", "no",
                "--dir", self.workdir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed: `make test-deps` installs it")
    server = RedisServer(binary)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_counters(redis_server, settings):
    """CACHE_URL=redis://…: counters (rate limits, login throttle) count in the Redis above."""
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": redis_server.url}}
    cache.clear()  # FLUSHDB: each test starts from zero, as the database's rollback gives
    yield redis_server
    cache.clear()


@pytest.fixture(params=["database", "redis"])
def counter_store(request) -> str:
    """Run a test once per store: the database's table (the default), then Redis."""
    if request.param == "redis":
        request.getfixturevalue("redis_counters")
    return request.param
