"""The orders page's filters stay indexed: EXPLAIN of each on a 100,000-drop account.

The account of tests/tracking/test_listing_plans.py; the shapes are the dashboard's (both
environments, 25 a page): a search, a date range, several statuses, a batch named twice.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from orders.models import DropStatus
from tests.tracking.test_listing_plans import START, big_account  # noqa: F401 (a fixture)
from tracking.listing import DropFilters, list_drops, page_keys

pytestmark = pytest.mark.django_db


def test_no_dashboard_filter_reads_the_whole_drops_table(big_account):  # noqa: F811
    tenant, batch_ids = big_account
    shapes = {
        "search": DropFilters(search="p-5"),
        "days": DropFilters(
            created_since=START + timedelta(days=2), created_before=START + timedelta(days=3)
        ),
        "statuses and search": DropFilters(
            statuses=(DropStatus.FAILED, DropStatus.PENDING), search="recipient"
        ),
        "two batches": DropFilters(batch_ids=tuple(batch_ids[40:42]), search="p-4"),
        "everything": DropFilters(
            statuses=(DropStatus.DELIVERED,),
            created_since=START,
            created_before=START + timedelta(days=20),
            search="P-1",
        ),
    }
    for name, filters in shapes.items():
        page = list_drops(
            business=tenant.business, environments=["sandbox", "live"], filters=filters, limit=25
        )
        assert page.orders, name
        plan = page_keys(
            business=tenant.business,
            environments=["sandbox", "live"],
            filters=filters,
            after=None,
            horizon=None,
            limit=25,
        ).explain()
        assert "Seq Scan on orders_drop" not in plan, f"{name}:\n{plan}"
        assert "Index" in plan, f"{name}:\n{plan}"
