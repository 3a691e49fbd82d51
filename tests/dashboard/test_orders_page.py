"""The dashboard's orders page: the API's listing (tracking/listing.py), paged by its cursor."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import Membership
from tests.factories import UserFactory, batch, drop, group
from tests.tracking.helpers import advance, place

ROW = re.compile(r'<a href="/orders/[0-9a-f-]+/" class="mono">([^<]+)</a>')
OLDER = re.compile(r'<a href="([^"]+)" rel="next">')
NEWEST = re.compile(r'<a href="([^"]+)" rel="first">')


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()  # the login throttle counts in the cache
    yield
    cache.clear()


@pytest.fixture
def shop(open_for_business, make_tenant):
    tenant = make_tenant(sandbox_balance="500.00", live_balance="100.00")
    user = UserFactory()
    Membership.objects.create(user=user, business=tenant.business, is_owner=True)
    web = Client()
    web.force_login(user)
    return tenant, web


def rows(page: str) -> list[str]:
    return ROW.findall(page)


def test_pages_go_on_through_older_orders_and_back_to_the_newest(shop, api):
    tenant, web = shop
    for n in range(3):
        place(api, tenant.sandbox_key, *[f"W{n}-{i}" for i in range(10)])
    api.bulk(batch(group(drop("LIVE-1"))), tenant.live_key)
    first = web.get("/orders/").content.decode()
    assert len(rows(first)) == 25 and rows(first)[0] == "LIVE-1"
    assert not NEWEST.search(first)
    second = web.get(unescape(OLDER.search(first).group(1))).content.decode()
    assert len(rows(second)) == 6 and not OLDER.search(second)
    assert set(rows(first)).isdisjoint(rows(second))
    assert unescape(NEWEST.search(second).group(1)) in ("/orders/", "/orders/?")


def test_filters_are_kept_from_page_to_page(shop, api):
    tenant, web = shop
    place(api, tenant.sandbox_key, *[f"KEEP-{i}" for i in range(30)], *["OTHER-1"])
    advance(api, tenant.sandbox_key, "KEEP-1", "OTHER-1", to="ASSIGNED")
    first = web.get("/orders/?q=keep&environment=sandbox").content.decode()
    link = unescape(OLDER.search(first).group(1))
    assert "q=keep" in link and "environment=sandbox" in link and "cursor=" in link
    second = web.get(link).content.decode()
    listed = rows(first) + rows(second)
    assert sorted(listed) == sorted(f"KEEP-{i}" for i in range(30))
    assert rows(web.get("/orders/?status=ASSIGNED").content.decode()) in (
        ["KEEP-1", "OTHER-1"],
        ["OTHER-1", "KEEP-1"],
    )


def test_a_cursor_that_does_not_fit_starts_from_the_newest(shop, api):
    tenant, web = shop
    place(api, tenant.sandbox_key, *[f"C-{i}" for i in range(30)])
    first = web.get("/orders/").content.decode()
    link = unescape(OLDER.search(first).group(1))
    # The link's cursor with other filters, and a cursor edited by hand.
    for path in (f"{link}&status=DELIVERED", "/orders/?cursor=edited"):
        response = web.get(path)
        assert response.status_code == 200
    assert rows(web.get("/orders/?cursor=edited").content.decode()) == rows(first)
