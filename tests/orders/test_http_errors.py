"""HTTP-level errors of the API (docs/contract.md §3): always the JSON envelope, never HTML or
a 500."""

from __future__ import annotations

import secrets
import string
import uuid

import orjson
import pytest
from django.test.client import FakePayload

from accounts.models import ApiKey, Business, Stage
from accounts.services import reactivate, revoke_api_key, suspend
from orders.models import Drop
from tests.factories import batch, drop, group, pickup
from tests.helpers import assert_error, assert_nothing_stored

MiB = 1024 * 1024


def post_without_content_type(api, path: str, body: bytes, key: str):
    """A POST whose request carries no Content-Type at all (not even an empty one)."""
    return api.client.request(
        REQUEST_METHOD="POST",
        PATH_INFO=f"/api/v1{path}",
        CONTENT_LENGTH=str(len(body)),
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **{"wsgi.input": FakePayload(body)},
    )


def unknown_key(marker: str = "svc_test_") -> str:
    return marker + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))


# --- 404 --------------------------------------------------------------------------------------


UNKNOWN_PATHS = [
    "/api/v1/nope",
    "/api/v1/orders/bulk/extra",
    "/api/v1/orders/unknown",
    "/api/v1//",
    "/api/v1/docs/nope",
    "/api/v2/orders/bulk",
    "/api/",
    "/api/nope.html",
]


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_unknown_api_path_is_a_json_404(alice, api, method):
    for path in UNKNOWN_PATHS:
        response = getattr(api.client, method)(
            path, HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}"
        )
        assert response.status_code == 404, path
        assert_error(response, 404, "NOT_FOUND")


def test_unknown_api_path_is_a_json_404_without_a_key(db, api):
    for path in UNKNOWN_PATHS:
        response = api.client.get(path)
        assert response.status_code == 404, path
        assert_error(response, 404, "NOT_FOUND")


def test_unknown_api_path_is_a_json_404_in_debug_too(db, api, settings):
    settings.DEBUG = True
    for path in UNKNOWN_PATHS:
        response = api.client.get(path, HTTP_ACCEPT="text/html")
        assert response["Content-Type"] == "application/json", path
        assert_error(response, 404, "NOT_FOUND")
        assert b"<html" not in response.content.lower()


# --- 405 and 415 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/orders/bulk"),
        ("put", "/orders/bulk"),
        ("delete", "/orders/bulk"),
        ("patch", "/orders/tracking"),
        ("get", "/orders/tracking"),
    ],
)
def test_wrong_method_is_405(alice, api, method, path):
    response = getattr(api.client, method)(
        f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}"
    )
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "POST" in response["Allow"]
    assert_nothing_stored()


def test_post_to_a_batch_is_405(alice, api):
    response = api.post(f"/batches/{uuid.uuid4()}", {}, alice.sandbox_key)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""],
)
def test_body_that_is_not_declared_json_is_415(alice, api, content_type):
    for path in ("/orders/bulk", "/orders/tracking"):
        response = api.client.post(
            f"/api/v1{path}",
            orjson.dumps(batch()),
            content_type=content_type,
            HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        )
        assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_nothing_stored()


def test_body_without_a_content_type_is_415(alice, api):
    for path in ("/orders/bulk", "/orders/tracking"):
        response = post_without_content_type(api, path, orjson.dumps(batch()), alice.sandbox_key)
        assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_nothing_stored()


def test_json_with_a_charset_is_json(open_for_business, alice, api):
    response = api.client.post(
        "/api/v1/orders/bulk",
        orjson.dumps(batch(group(drop("C-1")))),
        content_type="application/json; charset=utf-8",
        HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )
    assert response.status_code == 200, response.content
    assert Drop.objects.get().client_order_id == "C-1"


# --- 413 --------------------------------------------------------------------------------------


def padded_batch(size: int) -> bytes:
    """A valid one-drop batch whose JSON is exactly `size` bytes (whitespace padding)."""
    body = orjson.dumps(batch(group(drop("P-1")), client_batch_id="B"))
    return body.replace(b'"B"', b'"B"' + b" " * (size - len(body)), 1)


