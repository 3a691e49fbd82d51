"""Under gunicorn with DEBUG off, after collectstatic, whitenoise serves the admin's and the
dashboard's static files (hashed names from the manifest) and the logs are JSON lines.

The real settings (config.settings) run in the subprocesses, on the test database.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.db import connection

BIN = Path(sys.executable).parent
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def fetch(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


@pytest.fixture
def production_env(
    postgres_cluster, transactional_db, tmp_path, collected_static
) -> dict[str, str]:
    database = connection.settings_dict["NAME"]  # pytest-django's test database
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": postgres_cluster.url(database),
        "ALLOWED_HOSTS": HOST,
        "SECURE_SSL_REDIRECT": "false",
        "STATIC_ROOT": str(collected_static),
    }


@pytest.fixture
def gunicorn(production_env, tmp_path):
    """gunicorn on a free port, serving the suite's collectstatic output; always stopped."""
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "-c",
                str(Path(settings.BASE_DIR) / "gunicorn.conf.py"),
                "config.wsgi",
                "--bind",
                f"{HOST}:{port}",
                "--workers",
                "1",
                "--no-control-socket",  # never take the shared one of a `make run` nearby
            ],
            env=production_env,
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log_path.read_text(errors="replace")
            with contextlib.suppress(OSError):
                if fetch(port, "/healthz")[0] == 200:
                    break
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")
            time.sleep(0.1)
        yield port, log_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def assert_css(port: int, path: str) -> bytes:
    status, headers, body = fetch(port, path)
    assert status == 200, (path, status)
    assert headers["content-type"].startswith("text/css")
    assert body
    return body


def test_static_files_are_served_under_gunicorn_with_debug_off(gunicorn):
    port, log_path = gunicorn

    # The pages link hashed names from collectstatic's manifest, served for a year.
    status, _, admin_page = fetch(port, "/admin/login/")
    assert status == 200
    admin_css = re.search(rb"/static/admin/css/base\.[0-9a-f]{12}\.css", admin_page)
    assert admin_css, admin_page[:2000]
    assert_css(port, admin_css.group().decode())
    status, _, login_page = fetch(port, "/login/")
    assert status == 200
    dashboard_css = re.search(rb"/static/dashboard\.[0-9a-f]{12}\.css", login_page)
    assert dashboard_css, login_page[:2000]
    _, headers, _ = fetch(port, dashboard_css.group().decode())
    assert "immutable" in headers["cache-control"]

    # The plain names work too, and compressed copies are offered.
    assert_css(port, "/static/admin/css/base.css")
    assert (
        assert_css(port, "/static/dashboard.css")
        == (Path(settings.BASE_DIR) / "static" / "dashboard.css").read_bytes()
    )
    _, headers, _ = fetch(port, "/static/dashboard.css", {"Accept-Encoding": "gzip"})
    assert headers.get("content-encoding") == "gzip"

    status, _, body = fetch(port, "/healthz")
    assert (status, body) == (200, b"ok")


def test_gunicorn_logs_json_lines_with_the_request_id(gunicorn):
    port, log_path = gunicorn
    status, headers, _ = fetch(port, "/api/v1/account", {"X-Request-Id": "gunicorn-check-1"})
    assert status == 401
    assert headers["x-request-id"] == "gunicorn-check-1"

    deadline = time.monotonic() + 10
    while True:
        lines = [
            orjson.loads(line)
            for line in log_path.read_text(errors="replace").splitlines()
            if line.startswith("{")
        ]
        access = [e for e in lines if e.get("request_id") == "gunicorn-check-1"]
        if access or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert access, log_path.read_text(errors="replace")
    assert access[0]["logger"] == "api.access"
    assert (access[0]["method"], access[0]["path"], access[0]["status"]) == (
        "GET",
        "/api/v1/account",
        401,
    )
