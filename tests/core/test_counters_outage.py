"""A Redis outage (CACHE_URL=redis://, docs/decisions.md): API rate limits let requests through
uncounted; the login throttle refuses sign-ins until it can count again. Never a 500."""

from __future__ import annotations

import shutil

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from core import counters
from tests.redis_server import REDIS_CACHE, RedisServer


@pytest.fixture
def redis_down(settings):
    """Counters in a Redis of our own, which the test stops."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is missing: `make test-deps` installs it")
    server = RedisServer(binary)
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": server.url}}
    counters.count("warm-up", 60)  # counting works while it runs
    server.stop()
    yield server
    cache.close()


def test_counting_raises_counters_unavailable_not_a_redis_error(redis_down):
    with pytest.raises(counters.CountersUnavailable):
        counters.count("k", 60)
    with pytest.raises(counters.CountersUnavailable):
        counters.live_hits(["k"])
    with pytest.raises(counters.CountersUnavailable):
        counters.forget("k")


def test_the_api_answers_uncounted_while_redis_is_down(db, alice, api, redis_down, caplog):
    response = api.get("/account", alice.sandbox_key)

    assert response.status_code == 200
    assert "RateLimit-Remaining" not in response
    assert "Rate limit not counted" in caplog.text


def test_sign_in_waits_while_the_throttle_cannot_count(db, client, redis_down):
    get_user_model().objects.create_user("dara@example.com", "dara@example.com", "right-pass-1")

    response = client.post("/login/", {"username": "dara@example.com", "password": "right-pass-1"})

    assert response.status_code == 200  # the form again, not a 500 and not signed in
    assert "Signing in is paused for a moment" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_tracking_page_opens_uncounted_while_redis_is_down(db, client, redis_down):
    response = client.get("/t/AAAAAAAAAAAAAAAAAAAAAA")  # well-formed, unknown: the 404 page

    assert response.status_code == 404
    assert "text/html" in response["Content-Type"]
