"""Per-key rate limits (docs/contract.md §3, §10): 429 RATE_LIMITED with Retry-After, RateLimit-* on
every counted answer, one counter per key and scope, exact under concurrency.

Limits are lowered per test with the `settings` fixture; the throttle reads them per request.
Every test runs twice: counting in the database (the default) and in Redis (CACHE_URL=redis://).
"""

from __future__ import annotations

from collections import Counter

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey, Business, Stage
from core.models import RateCounter
from orders.models import Batch
from tests.factories import batch, drop, group
from tests.fixtures import OPEN_HOURS
from tests.helpers import assert_error, run_concurrently


@pytest.fixture(autouse=True)
def _each_store(counter_store):
    return counter_store


@pytest.fixture
def frozen():
    """The clock stopped at a whole second in business hours: windows are exactly predictable."""
    with time_machine.travel(OPEN_HOURS, tick=False) as traveller:
        yield traveller


def quota(response) -> tuple[str, str, str]:
    return (
        response["RateLimit-Limit"],
        response["RateLimit-Remaining"],
        response["RateLimit-Reset"],
    )


def test_every_counted_answer_carries_the_ratelimit_headers(frozen, alice, api, settings):
    settings.RATE_LIMIT_DEFAULT = "3/minute"
    answers = [api.get("/account", alice.sandbox_key) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert [quota(r) for r in answers] == [("3", "2", "60"), ("3", "1", "60"), ("3", "0", "60")]


def test_over_the_limit_is_429_rate_limited_with_retry_after(frozen, alice, api, settings):
    settings.RATE_LIMIT_DEFAULT = "3/minute"
    for _ in range(3):
        assert api.get("/account", alice.sandbox_key).status_code == 200
    frozen.shift(20)

    response = api.get("/account", alice.sandbox_key)

    error = assert_error(response, 429, "RATE_LIMITED")
    assert error["details"] == []
    assert response["Retry-After"] == "40"
    assert quota(response) == ("3", "0", "40")


def test_400s_count_and_carry_the_headers_too(frozen, alice, api, settings):
    settings.RATE_LIMIT_DEFAULT = "2/minute"
    response = api.post("/orders/tracking", {"identifiers": []}, alice.sandbox_key)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert quota(response) == ("2", "1", "60")


def test_unauthenticated_calls_are_not_counted(frozen, db, api, settings):
    settings.RATE_LIMIT_DEFAULT = "1/minute"
    for _ in range(3):
        response = api.get("/account", None)
        assert_error(response, 401, "UNAUTHENTICATED")
        assert "RateLimit-Limit" not in response


def test_the_window_resets_after_its_period(frozen, alice, api, settings):
    settings.RATE_LIMIT_DEFAULT = "2/minute"
    for _ in range(2):
        api.get("/account", alice.sandbox_key)
    assert api.get("/account", alice.sandbox_key).status_code == 429
    frozen.shift(59)
    assert api.get("/account", alice.sandbox_key).status_code == 429

    frozen.shift(1)
    response = api.get("/account", alice.sandbox_key)

    assert response.status_code == 200
    assert quota(response) == ("2", "1", "60")


def test_each_key_has_its_own_counter(frozen, alice, bob, api, settings):
    settings.RATE_LIMIT_DEFAULT = "2/minute"
    for _ in range(3):
        api.get("/account", alice.sandbox_key)
    assert api.get("/account", alice.sandbox_key).status_code == 429

    response = api.get("/account", bob.sandbox_key)
    assert response.status_code == 200
    assert quota(response) == ("2", "1", "60")
    # Alice's live key is another key: its own counter too.
    assert api.get("/account", alice.live_key).status_code == 200


def test_bulk_has_its_own_scope_and_limit(frozen, region, alice, api, settings):
    settings.RATE_LIMIT_BULK = "2/minute"
    settings.RATE_LIMIT_DEFAULT = "5/minute"
    for remaining in ("1", "0"):
        response = api.bulk(batch(group(drop())), alice.sandbox_key)
        assert response.status_code == 200, response.content
        assert quota(response) == ("2", remaining, "60")

    throttled = api.bulk(batch(group(drop())), alice.sandbox_key)

    assert_error(throttled, 429, "RATE_LIMITED")
    assert throttled["Retry-After"] == "60"
    assert Batch.objects.count() == 2  # the throttled batch never reached the pipeline
    # Other calls count apart, under the default limit.
    tracking = api.track(["A-1"], alice.sandbox_key)
    assert tracking.status_code == 200
    assert quota(tracking) == ("5", "4", "60")


def test_the_rate_is_read_at_request_time(frozen, alice, api, settings):
    settings.RATE_LIMIT_DEFAULT = "1/minute"
    api.get("/account", alice.sandbox_key)
    assert api.get("/account", alice.sandbox_key).status_code == 429
    settings.RATE_LIMIT_DEFAULT = "10/minute"
    response = api.get("/account", alice.sandbox_key)
    assert response.status_code == 200
    assert quota(response) == ("10", "7", "60")


def test_opening_a_window_costs_the_queries_of_counting_in_one(frozen, alice, api, settings):
    """Query-count tests elsewhere compare calls; the throttle must cost the same in each."""
    settings.RATE_LIMIT_DEFAULT = "100/second"
    api.get("/account", alice.sandbox_key)  # the key's last_used write, once a minute
    frozen.shift(2)  # the window has ended: the next call opens one

    with CaptureQueriesContext(connection) as opening:
        api.get("/account", alice.sandbox_key)
    with CaptureQueriesContext(connection) as counting:
        api.get("/account", alice.sandbox_key)

    assert len(opening) == len(counting)


def test_a_counted_request_costs_no_statement_of_its_own(
    frozen, alice, api, settings, counter_store
):
    """In the database the hit is counted by the statement that reads the key (one round trip
    for both); with Redis the database is not asked to count at all."""
    settings.RATE_LIMIT_DEFAULT = "100/minute"
    api.get("/account", alice.sandbox_key)  # the key's last_used write, once a minute

    with CaptureQueriesContext(connection) as captured:
        response = api.get("/account", alice.sandbox_key)

    assert quota(response) == ("100", "98", "60")
    counting = [q["sql"] for q in captured if "core_rate_counter" in q["sql"]]
    key_reads = [q["sql"] for q in captured if '"accounts_apikey"' in q["sql"]]
    assert len(key_reads) == 1
    if counter_store == "database":
        assert counting == key_reads
        assert counting[0].startswith("WITH subject")
        assert "INSERT INTO" in counting[0] and "ON CONFLICT" in counting[0]
        assert "RETURNING" in counting[0]
        # The key with its count; the statement reads nothing for the view.
        assert '"billing_wallet"' not in counting[0]
    else:
        assert counting == []
    assert len(captured) == 2  # the key (with its count in the database), and the account


def test_a_revoked_key_counts_nothing(frozen, alice, api, settings, counter_store):
    """The hit is counted from the key's row: a revoked key has none, so no counter appears
    (in the database: the upsert of the joined statement inserts nothing)."""
    settings.RATE_LIMIT_DEFAULT = "100/minute"
    api.get("/account", alice.sandbox_key)
    ApiKey.objects.filter(business=alice.business).update(revoked_at=timezone.now())
    RateCounter.objects.all().delete()

    response = api.get("/account", alice.sandbox_key)

    assert_error(response, 401, "UNAUTHENTICATED")
    assert "RateLimit-Limit" not in response
    assert not RateCounter.objects.filter(key__startswith="ratelimit:").exists()


def test_a_refused_call_is_counted_and_says_so(frozen, alice, api, settings):
    """Counted once the key is known, before the permissions, in either store: a suspended
    account's calls count, and each 403 carries the quota like any counted answer."""
    settings.RATE_LIMIT_DEFAULT = "3/minute"
    Business.objects.filter(pk=alice.business.pk).update(stage=Stage.SUSPENDED)

    answers = [api.get("/account", alice.sandbox_key) for _ in range(4)]

    for answer in answers:
        assert_error(answer, 403, "ACCOUNT_SUSPENDED")
    assert [quota(r) for r in answers] == [
        ("3", "2", "60"), ("3", "1", "60"), ("3", "0", "60"), ("3", "0", "60")
    ]  # fmt: skip


# --- exact under concurrency: every request counted once, whichever process serves it -----


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_are_counted_exactly(alice, settings):
    settings.RATE_LIMIT_DEFAULT = "10/minute"
    responses = run_concurrently(30, lambda api, _: api.get("/account", alice.sandbox_key))

    assert Counter(r.status_code for r in responses) == {200: 10, 429: 20}
    # No two requests saw the same count: every increment landed.
    served = sorted(int(r["RateLimit-Remaining"]) for r in responses if r.status_code == 200)
    assert served == list(range(10))
    assert all(r["Retry-After"] for r in responses if r.status_code == 429)
