"""Under a real gunicorn with gunicorn.conf.py, requests that realistic clients send — a long
query string, a big cookie or JWT, many headers — reach Django and get our JSON envelope,
not gunicorn's plain-text 414/431/400; and a chunked API body is refused with 411
LENGTH_REQUIRED instead of being read as empty (docs/contract.md §3, docs/deployment.md §3).
"""

from __future__ import annotations

import http.client

import pytest

from tests.reliability.gunicorn_server import HOST, Reply, serving


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    with serving(tmp_path_factory.mktemp("gunicorn-limits") / "gunicorn.log") as running:
        yield running


def assert_envelope(reply: Reply, status: int, code: str) -> None:
    assert reply.status == status, reply.body[:500]
    assert reply.headers["content-type"] == "application/json"
    envelope = reply.json()
    assert (envelope["statusCode"], envelope["success"]) == (status, False)
    assert envelope["error"]["code"] == code
    assert envelope["error"]["request_id"] == reply.headers["x-request-id"]


def test_a_6000_character_request_line_reaches_django(server):
    path = "/api/v1/nothing-here?q=" + "x" * 6000  # gunicorn's default limit is 4094
    assert len(f"GET {path} HTTP/1.1") > 6000
    assert_envelope(server.request("GET", path), 404, "NOT_FOUND")


def test_a_16_kib_cookie_reaches_django(server):
    cookie = "; ".join(f"pref{i}={'v' * 500}" for i in range(32))  # one header, ~16 KiB
    assert len(cookie) > 16_000  # gunicorn's default limit is 8190 bytes per header
    reply = server.request("GET", "/api/v1/account", headers={"Cookie": cookie})
    assert_envelope(reply, 401, "UNAUTHENTICATED")


def test_a_16_kib_bearer_token_reaches_django(server):
    token = "eyJ" + "a" * 16_000  # a JWT-sized credential: an unknown key, so 401
    reply = server.request("GET", "/api/v1/account", headers={"Authorization": f"Bearer {token}"})
    assert_envelope(reply, 401, "UNAUTHENTICATED")


def test_150_headers_reach_django(server):
    headers = {f"X-Trace-{i}": str(i) for i in range(150)}  # gunicorn's default limit is 100
    reply = server.request("GET", "/api/v1/account", headers=headers)
    assert_envelope(reply, 401, "UNAUTHENTICATED")


@pytest.mark.django_db(transaction=True)  # the key must be committed for gunicorn to see it
def test_a_chunked_bulk_body_is_411(server, alice):
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/api/v1/orders/bulk",
            # No Content-Length: http.client sends it chunked. Django reads a body by its
            # Content-Length, so without the 411 this batch would be read as empty.
            body=iter([b'{"orders": ', b"[]}"]),
            headers={
                "Authorization": f"Bearer {alice.sandbox_key}",
                "Content-Type": "application/json",
                "Idempotency-Key": "00000000-0000-4000-8000-000000000000",
            },
            encode_chunked=True,
        )
        response = conn.getresponse()
        reply = Reply(
            response.status,
            {name.lower(): value for name, value in response.getheaders()},
            response.read(),
        )
    finally:
        conn.close()
    assert_envelope(reply, 411, "LENGTH_REQUIRED")
