"""What POST /orders/tracking (and GET /account) answer the caller of an API key: the drops of
the key's own business only, even where another business uses the same client_order_ids;
nothing of either once the account is refused; and the view's own parse decides what a body
means. Authentication only says who is calling (accounts.auth): each view reads its rows."""

from __future__ import annotations

import orjson
import pytest

from accounts.services import suspend
from tests.factories import batch, drop, group
from tests.helpers import assert_error
from tracking.selectors import track_drops

pytestmark = pytest.mark.django_db

ADVANCE = "/sandbox/orders/advance"


def rich_drop(client_order_id: str) -> dict:
    """A drop with every kind of column a tracking entry shows: times, money, JSON text."""
    return {
        **drop(client_order_id),
        "parcel": {"size": "M", "weight_kg": 2.5, "description": "Shoes", "value": "40.00"},
        "cod": {"amount": "12.50"},
        "notes": "Gate code 42",
    }


def remaining(response) -> int:
    return int(response["RateLimit-Remaining"])


def test_tracking_answers_the_drops_of_the_keys_business_only(open_for_business, make_tenant, api):
    alice, other = make_tenant(), make_tenant()
    for tenant in (other, alice):  # the same ids in both businesses
        sent = api.bulk(batch(group(*[rich_drop(f"SAME-{i}") for i in range(3)])), tenant.key())
        assert sent.json()["data"]["counts"]["accepted"] == 3
    ours = {o["client_order_id"]: o["drop_id"] for o in sent.json()["data"]["orders"]}
    moved = api.post(ADVANCE, {"identifiers": ["SAME-2"], "to": "DELIVERED"}, alice.key())
    assert moved.status_code == 200, moved.content

    # One id, active; one that does not exist; then an active one, a finished one and one
    # that does not exist.
    for wanted in (["SAME-0"], ["NOPE"], ["SAME-1", "SAME-2", "NOPE"]):
        answered = api.track(wanted, alice.key()).json()["data"]["orders"]
        selected = track_drops(business=alice.business, environment="sandbox", identifiers=wanted)
        assert answered == orjson.loads(orjson.dumps(selected))
        found = [entry for entry in answered if entry["status"] != "NOT_FOUND"]
        assert [entry["drop_id"] for entry in found] == [ours[e["client_order_id"]] for e in found]
    assert answered[1]["status"] == "DELIVERED" and answered[2]["status"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("get", "/account", None), ("post", "/orders/tracking", {"identifiers": ["SUS-1"]})],
)
def test_a_suspended_caller_gets_a_403_holding_nothing_of_its_account(
    open_for_business, make_tenant, api, method, path, body
):
    tenant = make_tenant(sandbox_balance="50.00")
    api.bulk(batch(group(drop("SUS-1"))), tenant.key())
    suspend(business=tenant.business)
    call = (lambda: api.get(path, tenant.key())) if body is None else (
        lambda: api.post(path, body, tenant.key())
    )  # fmt: skip

    first, second = call(), call()

    assert_error(first, 403, "ACCOUNT_SUSPENDED")  # the envelope of an error, no `data`
    assert "SUS-1" not in first.content.decode() and "50.00" not in first.content.decode()
    assert remaining(first) - remaining(second) == 1  # counted once each, as any call


def test_a_tracking_body_is_the_views_to_judge(open_for_business, alice, api):
    api.bulk(batch(group(drop("BODY-1"))), alice.sandbox_key)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {alice.sandbox_key}"}
    valid = orjson.dumps({"identifiers": ["BODY-1"]})

    def post(data: bytes, content_type: str = "application/json"):
        path = "/api/v1/orders/tracking"
        return api.client.post(path, data, content_type=content_type, **headers)

    # A valid request, yet not declared JSON: refused.
    refused = post(valid, "text/plain")
    assert_error(refused, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_error(post(b'{"identifiers": ["BODY-1"'), 400, "MALFORMED_JSON")
    assert_error(post(orjson.dumps({"identifiers": "BODY-1"})), 400, "VALIDATION_ERROR")
    answered = post(valid)
    assert answered.json()["data"]["orders"][0]["status"] == "PENDING"
    assert remaining(refused) - remaining(answered) == 3  # one hit each
