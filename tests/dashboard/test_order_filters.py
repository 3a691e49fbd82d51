"""The orders page's filters: status (several), created days, batch, search; kept across pages,
combined, and never showing another business's drops."""

from __future__ import annotations

from html import unescape

import pytest
from django.core.cache import cache

from orders.models import Batch
from tests.dashboard.helpers import OLDER, created_at, listed, local, rows
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, place


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()  # the login throttle counts in the cache
    yield
    cache.clear()


@pytest.fixture
def shop(open_for_business, make_tenant, member):
    tenant = make_tenant(name="Filter Shop", sandbox_balance="500.00", live_balance="100.00")
    return tenant, member(tenant.business)


def send(api, key: str, *drops: dict, client_batch_id: str | None = None) -> dict:
    response = api.bulk(batch(group(*drops), client_batch_id=client_batch_id), key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_status_takes_several_values(shop, api):
    tenant, web = shop
    key = tenant.sandbox_key
    place(api, key, "S-PENDING", "S-ASSIGNED", "S-DELIVERED")
    advance(api, key, "S-ASSIGNED", to="ASSIGNED")
    advance(api, key, "S-DELIVERED", to="DELIVERED")
    assert sorted(listed(web, "/orders/?status=ASSIGNED&status=DELIVERED")) == [
        "S-ASSIGNED",
        "S-DELIVERED",
    ]
    assert listed(web, "/orders/?status=PENDING") == ["S-PENDING"]
    assert listed(web, "/orders/?status=FAILED") == []
    page = web.get("/orders/?status=NOPE")
    assert page.status_code == 200 and rows(page.content.decode()) == []
    assert "Fix the filters" in page.content.decode()


def test_created_days_are_whole_days_in_the_service_time_zone(shop, api):
    tenant, web = shop
    place(api, tenant.sandbox_key, "LATE-21", "EARLY-22", "LATE-22", "EARLY-23")
    # Phnom Penh is UTC+7: 00:30 on the 22nd there is still the 21st in UTC.
    created_at("LATE-21", local(2026, 11, 21, 23, 59))
    created_at("EARLY-22", local(2026, 11, 22, 0, 30))
    created_at("LATE-22", local(2026, 11, 22, 23, 59, 59))
    created_at("EARLY-23", local(2026, 11, 23, 0, 0))
    one_day = "/orders/?created_from=2026-11-22&created_to=2026-11-22"
    assert sorted(listed(web, one_day)) == ["EARLY-22", "LATE-22"]
    assert sorted(listed(web, "/orders/?created_from=2026-11-22")) == [
        "EARLY-22",
        "EARLY-23",
        "LATE-22",
    ]
    assert sorted(listed(web, "/orders/?created_to=2026-11-21")) == ["LATE-21"]


def test_a_range_ending_before_it_starts_is_an_error_not_everything(shop, api):
    tenant, web = shop
    place(api, tenant.sandbox_key, "ANY-1")
    page = web.get("/orders/?created_from=2026-11-23&created_to=2026-11-22").content.decode()
    assert "The last day comes before the first." in page
    assert rows(page) == []
    export = web.get("/orders/export/?created_from=2026-11-23&created_to=2026-11-22")
    assert export.status_code == 400


def test_batch_by_client_batch_id_or_batch_id(shop, api):
    tenant, web = shop
    first = send(api, tenant.sandbox_key, drop("B1-1"), drop("B1-2"), client_batch_id="MORNING")
    send(api, tenant.sandbox_key, drop("B2-1"), client_batch_id="EVENING")
    assert sorted(listed(web, "/orders/?batch=MORNING")) == ["B1-1", "B1-2"]
    assert sorted(listed(web, f"/orders/?batch={first['batch_id']}")) == ["B1-1", "B1-2"]
    assert listed(web, "/orders/?batch=%20EVENING%20") == ["B2-1"]
    assert listed(web, "/orders/?batch=NIGHT") == []


def test_one_client_batch_id_in_both_environments_lists_both(shop, api):
    tenant, web = shop
    send(api, tenant.sandbox_key, drop("TWIN-SANDBOX"), client_batch_id="TWIN")
    send(api, tenant.live_key, drop("TWIN-LIVE"), client_batch_id="TWIN")
    send(api, tenant.live_key, drop("OTHER-LIVE"), client_batch_id="OTHER")
    assert sorted(listed(web, "/orders/?batch=TWIN")) == ["TWIN-LIVE", "TWIN-SANDBOX"]
    assert listed(web, "/orders/?batch=TWIN&environment=live") == ["TWIN-LIVE"]


def test_search_looks_at_order_id_waybill_and_recipient_name(shop, api):
    tenant, web = shop
    place(api, tenant.sandbox_key, "ORD-APPLE")
    send(api, tenant.sandbox_key, drop("ORD-2", waybill="WB-apple-77"))
    send(api, tenant.sandbox_key, drop("ORD-3", name="Sokha Appleton"))
    send(api, tenant.sandbox_key, drop("ORD-4", name="Dara", waybill="WB-PEAR"))
    assert sorted(listed(web, "/orders/?q=APPLE")) == ["ORD-2", "ORD-3", "ORD-APPLE"]
    assert listed(web, "/orders/?q=pear") == ["ORD-4"]
    assert listed(web, "/orders/?q=dara") == ["ORD-4"]
    # LIKE's own wildcards are plain characters here.
    assert listed(web, "/orders/?q=%25") == []
    assert listed(web, "/orders/?q=ORD_") == []


def test_filters_combine(shop, api):
    tenant, web = shop
    key = tenant.sandbox_key
    send(api, key, drop("MIX-1"), drop("MIX-2"), drop("OTHER-3"), client_batch_id="MIX")
    send(api, key, drop("MIX-4"), client_batch_id="ELSE")
    advance(api, key, "MIX-1", "OTHER-3", to="DELIVERED")
    created_at("MIX-2", local(2026, 11, 20, 12, 0))
    assert listed(web, "/orders/?batch=MIX&q=mix&status=DELIVERED") == ["MIX-1"]
    assert listed(web, "/orders/?batch=MIX&q=mix&created_to=2026-11-20") == ["MIX-2"]
    assert sorted(listed(web, "/orders/?q=mix&created_from=2026-11-23")) == ["MIX-1", "MIX-4"]
    assert listed(web, "/orders/?batch=MIX&environment=live") == []


def test_filters_are_kept_across_pages(shop, api):
    tenant, web = shop
    key = tenant.sandbox_key
    send(api, key, *[drop(f"KEEP-{i}") for i in range(30)], client_batch_id="KEEP")
    send(api, key, *[drop(f"KEEP-ELSE-{i}") for i in range(5)])
    advance(api, key, *[f"KEEP-{i}" for i in range(27)], to="ASSIGNED")
    path = "/orders/?q=keep&batch=KEEP&status=ASSIGNED&status=PENDING&created_from=2026-11-23"
    first = web.get(path).content.decode()
    link = unescape(OLDER.search(first).group(1))
    for kept in ("q=keep", "batch=KEEP", "status=ASSIGNED", "status=PENDING", "created_from="):
        assert kept in link, kept
    assert sorted(listed(web, path)) == sorted(f"KEEP-{i}" for i in range(30))


def test_another_business_is_never_listed(shop, api, bob, member):
    tenant, web = shop
    mine = send(api, tenant.sandbox_key, drop("MINE-1", waybill="WB-SHARED"), client_batch_id="B")
    theirs = send(api, bob.sandbox_key, drop("BOBS-1", waybill="WB-SHARED"), client_batch_id="B")
    send(api, bob.sandbox_key, drop("BOBS-ONLY"), client_batch_id="BOB-ONLY")
    assert listed(web, "/orders/?batch=B") == ["MINE-1"]
    assert listed(web, "/orders/?q=WB-SHARED") == ["MINE-1"]
    assert listed(web, "/orders/?q=BOBS") == []
    # Bob's batch, by name or by id, names nothing of this account.
    assert listed(web, "/orders/?batch=BOB-ONLY") == []
    assert listed(web, f"/orders/?batch={theirs['batch_id']}") == []
    assert Batch.objects.filter(pk=mine["batch_id"]).exists()
    bob_web = member(bob.business)
    assert sorted(listed(bob_web, "/orders/?q=WB-SHARED")) == ["BOBS-1"]
