"""Helpers of the dashboard tests: a shop with a logged-in browser, orders placed at set times."""

from __future__ import annotations

import re
from datetime import datetime
from html import unescape
from zoneinfo import ZoneInfo

from django.conf import settings

from orders.models import Drop

ROW = re.compile(r'<a href="/orders/[0-9a-f-]+/" class="mono">([^<]+)</a>')
OLDER = re.compile(r'<a href="([^"]+)" rel="next">')


def local(*args: int) -> datetime:
    """A wall-clock time in the service time zone (Phnom Penh, UTC+7)."""
    return datetime(*args, tzinfo=ZoneInfo(settings.TIME_ZONE))


def rows(page: str) -> list[str]:
    """The client_order_ids listed on an orders page, in order."""
    return ROW.findall(page)


def listed(web, path: str) -> list[str]:
    """Every client_order_id of a filtered orders list, following "Older →" to the end."""
    found: list[str] = []
    while True:
        response = web.get(path)
        assert response.status_code == 200, response.content
        page = response.content.decode()
        found += rows(page)
        older = OLDER.search(page)
        if not older:
            return found
        path = unescape(older.group(1))


def created_at(client_order_id: str, at: datetime, business=None) -> None:
    """Move a drop's creation time (to put orders on given days without waiting)."""
    drops = Drop.objects.filter(client_order_id=client_order_id)
    if business is not None:
        drops = drops.filter(business=business)
    assert drops.update(created_at=at) == 1
