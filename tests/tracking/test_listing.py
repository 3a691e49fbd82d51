"""GET /orders and /batches over HTTP: order, filters, pages, cursors, isolation
(docs/contract.md §13)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.core import signing

from core.cursors import InvalidCursor, make_cursor
from events.models import Event, EventType
from orders.models import UNCHANGED_SINCE_CREATED, Drop, DropStatus
from tests.factories import batch, drop, group
from tests.helpers import TRACKING_ENTRY_KEYS, assert_error
from tests.tracking.helpers import advance, place
from tracking.listing import CURSOR_SALT, SYNC_MARGIN, DropFilters, list_drops

pytestmark = pytest.mark.django_db

S = DropStatus
SINCE_EVER = "2000-01-01T00:00:00Z"


def get_orders(api, key: str, **params):
    return api.get(f"/orders?{urlencode(params)}", key)


def data_of(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()["data"]


def ids_of(page: dict) -> list[str]:
    return [entry["client_order_id"] for entry in page["orders"]]


def every_page(api, key: str, path: str = "/orders", **params) -> list[dict]:
    """The data of each page, following next_cursor until has_more is false."""
    pages, cursor = [], None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        page = data_of(api.get(f"{path}?{urlencode(query)}", key))
        pages.append(page)
        if not page["has_more"]:
            return pages
        cursor = page["next_cursor"]


def after_the_margin(clock) -> None:
    """Past SYNC_MARGIN: changes stamped until now are listed in the sync order."""
    clock.shift(SYNC_MARGIN.total_seconds() + 1)


# --- Newest first ----------------------------------------------------------------------


def test_newest_first_pages_through_every_drop_once(open_for_business, alice, api):
    key = alice.sandbox_key
    for n in range(3):
        place(api, key, *[f"N{n}-{i}" for i in range(3)])
        open_for_business.shift(60)
    expected = list(
        Drop.objects.filter(business=alice.business, environment="sandbox")
        .order_by("-created_at", "-id")
        .values_list("client_order_id", flat=True)
    )
    pages = every_page(api, key, limit=4)
    assert [len(p["orders"]) for p in pages] == [4, 4, 1]
    assert [p["has_more"] for p in pages] == [True, True, False]
    assert pages[-1]["next_cursor"] is None
    assert [i for p in pages for i in ids_of(p)] == expected
    assert {i[:2] for i in expected[:3]} == {"N2"}


def test_entries_are_tracking_entries(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "E-1", "E-2")
    advance(api, key, "E-1", to=S.ASSIGNED)
    listed = {e["client_order_id"]: e for e in data_of(get_orders(api, key))["orders"]}
    tracked = {e["client_order_id"]: e for e in data_of(api.track(["E-1", "E-2"], key))["orders"]}
    assert listed == tracked
    assert set(listed["E-1"]) >= TRACKING_ENTRY_KEYS
    assert listed["E-1"]["status"] == S.ASSIGNED and listed["E-1"]["sequence"] == 2


def test_limit_defaults_to_100_and_takes_1_to_500(open_for_business, make_tenant, api):
    key = make_tenant(sandbox_balance="1000.00").sandbox_key
    place(api, key, *[f"L-{i}" for i in range(101)])
    page = data_of(get_orders(api, key))
    assert len(page["orders"]) == 100 and page["has_more"] and page["next_cursor"]
    assert len(data_of(get_orders(api, key, limit=500))["orders"]) == 101
    assert len(data_of(get_orders(api, key, limit=1))["orders"]) == 1
    for bad in ("0", "501", "ten", "-1", "1.0", ""):
        error = assert_error(get_orders(api, key, limit=bad), 400, "VALIDATION_ERROR")
        assert [d["field"] for d in error["details"]] == ["limit"], bad


def test_status_filter_takes_a_comma_list(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "S-1", "S-2", "S-3")
    advance(api, key, "S-1", to=S.ASSIGNED)
    advance(api, key, "S-2", to=S.DELIVERED)
    both = data_of(get_orders(api, key, status="ASSIGNED,DELIVERED"))
    assert sorted(ids_of(both)) == ["S-1", "S-2"]
    assert ids_of(data_of(get_orders(api, key, status="PENDING"))) == ["S-3"]
    assert ids_of(data_of(get_orders(api, key, status="FAILED"))) == []
    for bad in ("pending", "PENDING,", "PENDING;ASSIGNED", "NOPE", "", " PENDING"):
        error = assert_error(get_orders(api, key, status=bad), 400, "VALIDATION_ERROR")
        assert [d["field"] for d in error["details"]] == ["status"], bad


def test_batch_filter_lists_only_that_batch_and_only_its_own(open_for_business, alice, bob, api):
    first = data_of(api.bulk(batch(group(drop("B-1"), drop("B-2"))), alice.sandbox_key))
    data_of(api.bulk(batch(group(drop("B-3"))), alice.sandbox_key))
    live = data_of(api.bulk(batch(group(drop("LIVE-1"))), alice.live_key))
    bobs = data_of(api.bulk(batch(group(drop("BOB-1"))), bob.sandbox_key))
    key = alice.sandbox_key
    assert sorted(ids_of(data_of(get_orders(api, key, batch_id=first["batch_id"])))) == [
        "B-1",
        "B-2",
    ]
    # Another business's batch, or this business's batch of the other environment.
    for other in (bobs["batch_id"], live["batch_id"]):
        page = data_of(get_orders(api, key, batch_id=other))
        assert page == {"orders": [], "has_more": False, "next_cursor": None}
    error = assert_error(get_orders(api, key, batch_id="not-a-uuid"), 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "batch_id"


def test_environments_and_businesses_never_mix(open_for_business, alice, bob, api):
    place(api, alice.sandbox_key, "MINE")
    api.bulk(batch(group(drop("MINE-LIVE"))), alice.live_key)
    place(api, bob.sandbox_key, "BOBS")
    assert ids_of(data_of(get_orders(api, alice.sandbox_key))) == ["MINE"]
    assert ids_of(data_of(get_orders(api, alice.live_key))) == ["MINE-LIVE"]
    assert ids_of(data_of(get_orders(api, bob.sandbox_key))) == ["BOBS"]


def test_created_since(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "OLD")
    open_for_business.shift(3600)
    place(api, key, "NEW")
    # 03:30 UTC, written three ways.
    for since in ("2026-11-23T03:30:00Z", "2026-11-23T10:30:00+07:00", "2026-11-23t03:30:00z"):
        assert ids_of(data_of(get_orders(api, key, created_since=since))) == ["NEW"], since
    assert ids_of(data_of(get_orders(api, key, created_since=SINCE_EVER))) == ["NEW", "OLD"]
    for bad in ("2026-11-23T03:30:00", "2026-11-23", "yesterday", "2026-13-01T00:00:00Z"):
        error = assert_error(get_orders(api, key, created_since=bad), 400, "VALIDATION_ERROR")
        assert [d["field"] for d in error["details"]] == ["created_since"], bad


# --- Oldest change first: the sync order -----------------------------------------------------


def test_sync_order_lists_each_change_again_later(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "A", "B", "C")
    after_the_margin(open_for_business)
    first = data_of(get_orders(api, key, updated_since=SINCE_EVER))
    rows = Drop.objects.filter(business=alice.business).order_by("updated_at", "id")
    assert ids_of(first) == [d.client_order_id for d in rows]
    assert first["has_more"] is False and first["next_cursor"]

    advance(api, key, "B", to=S.ASSIGNED)
    # Within the margin the change waits; the cursor stays where it was.
    waiting = data_of(get_orders(api, key, updated_since=SINCE_EVER, cursor=first["next_cursor"]))
    assert waiting["orders"] == [] and waiting["next_cursor"]
    after_the_margin(open_for_business)
    second = data_of(get_orders(api, key, updated_since=SINCE_EVER, cursor=waiting["next_cursor"]))
    assert ids_of(second) == ["B"]
    assert second["orders"][0]["status"] == S.ASSIGNED
    third = data_of(get_orders(api, key, updated_since=SINCE_EVER, cursor=second["next_cursor"]))
    assert third["orders"] == [] and third["has_more"] is False and third["next_cursor"]


def test_sync_order_pages_and_filters(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, *[f"P-{i}" for i in range(5)])
    open_for_business.shift(60)
    advance(api, key, "P-0", "P-1", to=S.ASSIGNED)
    after_the_margin(open_for_business)
    pages = every_page(api, key, updated_since=SINCE_EVER, limit=2)
    listed = [i for p in pages for i in ids_of(p)]
    assert len(listed) == 5 and listed[-2:] in (["P-0", "P-1"], ["P-1", "P-0"])
    assert all(p["next_cursor"] for p in pages)
    assigned = data_of(get_orders(api, key, updated_since=SINCE_EVER, status="ASSIGNED"))
    assert sorted(ids_of(assigned)) == ["P-0", "P-1"]
    since = data_of(get_orders(api, key, updated_since="2026-11-23T03:00:30Z"))
    assert sorted(ids_of(since)) == ["P-0", "P-1"]


def test_sync_order_merges_drops_as_created_with_changed_ones(open_for_business, alice, api):
    """Drops still as created are read from the created index, changed ones from the index
    of changes (drop_listing_by_change); the sync order interleaves both by (updated_at, id),
    every drop once, in every status a drop is created in or moves to."""
    key = alice.sandbox_key
    place(api, key, "U-1", "U-2")  # PENDING, as created
    open_for_business.shift(60)
    place(api, key, "S-1", "S-2", scheduled_at="2026-11-23T09:00:00Z")  # SCHEDULED, as created
    open_for_business.shift(60)
    advance(api, key, "U-1", to=S.ASSIGNED)
    open_for_business.shift(60)
    place(api, key, "U-3")
    open_for_business.shift(60)
    advance(api, key, "S-2", to=S.ASSIGNED)
    after_the_margin(open_for_business)
    mine = Drop.objects.filter(business=alice.business, environment="sandbox")
    # The bulk call writes drops as created (the partial index's complement), moves never do.
    assert set(mine.filter(UNCHANGED_SINCE_CREATED).values_list("client_order_id", flat=True)) == {
        "U-2",
        "S-1",
        "U-3",
    }
    expected = list(mine.order_by("updated_at", "id").values_list("client_order_id", flat=True))
    assert expected == ["U-2", "S-1", "U-1", "U-3", "S-2"]
    for limit in (1, 2, 100):
        pages = every_page(api, key, updated_since=SINCE_EVER, limit=limit)
        assert [i for p in pages for i in ids_of(p)] == expected, limit
    pending = every_page(api, key, updated_since=SINCE_EVER, status="PENDING,SCHEDULED", limit=1)
    assert [i for p in pending for i in ids_of(p)] == ["U-2", "S-1", "U-3"]


# --- Cursors -----------------------------------------------------------------------------


def cursor_error(response) -> str:
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [d["field"] for d in error["details"]] == ["cursor"], error
    return error["details"][0]["message"]


def test_a_tampered_cursor_is_400(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "T-1", "T-2", "T-3")
    cursor = data_of(get_orders(api, key, limit=1))["next_cursor"]
    assert data_of(get_orders(api, key, limit=1, cursor=cursor))["orders"]
    middle = len(cursor) // 3
    flipped = cursor[:middle] + ("A" if cursor[middle] != "A" else "B") + cursor[middle + 1 :]
    for bad in (flipped, cursor[:-1], cursor + "x", "abc", "a:b:c"):
        assert "altered" in cursor_error(get_orders(api, key, limit=1, cursor=bad)), bad
    # Not a cursor's characters at all: refused by its shape.
    cursor_error(get_orders(api, key, cursor="not a cursor!"))


def test_a_cursor_is_bound_to_its_filters_and_its_account(open_for_business, alice, bob, api):
    key = alice.sandbox_key
    place(api, key, "F-1", "F-2")
    first = data_of(get_orders(api, key, limit=1))
    cursor = first["next_cursor"]
    assert "other filters" in cursor_error(get_orders(api, key, cursor=cursor, status="PENDING"))
    cursor_error(get_orders(api, key, cursor=cursor, updated_since=SINCE_EVER))
    cursor_error(get_orders(api, alice.live_key, cursor=cursor))
    cursor_error(get_orders(api, bob.sandbox_key, cursor=cursor))
    # Another listing's cursor.
    api.bulk(batch(group(drop("F-3"))), key)
    batches_cursor = data_of(api.get("/batches?limit=1", key))["next_cursor"]
    cursor_error(get_orders(api, key, cursor=batches_cursor))
    cursor_error(api.get(f"/batches?cursor={cursor}", key))
    # The page size may change between pages.
    rest = ids_of(data_of(get_orders(api, key, cursor=cursor, limit=5)))
    assert sorted(ids_of(first) + rest) == ["F-1", "F-2"]


def test_unknown_parameters_are_refused(open_for_business, alice, api):
    error = assert_error(
        get_orders(api, alice.sandbox_key, statuses="PENDING"), 400, "VALIDATION_ERROR"
    )
    assert [d["field"] for d in error["details"]] == ["statuses"]


def test_listing_needs_a_key(api):
    assert_error(api.get("/orders", None), 401, "UNAUTHENTICATED")
    assert_error(api.get("/batches", None), 401, "UNAUTHENTICATED")


# --- GET /batches -----------------------------------------------------------------------------


def test_batches_newest_first_as_in_batch_created(open_for_business, alice, bob, api):
    key = alice.sandbox_key
    made = []
    for n in range(3):
        drops = [drop(f"BA-{n}")] + ([drop(f"BAD-{n}", phone="nope")] if n == 1 else [])
        made.append(data_of(api.bulk(batch(group(*drops)), key)))
        open_for_business.shift(1)
    api.bulk(batch(group(drop("BOB-B"))), bob.sandbox_key)
    api.bulk(batch(group(drop("LIVE-B"))), alice.live_key)
    pages = every_page(api, key, path="/batches", limit=2)
    assert [len(p["batches"]) for p in pages] == [2, 1]
    assert pages[-1]["next_cursor"] is None
    listed = [b for p in pages for b in p["batches"]]
    assert [b["batch_id"] for b in listed] == [m["batch_id"] for m in reversed(made)]
    created = {
        e.data["batch_id"]: e.data
        for e in Event.objects.filter(business=alice.business, type=EventType.BATCH_CREATED)
    }
    for summary in listed:
        # The event's data, and when the batch was made: the time its result gave.
        assert {k: v for k, v in summary.items() if k != "created_at"} == created[
            summary["batch_id"]
        ]
    assert [b["created_at"] for b in listed] == [m["created_at"] for m in reversed(made)]
    assert all(b["created_at"].endswith("Z") for b in listed)
    assert listed[1]["status"] == "PARTIAL" and listed[1]["counts"]["rejected"] == 1
    assert listed[0]["poll_url"] == made[-1]["poll_url"]


def test_batches_refuse_bad_parameters(open_for_business, alice, api):
    key = alice.sandbox_key
    for query in ("limit=0", "limit=501", "cursor=abc", "page=2"):
        assert_error(api.get(f"/batches?{query}", key), 400, "VALIDATION_ERROR")
    assert data_of(api.get("/batches", key)) == {
        "batches": [],
        "has_more": False,
        "next_cursor": None,
    }


# --- The dashboard's filters (tracking.listing.DropFilters; no API parameter) ---------------


def listed_ids(business, environments=("sandbox",), limit: int = 100, **filters) -> list[str]:
    """Every client_order_id the listing gives for these filters, page after page."""
    found, cursor = [], None
    while True:
        page = list_drops(
            business=business,
            environments=list(environments),
            filters=DropFilters(**filters),
            limit=limit,
            cursor=cursor,
        )
        found += [entry["client_order_id"] for entry in page.orders]
        if not page.has_more:
            return found
        cursor = page.next_cursor


def test_search_matches_order_id_waybill_or_recipient_name(open_for_business, alice, bob, api):
    key = alice.sandbox_key
    api.bulk(batch(group(drop("FIND-me"), drop("W-1", waybill="wb-FIND-9"))), key)
    api.bulk(batch(group(drop("N-1", name="Finda Sok"), drop("NOPE"))), key)
    place(api, bob.sandbox_key, "FIND-BOB")
    found = listed_ids(alice.business, search="find", limit=2)
    assert sorted(found) == ["FIND-me", "N-1", "W-1"]
    assert listed_ids(alice.business, search="sok") == ["N-1"]
    # The old name of the filter still works, with the new reach.
    assert sorted(listed_ids(alice.business, client_order_id_contains="find")) == sorted(found)


def test_created_before_is_an_exclusive_bound(open_for_business, alice, api):
    key = alice.sandbox_key
    place(api, key, "EARLY")
    open_for_business.shift(3600)
    place(api, key, "LATE")
    late = Drop.objects.get(client_order_id="LATE").created_at
    assert listed_ids(alice.business, created_before=late) == ["EARLY"]
    assert listed_ids(alice.business, created_before=late + timedelta(microseconds=1)) == [
        "LATE",
        "EARLY",
    ]
    early = Drop.objects.get(client_order_id="EARLY").created_at
    both = {"created_since": early, "created_before": late}
    assert listed_ids(alice.business, **both) == ["EARLY"]


def test_batch_ids_lists_any_of_those_batches_of_the_account(open_for_business, alice, bob, api):
    one = api.bulk(batch(group(drop("ONE-1"), drop("ONE-2"))), alice.sandbox_key).json()["data"]
    two = api.bulk(batch(group(drop("TWO-1"))), alice.live_key).json()["data"]
    api.bulk(batch(group(drop("THREE-1"))), alice.sandbox_key)
    bobs = api.bulk(batch(group(drop("BOB-1"))), bob.sandbox_key).json()["data"]
    ids = tuple(uuid.UUID(b["batch_id"]) for b in (one, two, bobs))
    both = listed_ids(alice.business, ("sandbox", "live"), limit=1, batch_ids=ids)
    assert sorted(both) == ["ONE-1", "ONE-2", "TWO-1"]
    assert sorted(listed_ids(alice.business, ("sandbox",), batch_ids=ids)) == ["ONE-1", "ONE-2"]


def test_a_dashboard_cursor_is_bound_to_the_new_filters(open_for_business, alice, api):
    place(api, alice.sandbox_key, "C-1", "C-2")
    first = list_drops(
        business=alice.business,
        environments=["sandbox"],
        filters=DropFilters(search="c-"),
        limit=1,
    )
    for other in (
        DropFilters(search="c"),
        DropFilters(search="c-", created_before=datetime(2030, 1, 1, tzinfo=UTC)),
        DropFilters(search="c-", batch_ids=(uuid.uuid4(),)),
    ):
        with pytest.raises(InvalidCursor):
            list_drops(
                business=alice.business,
                environments=["sandbox"],
                filters=other,
                limit=1,
                cursor=first.next_cursor,
            )


def test_a_cursor_kept_from_before_the_dashboards_filters_still_lists_the_next_page(
    open_for_business, alice, api
):
    # Cursors a sync client keeps across an upgrade must stay valid: one bound to the
    # filters the API had before the dashboard's were added lists what today's cursor lists.
    key = alice.sandbox_key
    place(api, key, *[f"KEPT-{i}" for i in range(5)])
    first = data_of(get_orders(api, key, limit=2))
    kept_from_before = make_cursor(
        salt=CURSOR_SALT,
        position=signing.loads(first["next_cursor"], salt=CURSOR_SALT)["p"],
        filters={
            "business": alice.business.pk, "environments": ["sandbox"], "statuses": [],
            "batch_id": None, "created_since": None, "updated_since": None, "contains": "",
        },
    )  # fmt: skip

    second = data_of(get_orders(api, key, limit=2, cursor=first["next_cursor"]))
    assert len(ids_of(second)) == 2
    assert data_of(get_orders(api, key, limit=2, cursor=kept_from_before)) == second


def test_the_usual_pages_list_what_page_keys_lists_for_their_filters(open_for_business, alice, api):
    """Newest first, by status at most (the shapes whose SQL is kept once compiled): every
    page, first and after a cursor, lists what tracking.listing.page_keys lists at once."""
    from tracking.listing import page_keys

    place(api, alice.sandbox_key, *[f"SHAPE-{i}" for i in range(7)])
    advance(api, alice.sandbox_key, "SHAPE-1", "SHAPE-4")
    for status in ("", "PENDING", "ASSIGNED,PENDING"):
        pages = every_page(
            api, alice.sandbox_key, limit=3, **({"status": status} if status else {})
        )
        statuses = tuple(status.split(",")) if status else ()
        fresh = page_keys(
            business=alice.business, environments=["sandbox"],
            filters=DropFilters(statuses=statuses), after=None, horizon=None, limit=100,
        )  # fmt: skip
        listed = [entry["client_order_id"] for page in pages for entry in page["orders"]]
        by_id = dict(Drop.objects.values_list("id", "client_order_id"))
        assert listed == [by_id[pk] for pk, _ in fresh]
