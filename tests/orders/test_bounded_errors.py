"""Hostile input stays a small, clear 4xx (docs/contract.md §3): bounded details, bounded nesting,
an envelope for every /api/ answer, ASCII-only phones and identifiers."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
from django.test import Client

from core.api import MAX_JSON_DEPTH, nesting_deeper_than
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.helpers import assert_error, assert_nothing_stored

# --- details are capped ----------------------------------------------------------------------


def test_millions_of_bad_groups_answer_one_small_error_fast(alice, api):
    # The attack: 10 MB of `1,` as pickup groups once made a 430 MB answer in 13 s.
    body = b'{"client_batch_id": "x", "orders": [' + b"1," * 5_000_000 + b"1]}"
    started = time.perf_counter()
    response = api.post(
        "/orders/bulk", body, alice.sandbox_key, {"Idempotency-Key": str(uuid.uuid4())}, raw=True
    )
    elapsed = time.perf_counter() - started

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert len(response.content) < 2_000
    assert error["details"] == [
        {"field": "orders", "message": "At most 5000 drops; got 5000001 groups."}
    ]
    assert elapsed < 10, elapsed  # generous for a loaded machine; the attack took 13 s
    assert_nothing_stored()


def test_details_stop_at_one_hundred_and_count_the_rest(alice, api):
    # 300 drops, each with two problems: no client_order_id and no recipient name.
    bad = [{"dropoff": {"phone": "+85512345679", "lat": 11.5, "long": 104.9}}] * 300
    body = batch(group(*bad))

    error = assert_error(api.bulk(body, alice.sandbox_key), 400, "VALIDATION_ERROR")

    assert len(error["details"]) == 101
    assert error["details"][0] == {
        "field": "orders[0].dropoff[0].client_order_id",
        "message": "This field is required.",
    }
    assert error["details"][-1] == {"field": "", "message": "… and 500 more"}
    assert_nothing_stored()


def test_address_parts_past_the_cap_are_counted_not_listed(alice, api):
    address = {f"k{i}": i for i in range(20)}  # as many parts as allowed, none a string
    drops = [drop(f"A-{i}", address=address, lat=None, long=None) for i in range(10)]

    error = assert_error(api.bulk(batch(group(*drops)), alice.sandbox_key), 400, "VALIDATION_ERROR")

    assert len(error["details"]) == 101
    assert error["details"][0]["field"] == "orders[0].dropoff[0].dropoff.address.k0"
    assert error["details"][-1] == {"field": "", "message": "… and 100 more"}


def test_an_address_of_20000_parts_is_one_small_error(alice, api):
    address = {f"k{i}": i for i in range(20_000)}
    body = batch(group(drop("A", address=address, lat=None, long=None)))

    response = api.bulk(body, alice.sandbox_key)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"] == [
        {
            "field": "orders[0].dropoff[0].dropoff.address",
            "message": "At most 20 fields; got 20000.",
        }
    ]
    assert len(response.content) < 1000


def test_exactly_one_hundred_problems_have_no_summary_entry(alice, api):
    bad = [{"dropoff": {"name": "R", "phone": "+85512345679", "lat": 1, "long": 1}}] * 100
    error = assert_error(api.bulk(batch(group(*bad)), alice.sandbox_key), 400, "VALIDATION_ERROR")
    assert len(error["details"]) == 100
    assert all(d["message"] == "This field is required." for d in error["details"])


def test_tracking_errors_are_capped_too(alice, api):
    response = api.track([""] * 1000, alice.sandbox_key)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert len(error["details"]) == 101
    assert error["details"][-1] == {"field": "", "message": "… and 900 more"}


# --- nesting is bounded ------------------------------------------------------------------------


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"meta": value}
    return value


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200])
def test_json_nested_deeper_than_the_limit_is_malformed(open_for_business, alice, api, depth):
    # The body itself is one level; `meta` adds the rest.
    body = {**batch(), "meta": nested(depth - 1)}
    response = api.bulk(body, alice.sandbox_key)
    error = assert_error(response, 400, "MALFORMED_JSON")
    assert "64" in error["message"]
    assert_nothing_stored()


def test_json_at_the_limit_is_accepted(open_for_business, alice, api):
    body = {**batch(), "meta": nested(MAX_JSON_DEPTH - 1)}
    response = api.bulk(body, alice.sandbox_key)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["counts"]["accepted"] == 1


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["[[[[[[", {"x": "}}}}]]"}]', 2),  # brackets inside strings do not count
        (b'["a\\"[[[[", {}]', 2),  # an escaped quote does not end the string
        (b'["a\\\\", [{}]]', 3),  # an escaped backslash does not escape the quote after it
        (b'["a\\\\\\"[", [{}]]', 3),
        (b"[[[]], [[[[]]]]]", 5),
    ],
)
def test_nesting_is_read_from_the_text(text, depth):
    assert not nesting_deeper_than(text, depth)
    if depth:
        assert nesting_deeper_than(text, depth - 1)


# --- every /api/ answer is the envelope --------------------------------------------------------


@pytest.mark.parametrize("path", ["/orders/bulk", "/orders/tracking", "/orders/cancel"])
def test_empty_body_is_malformed_json_everywhere(alice, api, path):
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    response = api.post(path, b"", alice.sandbox_key, headers, raw=True)
    assert_error(response, 400, "MALFORMED_JSON")


@pytest.mark.parametrize("path", ["/orders/bulk", "/orders/tracking", "/account", "/nope"])
def test_options_is_a_405_envelope(alice, api, path):
    response = api.client.options(
        f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}"
    )
    expected = ("NOT_FOUND", 404) if path == "/nope" else ("METHOD_NOT_ALLOWED", 405)
    assert_error(response, expected[1], expected[0])


def test_a_host_outside_allowed_hosts_is_a_400_envelope(alice, api):
    response = api.client.get(
        "/api/v1/account",
        HTTP_HOST="evil.example",
        HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
    )
    assert_error(response, 400, "BAD_REQUEST")


def test_a_host_outside_allowed_hosts_on_a_page_is_not_the_envelope(db, api):
    response = api.client.get("/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_unknown_path_is_a_404_envelope_for_every_method_with_csrf_checks(alice, method):
    # A browser-like client: CSRF checks on, a session cookie present.
    client = Client(enforce_csrf_checks=True)
    client.cookies["sessionid"] = "whatever"
    for path in ("/api/v1/nope", "/api/v1/orders/nope", "/api/nope"):
        response = getattr(client, method)(
            path, b"{}", content_type="application/json", HTTP_AUTHORIZATION="Bearer x"
        )
        assert_error(response, 404, "NOT_FOUND")


# --- phones and identifiers are ASCII ----------------------------------------------------------


@pytest.mark.parametrize(
    "phone",
    [
        "+855١٢٣٤٥٦٧٨",  # Arabic-Indic digits: \d matched them
        "+855１２３４５６７８",  # full-width digits
        "+85512345679\n",  # $ matched before a final newline
        "+85512345679\r\n",
    ],
)
def test_non_ascii_or_newline_phones_are_invalid(open_for_business, alice, api, phone):
    response = api.bulk(batch(group(drop("A", phone=phone))), alice.sandbox_key)
    assert response.status_code == 200, response.content
    [entry] = response.json()["data"]["orders"]
    assert entry["failure_reason"] == "INVALID_PHONE"
    assert not Drop.objects.exists()


def test_a_pickup_phone_with_a_final_newline_is_invalid(open_for_business, alice, api):
    response = api.bulk(batch(group(drop("A"), phone="+85512345678\n")), alice.sandbox_key)
    [entry] = response.json()["data"]["orders"]
    assert entry["failure_reason"] == "INVALID_PHONE"


def test_a_request_id_with_a_final_newline_is_replaced(db, api):
    response = api.client.get("/api/v1/nope", HTTP_X_REQUEST_ID="abc\n")
    assert response["X-Request-Id"] != "abc\n"
    assert len(response["X-Request-Id"]) == 32


def test_a_rate_with_non_ascii_digits_stops_startup():
    from django.core.exceptions import ImproperlyConfigured

    from core.strict_env import parse_rate

    with pytest.raises(ImproperlyConfigured):
        parse_rate("١٠/minute", "RATE_LIMIT_DEFAULT")
    assert parse_rate("10/minute", "RATE_LIMIT_DEFAULT") == (10, 60)


def test_the_bulk_body_fingerprint_never_sees_deep_json(alice, api):
    # Nesting 254+ once reached orjson's own recursion limit in the fingerprint: a 500.
    raw = b'{"client_batch_id": "x", "orders": [], "meta": ' + b"[" * 300 + b"]" * 300 + b"}"
    response = api.post(
        "/orders/bulk", raw, alice.sandbox_key, {"Idempotency-Key": str(uuid.uuid4())}, raw=True
    )
    assert_error(response, 400, "MALFORMED_JSON")
    assert orjson.loads(response.content)["error"]["details"] == []
