"""The batch page: counts on top, results in submission order, 100 a page, "Rejected only",
and a map of its accepted drops read in one query."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.maps import batch_map
from orders.models import Drop
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance

POSITION = re.compile(r'data-position="(\d+)"')
ORDER_ID = re.compile(r'<td data-label="Order" class="mono">(?:<a href="[^"]+">)?([^<]+)<')


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def shop(open_for_business, make_tenant, member):
    tenant = make_tenant(name="Batch Shop", sandbox_balance="5000.00", live_balance="100.00")
    return tenant, member(tenant.business)


def send(api, key: str, *drops: dict) -> dict:
    response = api.bulk(batch(group(*drops)), key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def mixed(count: int, every: int = 3) -> list[dict]:
    """count drops; every `every`-th one (from the first) rejected for its phone number."""
    return [
        drop(f"M-{i:04d}", phone="nope") if i % every == 0 else drop(f"M-{i:04d}")
        for i in range(count)
    ]


def map_data(page: str) -> dict:
    found = re.search(r'<script id="map-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def test_results_are_in_submission_order_100_a_page(shop, api):
    tenant, web = shop
    result = send(api, tenant.sandbox_key, *mixed(250))
    url = f"/batches/{result['batch_id']}/"
    first = web.get(url).content.decode()
    assert POSITION.findall(first) == [str(n) for n in range(1, 101)]
    assert ORDER_ID.findall(first) == [f"M-{i:04d}" for i in range(100)]
    assert "Page 1 of 3" in first
    third = web.get(url + "?page=3").content.decode()
    assert POSITION.findall(third) == [str(n) for n in range(201, 251)]
    assert ORDER_ID.findall(third)[-1] == "M-0249"


def test_counts_are_on_top(shop, api):
    tenant, web = shop
    result = send(api, tenant.sandbox_key, *mixed(9))
    advance(api, tenant.sandbox_key, "M-0001", to="DELIVERED")
    page = web.get(f"/batches/{result['batch_id']}/").content.decode()
    counts = page[page.index('data-testid="batch-counts"') : page.index("</ul>")]
    assert "9 drops" in counts and "6 accepted" in counts and "3 rejected" in counts
    assert "5 pending" in counts and "1 delivered" in counts
    assert page.index("batch-counts") < page.index("batch-results")


def test_rejected_only_lists_the_rejected_in_order_and_pages_them(shop, api):
    tenant, web = shop
    result = send(api, tenant.sandbox_key, *mixed(330))  # 110 rejected: 0, 3, 6, ...
    url = f"/batches/{result['batch_id']}/?rejected=1"
    first = web.get(url).content.decode()
    assert ORDER_ID.findall(first) == [f"M-{i:04d}" for i in range(0, 300, 3)]
    assert POSITION.findall(first)[:3] == ["1", "4", "7"]  # their places in the batch
    assert 'class="accepted"' not in first and "INVALID_PHONE" in first
    assert "Page 1 of 2" in first
    # The page links keep the toggle.
    assert 'href="?rejected=1&amp;page=2"' in first
    second = web.get(url + "&page=2").content.decode()
    assert ORDER_ID.findall(second) == [f"M-{i:04d}" for i in range(300, 330, 3)]
    everything = web.get(f"/batches/{result['batch_id']}/").content.decode()
    assert "All (330)" in everything and "Rejected only (110)" in everything


def test_a_batch_without_rejections_says_so(shop, api):
    tenant, web = shop
    result = send(api, tenant.sandbox_key, drop("OK-1"))
    page = web.get(f"/batches/{result['batch_id']}/?rejected=1").content.decode()
    assert "No drop of this batch was rejected." in page


def test_the_map_has_every_accepted_drop_with_its_status(shop, api):
    tenant, web = shop
    result = send(api, tenant.sandbox_key, *mixed(12))
    advance(api, tenant.sandbox_key, "M-0001", to="DELIVERED")
    advance(api, tenant.sandbox_key, "M-0002", to="ASSIGNED")
    page = web.get(f"/batches/{result['batch_id']}/?rejected=1").content.decode()
    data = map_data(page)
    assert data["kind"] == "batch"
    status_of = {pin[3]: data["statuses"][pin[2]] for pin in data["pins"]}
    accepted = {f"M-{i:04d}" for i in range(12) if i % 3}
    assert set(status_of) == accepted  # the map shows all of them, whatever the table shows
    assert status_of["M-0001"] == "delivered" and status_of["M-0002"] == "assigned"
    assert {s for k, s in status_of.items() if k not in ("M-0001", "M-0002")} == {"pending"}
    drops = {d.client_order_id: d for d in Drop.objects.filter(batch_id=result["batch_id"])}
    for lat, long, _, client_order_id, drop_id in data["pins"]:
        assert [lat, long] == [drops[client_order_id].lat, drops[client_order_id].long]
        assert drop_id == str(drops[client_order_id].pk)
    assert data["pickups"] == [[11.5564, 104.9282]]
    assert data["areas"] and data["order_url"] == "/orders/{id}/"
    assert 'class="legend"' in page and "Delivered (1)" in page and "Pending (6)" in page


def test_the_pins_are_one_query(shop, api):
    tenant, _ = shop
    result = send(api, tenant.sandbox_key, *mixed(60))
    with CaptureQueriesContext(connection) as queries:
        pins = batch_map(business=tenant.business, batch_id=result["batch_id"])
    drop_queries = [q for q in queries if "orders_drop" in q["sql"]]
    assert len(drop_queries) == 1 and len(pins.data["pins"]) == 40
    assert len(queries) == 2  # the pins, and the service areas


def test_another_business_sees_neither_the_page_nor_its_pins(shop, api, bob, member):
    tenant, web = shop
    mine = send(api, tenant.sandbox_key, drop("MINE-1"))
    theirs = send(api, bob.sandbox_key, drop("BOBS-1"))
    assert web.get(f"/batches/{theirs['batch_id']}/").status_code == 404
    assert batch_map(business=tenant.business, batch_id=theirs["batch_id"]).data["pins"] == []
    page = web.get(f"/batches/{mine['batch_id']}/").content.decode()
    assert "BOBS-1" not in page
    assert [pin[3] for pin in map_data(page)["pins"]] == ["MINE-1"]