def test_body_over_the_limit_is_413(alice, api, settings):
    settings.MAX_BODY_BYTES = 1000
    response = api.post(
        "/orders/bulk",
        padded_batch(1001),
        alice.sandbox_key,
        {"Idempotency-Key": str(uuid.uuid4())},
        raw=True,
    )
    error = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert "1000" in error["message"]
    assert_nothing_stored()


def test_body_at_the_limit_is_processed(open_for_business, alice, api, settings):
    settings.MAX_BODY_BYTES = 1000
    body = padded_batch(1000)
    assert len(body) == 1000
    response = api.post(
        "/orders/bulk", body, alice.sandbox_key, {"Idempotency-Key": str(uuid.uuid4())}, raw=True
    )
    assert response.status_code == 200, response.content
    assert Drop.objects.count() == 1


def test_oversized_body_is_413_before_authentication(db, api, settings):
    settings.MAX_BODY_BYTES = 1000
    response = api.post("/orders/tracking", b"[" + b" " * 2000 + b"]", None, raw=True)
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_eleven_mebibyte_body_is_413(alice, api):
    body = b'{"client_batch_id": "' + b"x" * (11 * MiB) + b'", "orders": []}'
    response = api.post(
        "/orders/bulk", body, alice.sandbox_key, {"Idempotency-Key": str(uuid.uuid4())}, raw=True
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert_nothing_stored()


# --- 401 --------------------------------------------------------------------------------------


def assert_unauthenticated(response) -> None:
    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["/orders/bulk", "/orders/tracking"])
def test_request_without_a_key_is_401(db, api, path):
    response = api.post(path, batch(), None, {"Idempotency-Key": str(uuid.uuid4())})
    assert_unauthenticated(response)
    assert_nothing_stored()


def test_batch_lookup_without_a_key_is_401(db, api):
    assert_unauthenticated(api.get(f"/batches/{uuid.uuid4()}", None))


