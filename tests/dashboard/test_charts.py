"""The home page's charts: orders per day by status and spend per day, over the last 30 days
in the service time zone, one query each, drawn as SVG with the numbers in a table."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dashboard import charts
from tests.dashboard.helpers import created_at, local
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, cancel, place


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def shop(region, clock, make_tenant, member):
    # A flat 2.50 a drop, so a day's spend is easy to count.
    tenant = make_tenant(name="Chart Shop", base_fee="2.50", per_km_fee="0", live_balance="100")
    return tenant, member(tenant.business)


@pytest.fixture
def history(shop, api, clock, bob):
    """Orders placed over a few days, each on its own clock, and a few that must not count."""
    tenant, _ = shop
    key = tenant.sandbox_key
    clock.move_to(local(2026, 11, 20, 9, 0))
    place(api, key, "D20-1", "D20-2", "D20-3")
    advance(api, key, "D20-1", to="DELIVERED")
    advance(api, key, "D20-2", to="FAILED")
    cancel(api, key, "D20-3")
    clock.move_to(local(2026, 11, 22, 20, 30))
    place(api, key, "D22-1")
    clock.move_to(local(2026, 11, 23, 10, 0))
    place(api, key, "D23-1", "D23-2", "EDGE-23", "OLD")
    advance(api, key, "D23-2", to="ASSIGNED")
    # 00:30 on the 23rd in Phnom Penh is 17:30 on the 22nd in UTC: it counts on the 23rd.
    created_at("EDGE-23", local(2026, 11, 23, 0, 30))
    # 31 days back: outside the window.
    created_at("OLD", local(2026, 10, 24, 12, 0))
    # Another environment, another business: never in this chart.
    api.bulk(batch(group(drop("LIVE-1"))), tenant.live_key)
    place(api, bob.sandbox_key, "BOB-1", "BOB-2")
    return tenant


def test_the_window_is_30_whole_days_in_the_service_time_zone():
    window = charts.last_days(local(2026, 11, 23, 0, 30))
    assert window.days[0] == date(2026, 10, 25) and window.days[-1] == date(2026, 11, 23)
    assert len(window.days) == 30
    assert window.start == local(2026, 10, 25, 0, 0)
    assert window.end == local(2026, 11, 24, 0, 0)


def test_orders_per_day_by_status(history):
    window = charts.last_days(timezone.now())
    counts = charts.orders_per_day(business=history.business, environment="sandbox", window=window)
    assert counts == {
        date(2026, 11, 20): {"DELIVERED": 1, "FAILED": 1, "CANCELLED": 1},
        date(2026, 11, 22): {"PENDING": 1},
        date(2026, 11, 23): {"PENDING": 2, "ASSIGNED": 1},
    }
    live = charts.orders_per_day(business=history.business, environment="live", window=window)
    assert live == {date(2026, 11, 23): {"PENDING": 1}}


def test_spend_per_day_is_the_prices_less_the_cancelled(history):
    window = charts.last_days(timezone.now())
    spend = charts.spend_per_day(business=history.business, environment="sandbox", window=window)
    # The cancelled drop was refunded: two of the three of the 20th were paid for.
    assert spend == {
        date(2026, 11, 20): Decimal("5.00"),
        date(2026, 11, 22): Decimal("2.50"),
        date(2026, 11, 23): Decimal("7.50"),
    }


def test_each_series_is_one_query(history):
    window = charts.last_days(timezone.now())
    for series in (charts.orders_per_day, charts.spend_per_day):
        with CaptureQueriesContext(connection) as queries:
            series(business=history.business, environment="sandbox", window=window)
        assert len(queries) == 1, series
        assert "GROUP BY" in queries[0]["sql"]
        assert "Asia/Phnom_Penh" in queries[0]["sql"]  # the day is the business's day


def test_the_home_page_draws_both_charts_with_their_numbers(history, shop):
    _, web = shop
    page = web.get("/?environment=sandbox").content.decode()
    orders = page[page.index('data-testid="orders-chart"') :]
    assert '<title id="orders-chart-title">Orders per day, by status</title>' in orders
    assert "7 orders from 25 Oct to 23 Nov 2026; the most on 23 Nov (3)." in orders
    assert 'data-day="2026-11-20" data-total="3"' in orders
    assert 'data-day="2026-11-21" data-total="0"' in orders
    for status in ("delivered", "failed", "cancelled", "pending", "assigned"):
        assert f'class="seg seg-{status}"' in orders, status
    # The same numbers as a table, for whoever cannot see the bars.
    table = page[page.index('data-testid="orders-chart-table"') :]
    table = table[: table.index("</table>")]
    assert re.search(
        r"<th scope=\"row\">20 Nov 2026</th>"
        r"<td>0</td><td>0</td><td>1</td><td>1</td><td>1</td><td>3</td>",
        table,
    ), table
    assert table.count("<tr>") == 31  # the heading and 30 days
    spend = page[page.index('data-testid="spend-chart"') :]
    assert "15.00 USD spent from 25 Oct to 23 Nov 2026." in spend
    assert 'data-day="2026-11-20" data-total="5.00"' in spend
    spend_table = page[page.index('data-testid="spend-chart-table"') :]
    assert '<th scope="row">23 Nov 2026</th><td>7.50</td>' in spend_table


def test_a_live_business_sees_its_live_orders_first(history, shop):
    _, web = shop
    page = web.get("/").content.decode()
    assert "1 order from 25 Oct to 23 Nov 2026" in page
    assert "2.50 USD spent" in page


def test_another_business_sees_nothing_of_these(history, bob, member):
    page = member(bob.business).get("/?environment=sandbox").content.decode()
    assert "2 orders from 25 Oct to 23 Nov 2026" in page


def test_no_orders_draws_an_empty_chart():
    window = charts.last_days(local(2026, 11, 23, 10, 0))
    chart = charts.orders_chart(window.days, {})
    assert chart.is_empty and chart.description == "0 orders from 25 Oct to 23 Nov 2026."
    assert [tick.label for tick in chart.ticks] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (1, 1), (3, 5), (7, 10), (12, 20), (21, 25), (180, 200), (0.3, 0.5)],
)
def test_an_amount_axis_ends_on_a_round_number(value, ceiling):
    assert charts.nice_ceiling(value) == ceiling


@pytest.mark.parametrize(
    ("value", "ceiling"), [(0, 2), (1, 2), (3, 4), (7, 8), (9, 10), (12, 20), (21, 40)]
)
def test_a_count_axis_ends_on_an_even_number(value, ceiling):
    top = charts.nice_ceiling(value, charts.COUNT_STEPS)
    assert top == ceiling and (top / 2) == int(top / 2)
