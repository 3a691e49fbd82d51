"""Compact cells for the console's lists, so a list fits a 1280 px window without scrolling:
dates as "2026-11-23 10:00" in the service time zone, long text cut with the whole of it on
hover."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

EMPTY = "–"


def when(value: datetime | None) -> SafeString | str:
    """A moment as "Y-m-d H:i", local time; the exact instant in the <time> element."""
    return _time_element(value, "%Y-%m-%d %H:%M")


def day(value: datetime | None) -> SafeString | str:
    return _time_element(value, "%Y-%m-%d")


def _time_element(value: datetime | None, shown: str) -> SafeString | str:
    if value is None:
        return EMPTY
    local = timezone.localtime(value)
    return format_html('<time datetime="{}">{}</time>', local.isoformat(), local.strftime(shown))


def cut(text: str, limit: int = 32) -> SafeString | str:
    """At most `limit` characters; a cut text keeps the whole in its title (hover)."""
    if not text:
        return EMPTY
    if len(text) <= limit:
        return text
    return format_html('<span title="{}">{}…</span>', text, text[: limit - 1].rstrip())
