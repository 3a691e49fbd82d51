"""GET /events through HTTP: creation order, the `after` cursor, filters, and isolation."""

from __future__ import annotations

import pytest
from django.utils import timezone

from accounts.models import Business, Stage
from events.models import Event, EventType
from events.services import new_event_id
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def make_events(tenant, count: int, *, environment="sandbox", type=EventType.BATCH_CREATED):
    """`count` events of the tenant, written as record_events writes them (one statement)."""
    at = timezone.now()
    return Event.objects.bulk_create(
        Event(
            public_id=new_event_id(at),
            business=tenant.business,
            environment=environment,
            type=type,
            data={"n": n},
            created_at=at,
        )
        for n in range(count)
    )


def list_events(api, key: str, query: str = ""):
    return api.get(f"/events{query}", key)


def test_events_are_listed_in_creation_order_with_their_fields(alice, api):
    made = make_events(alice, 3)
    response = list_events(api, alice.sandbox_key)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["has_more"] is False
    assert [e["id"] for e in data["events"]] == [e.public_id for e in made]
    first = data["events"][0]
    assert set(first) == {"id", "type", "created_at", "environment", "data"}
    assert first["id"].startswith("evt_") and len(first["id"]) == 30
    assert first["type"] == "batch.created"
    assert first["environment"] == "sandbox"
    assert first["created_at"].endswith("Z")
    assert first["data"] == {"n": 0}


def test_after_pages_through_the_feed_without_gaps_or_repeats(alice, api):
    made = make_events(alice, 7)
    seen, after, pages = [], "", 0
    while True:
        data = list_events(api, alice.sandbox_key, f"?limit=3{after}").json()["data"]
        seen += [e["id"] for e in data["events"]]
        pages += 1
        if not data["has_more"]:
            break
        after = f"&after={data['events'][-1]['id']}"
    assert seen == [e.public_id for e in made]
    assert pages == 3


def test_after_the_last_event_is_empty_until_a_new_one(alice, api):
    [last] = make_events(alice, 1)
    query = f"?after={last.public_id}"
    assert list_events(api, alice.sandbox_key, query).json()["data"] == {
        "events": [],
        "has_more": False,
    }
    [new] = make_events(alice, 1)
    events = list_events(api, alice.sandbox_key, query).json()["data"]["events"]
    assert [e["id"] for e in events] == [new.public_id]


def test_default_limit_is_100(alice, api):
    make_events(alice, 101)
    data = list_events(api, alice.sandbox_key).json()["data"]
    assert len(data["events"]) == 100 and data["has_more"] is True


def test_type_filters_the_feed(alice, api):
    make_events(alice, 2, type=EventType.BATCH_CREATED)
    moves = make_events(alice, 2, type=EventType.ORDER_STATUS_CHANGED)
    response = list_events(api, alice.sandbox_key, "?type=order.status_changed")
    assert [e["id"] for e in response.json()["data"]["events"]] == [e.public_id for e in moves]


def test_each_key_sees_only_its_business_and_environment(alice, bob, api):
    alice_sandbox = make_events(alice, 2)
    alice_live = make_events(alice, 1, environment="live")
    bob_sandbox = make_events(bob, 1)

    def ids(key):
        return [e["id"] for e in list_events(api, key).json()["data"]["events"]]

    assert ids(alice.sandbox_key) == [e.public_id for e in alice_sandbox]
    assert ids(alice.live_key) == [e.public_id for e in alice_live]
    assert ids(bob.sandbox_key) == [e.public_id for e in bob_sandbox]
    assert ids(bob.live_key) == []


@pytest.mark.parametrize("owner", ["other business", "other environment", "unknown"])
def test_an_after_id_that_is_not_this_feeds_is_a_400(alice, bob, api, owner):
    if owner == "other business":
        [event] = make_events(bob, 1)
        after = event.public_id
    elif owner == "other environment":
        [event] = make_events(alice, 1, environment="live")
        after = event.public_id
    else:
        after = new_event_id()
    make_events(alice, 1)
    error = assert_error(
        list_events(api, alice.sandbox_key, f"?after={after}"), 400, "VALIDATION_ERROR"
    )
    assert [d["field"] for d in error["details"]] == ["after"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?limit=abc", "limit"),
        ("?limit=5.0", "limit"),
        ("?limit=-1", "limit"),
        ("?limit=", "limit"),
        ("?type=order.created", "type"),
        ("?type=", "type"),
        ("?after=evt_nope", "after"),
        ("?after=evt_%00", "after"),
    ],
)
def test_bad_query_parameters_are_400_naming_the_parameter(alice, api, query, field):
    error = assert_error(list_events(api, alice.sandbox_key, query), 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == [field]


def test_limit_500_is_allowed(alice, api):
    make_events(alice, 2)
    response = list_events(api, alice.sandbox_key, "?limit=500")
    assert response.status_code == 200
    assert len(response.json()["data"]["events"]) == 2


def test_the_feed_costs_the_same_queries_whatever_its_length(
    alice, api, django_assert_max_num_queries
):
    [first] = make_events(alice, 1)
    make_events(alice, 300)
    list_events(api, alice.sandbox_key)  # the key's last_used_at and rate window warm up
    with django_assert_max_num_queries(8) as captured:
        response = list_events(api, alice.sandbox_key, f"?after={first.public_id}&limit=500")
    assert len(response.json()["data"]["events"]) == 300
    feed = [q["sql"] for q in captured.captured_queries if '"events_event"' in q["sql"]]
    assert len(feed) == 2  # the cursor's position, then one page
    assert all("ORDER BY" not in sql or '"seq" ASC' in sql for sql in feed)


def test_a_suspended_account_may_not_read_its_events(alice, api):
    Business.objects.filter(pk=alice.business.pk).update(stage=Stage.SUSPENDED)
    assert_error(list_events(api, alice.sandbox_key), 403, "ACCOUNT_SUSPENDED")


def test_no_key_is_401(api):
    assert_error(list_events(api, None), 401, "UNAUTHENTICATED")