@pytest.mark.parametrize("marker", ["svc_test_", "svc_live_"])
def test_unknown_key_is_401(alice, api, marker):
    response = api.bulk(batch(), unknown_key(marker))
    assert_unauthenticated(response)
    assert_nothing_stored()


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Bearer ",
        "Bearer abc",
        "Bearer svc_prod_" + "a" * 40,
        "Bearer svc_test_" + "a" * 39 + "!",
        "Basic YWxpY2U6c2VjcmV0",
        "Token svc_test_" + "a" * 40,
        "svc_test_" + "a" * 40,
    ],
)
def test_malformed_or_foreign_authorization_is_401(alice, api, authorization):
    response = api.post(
        "/orders/bulk",
        batch(),
        None,
        {"Authorization": authorization, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert_unauthenticated(response)
    assert_nothing_stored()


def test_real_key_with_extra_characters_is_401(alice, api):
    assert_unauthenticated(api.bulk(batch(), alice.sandbox_key + "x"))
    assert_unauthenticated(api.bulk(batch(), alice.sandbox_key[:-1]))
    assert_nothing_stored()


def test_revoked_key_is_401(open_for_business, alice, api):
    assert api.track(["X-1"], alice.sandbox_key).status_code == 200
    revoke_api_key(key=ApiKey.objects.get(business=alice.business, environment="sandbox"))
    assert_unauthenticated(api.track(["X-1"], alice.sandbox_key))
    assert_unauthenticated(api.bulk(batch(), alice.sandbox_key))
    assert_nothing_stored()


# --- 403 --------------------------------------------------------------------------------------


def test_suspended_business_is_403_on_every_key(open_for_business, alice, api):
    suspend(business=alice.business)
    for key in (alice.sandbox_key, alice.live_key):
        assert_error(api.bulk(batch(), key), 403, "ACCOUNT_SUSPENDED")
        assert_error(api.track(["X-1"], key), 403, "ACCOUNT_SUSPENDED")
        assert_error(api.get(f"/batches/{uuid.uuid4()}", key), 403, "ACCOUNT_SUSPENDED")
    assert_nothing_stored()


def test_reactivated_business_can_call_again(open_for_business, alice, api):
    suspend(business=alice.business)
    reactivate(business=alice.business)
    assert api.bulk(batch(group(drop())), alice.live_key).status_code == 200
    assert Drop.objects.count() == 1


def test_live_key_of_a_business_no_longer_live_is_403(open_for_business, make_tenant, api):
    tenant = make_tenant(stage="live", live_balance="50.00")
    Business.objects.filter(pk=tenant.business.pk).update(stage=Stage.APPROVED)
    assert_error(api.bulk(batch(group(drop())), tenant.live_key), 403, "LIVE_ACCESS_DISABLED")
    assert_error(api.track(["X-1"], tenant.live_key), 403, "LIVE_ACCESS_DISABLED")
    assert_nothing_stored()
    # The sandbox stays open to an approved business.
    assert api.bulk(batch(group(drop())), tenant.sandbox_key).status_code == 200
    assert Drop.objects.get().environment == "sandbox"


# --- X-Request-Id -----------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", ["req_2026.11.23:0001-a", "A" * 128])
def test_sane_request_id_is_echoed(open_for_business, alice, api, request_id):
    headers = {"X-Request-Id": request_id}
    ok = api.bulk(batch(group(drop())), alice.sandbox_key, headers=headers)
    assert ok.status_code == 200
    assert ok["X-Request-Id"] == request_id

    error = api.bulk({"orders": []}, alice.sandbox_key, headers=headers)
    assert assert_error(error, 400, "VALIDATION_ERROR")["request_id"] == request_id

    unauthenticated = api.post("/orders/tracking", {"identifiers": ["A"]}, None, headers)
    assert assert_error(unauthenticated, 401, "UNAUTHENTICATED")["request_id"] == request_id

    missing = api.get("/nope", alice.sandbox_key, headers)
    assert assert_error(missing, 404, "NOT_FOUND")["request_id"] == request_id


@pytest.mark.parametrize(
    "request_id",
    ["", "has space", "A" * 129, "<script>alert(1)</script>", "ré"],
)
def test_insane_request_id_is_replaced(alice, api, request_id):
    headers = {"X-Request-Id": request_id}
    response = api.post("/orders/tracking", {"identifiers": []}, alice.sandbox_key, headers)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert response["X-Request-Id"] != request_id
    assert len(response["X-Request-Id"]) == 32
    assert error["request_id"] == response["X-Request-Id"]


def test_each_response_gets_its_own_request_id(db, api):
    first, second = api.get("/nope", None), api.get("/nope", None)
    assert first["X-Request-Id"] != second["X-Request-Id"]


@pytest.mark.parametrize("path", ["/healthz", "/admin/login/", "/api/v1/nope", "/no-such-page"])
def test_every_response_carries_a_request_id(db, api, path):
    response = api.client.get(path)
    assert response["X-Request-Id"]


# --- garbage bodies ---------------------------------------------------------------------------


def with_nul(path: tuple, value) -> bytes:
    """A valid one-drop batch with `value` (carrying a NUL) at `path`."""
    body = batch(group(drop("N-1")))
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return orjson.dumps(body)


DROP = ("orders", 0, "dropoff", 0)
ADDRESS = {"complete_address": "Royal Palace, Phnom Penh", "city": "Phnom Penh"}

GARBAGE = {
    "not json": b"this is not json",
    "single quotes": b"{'client_batch_id': 'B-1'}",
    "truncated": b'{"client_batch_id": "B-1", "orders": [',
    "trailing comma": b'{"client_batch_id": "B-1",}',
    "two documents": b'{"client_batch_id": "B-1"} {}',
    "invalid utf-8": b"\xff\xfe\xfd",
    "invalid utf-8 in a string": b'{"client_batch_id": "B-\xc3\x28"}',
    "lone surrogate escape": b'{"client_batch_id": "B-\\ud800"}',
    "byte order mark": b"\xef\xbb\xbf" + orjson.dumps(batch()),
    "deep nesting": b"[" * 5000 + b"]" * 5000,
    "deep nesting in orders": b'{"client_batch_id": "B", "orders": '
    + b"[" * 5000
    + b"]" * 5000
    + b"}",
    "deep objects": b'{"a":' * 3000 + b"1" + b"}" * 3000,
    "nul in client_batch_id": orjson.dumps(batch(client_batch_id="B-\x00-1")),
    "nul in client_order_id": with_nul((*DROP, "client_order_id"), "N-\x001"),
    "nul in recipient name": with_nul((*DROP, "dropoff", "name"), "Re\x00cipient"),
    "nul in pickup name": with_nul(("orders", 0, "pickup", "name"), "Sh\x00op"),
    "nul in external_waybill": with_nul((*DROP, "external_waybill"), "WB\x00"),
    "nul in address value": with_nul((*DROP, "dropoff", "address"), {**ADDRESS, "city": "P\x00P"}),
    "nul in address key": with_nul((*DROP, "dropoff", "address"), {**ADDRESS, "ci\x00ty": "PP"}),
    "nul in pickup address": with_nul(
        ("orders", 0, "pickup", "address"), {"complete_address": "\x00"}
    ),
    "nul in pickup_scheduled_at": with_nul(
        ("orders", 0, "pickup", "pickup_scheduled_at"), "2026-11-23T07:00:00Z\x00"
    ),
    "nul in identifiers": orjson.dumps({"identifiers": ["A-\x00"]}),
    "wrong types at the top": orjson.dumps({"client_batch_id": ["B"], "orders": {"0": group()}}),
    "wrong types in groups": orjson.dumps(
        {"client_batch_id": 7, "orders": [None, 5, "g", [], {"pickup": 1, "dropoff": "x"}]}
    ),
    "wrong types in a drop": orjson.dumps(
        {
            "client_batch_id": {"id": 1},
            "orders": [
                {
                    "pickup": {
                        "name": 1,
                        "phone": [],
                        "lat": "x",
                        "long": {},
                        "address": 5,
                        "pickup_scheduled_at": {},
                    },
                    "dropoff": [
                        {"client_order_id": 1.5, "external_waybill": [], "dropoff": []},
                        {"client_order_id": True, "dropoff": {"name": None, "address": []}},
                        None,
                    ],
                }
            ],
        }
    ),
    "huge number": b'{"client_batch_id": "B", "orders": [{"pickup": {"lat": 1e400}}]}',
    "huge number at the top": b"1e400",
    "huge negative number": b'{"client_batch_id": -1e999}',
    "huge integer": b'{"client_batch_id": 123456789012345678901234567890, "orders": []}',
    "NaN literal": b'{"client_batch_id": "B", "orders": [{"pickup": {"lat": NaN}}]}',
    "Infinity literal": b'{"client_batch_id": Infinity}',
    "empty body": b"",
    "whitespace body": b"  \n\t ",
    "top-level string": b'"orders"',
    "top-level number": b"42",
    "top-level null": b"null",
    "top-level true": b"true",
    "top-level array": orjson.dumps([batch()]),
    "far past schedule with offset": orjson.dumps(
        batch(group(drop(), pickup_scheduled_at="0001-01-01T00:00:00+01:00"))
    ),
    "far future schedule with offset": orjson.dumps(
        batch(group(drop(), pickup_scheduled_at="9999-12-31T23:00:00-05:00"))
    ),
    "schedule at the end of time": orjson.dumps(
        batch(group(drop(), pickup_scheduled_at="9999-12-31T20:00:00Z"))
    ),
}


@pytest.mark.parametrize("body", list(GARBAGE.values()), ids=list(GARBAGE))
def test_garbage_body_is_a_json_4xx_and_stores_nothing(open_for_business, alice, api, body):
    for path in ("/orders/bulk", "/orders/tracking"):
        response = api.post(
            path, body, alice.sandbox_key, {"Idempotency-Key": str(uuid.uuid4())}, raw=True
        )
        assert response.status_code == 400, (path, response.content)
        error = assert_error(response, 400, response.json()["error"]["code"])
        assert error["code"] in {"MALFORMED_JSON", "VALIDATION_ERROR"}
    assert_nothing_stored()


def test_malformed_json_names_the_problem(alice, api):
    response = api.post(
        "/orders/bulk",
        b'{"client_batch_id": ',
        alice.sandbox_key,
        {"Idempotency-Key": str(uuid.uuid4())},
        raw=True,
    )
    error = assert_error(response, 400, "MALFORMED_JSON")
    assert "JSON" in error["message"]


def test_garbage_in_a_pickup_is_not_mistaken_for_a_valid_group(open_for_business, alice, api):
    body = batch(group(drop("OK-1")), group(drop("OK-2")))
    body["orders"][1]["pickup"] = pickup(name="\x00")
    response = api.bulk(body, alice.sandbox_key)
    details = assert_error(response, 400, "VALIDATION_ERROR")["details"]
    assert [d["field"] for d in details] == ["orders[1].pickup.name"]
    assert_nothing_stored()
