"""The home page's charts: orders per day by status and spend per day, over the last 30 days.

Each series is one aggregate query (GROUP BY the day in the service time zone) over the
drops' listing index; the drawing is plain geometry for an inline SVG, no script.

Spend is the drops' prices: what the drops created that day cost, less those cancelled
since (a cancellation is refunded in full, and only happens before pickup). It is the
same figure for a prepaid wallet (its debits less refunds) and an invoiced account (its
invoice lines), and it lands on the day of the order, not of the refund.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core.formats import money
from core.functions import MoneySum
from orders.models import Drop, DropStatus

CHART_DAYS = 30
# Bottom to top in a stacked bar, and the legend's order: the delivery as it goes.
STATUS_ORDER = list(DropStatus)  # declared in that order

# The SVG's own units (viewBox); it scales to its card's width.
WIDTH, HEIGHT = 400, 200
LEFT, RIGHT, TOP, BOTTOM = 44, 6, 10, 24


@dataclass(frozen=True)
class Window:
    """Whole days in the service time zone, oldest first, and the instants that bound them."""

    days: list[date]
    start: datetime  # the first day's midnight
    end: datetime  # the midnight after the last day


def last_days(now: datetime, count: int = CHART_DAYS) -> Window:
    zone = ZoneInfo(settings.TIME_ZONE)
    today = now.astimezone(zone).date()
    days = [today - timedelta(days=n) for n in range(count - 1, -1, -1)]
    return Window(
        days=days,
        start=datetime.combine(days[0], time(), tzinfo=zone),
        end=datetime.combine(today + timedelta(days=1), time(), tzinfo=zone),
    )


def _drops_in(*, business, environment: str, window: Window):
    # Every status named: the listing index (business, environment, status, created_at)
    # then reads one created_at range per status, never the account's other days.
    return (
        Drop.objects.filter(
            business=business,
            environment=environment,
            status__in=list(DropStatus.values),
            created_at__gte=window.start,
            created_at__lt=window.end,
        )
        .annotate(day=TruncDate("created_at", tzinfo=ZoneInfo(settings.TIME_ZONE)))
        .order_by()
    )


def has_orders(*, business, environment: str, window: Window) -> bool:
    """Whether any drop was created in the window (one indexed query)."""
    return _drops_in(business=business, environment=environment, window=window).exists()


def orders_per_day(*, business, environment: str, window: Window) -> dict[date, dict[str, int]]:
    """day → status → number of drops created that day (one query)."""
    counts: dict[date, dict[str, int]] = {}
    rows = (
        _drops_in(business=business, environment=environment, window=window)
        .values("day", "status")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts.setdefault(row["day"], {})[row["status"]] = row["n"]
    return counts


def spend_per_day(*, business, environment: str, window: Window) -> dict[date, Decimal]:
    """day → the prices of the drops created that day, less the cancelled ones (one query)."""
    rows = (
        _drops_in(business=business, environment=environment, window=window)
        .exclude(status=DropStatus.CANCELLED)
        .values("day")
        .annotate(total=MoneySum("price"))
    )
    return {row["day"]: row["total"] for row in rows}


# --- Drawing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    status: str  # "" for a single-series bar
    value: str  # as the table shows it
    y: float
    height: float


@dataclass(frozen=True)
class Bar:
    day: date
    x: float
    width: float
    total: str
    segments: list[Segment]
    cells: list[str]  # the numbers of the chart's table: one per series, in legend order


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: float
    text: str
    anchor: str = "middle"  # the newest day's label ends at the plot's edge, never past it


@dataclass(frozen=True)
class Chart:
    title: str
    description: str
    bars: list[Bar]
    ticks: list[Tick]
    day_labels: list[DayLabel]
    statuses: list[tuple[str, str]]  # (value, label) of the series drawn, for the legend
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def is_empty(self) -> bool:
        return all(not bar.segments for bar in self.bars)


# Where an axis may end, × 10^k. Counts end on an even number, so that the middle line
# is a whole number of orders too.
AMOUNT_STEPS = (1, 2, 2.5, 5, 10)
COUNT_STEPS = (2, 4, 6, 8, 10)


def nice_ceiling(value: float, steps: tuple[float, ...] = AMOUNT_STEPS) -> float:
    """The smallest step × 10^k at or above value (the first step for nothing): the axis' top."""
    if value <= 0:
        return steps[0]
    scale = 1.0
    while scale * 10 <= value:
        scale *= 10
    while scale > value:
        scale /= 10
    if steps is COUNT_STEPS:
        scale = max(scale, 1.0)
    return next(step * scale for step in steps if step * scale >= value)


def _frame(days: list[date], top_value: float, label) -> tuple[list[Tick], list[DayLabel], float]:
    plot_height = HEIGHT - BOTTOM - TOP
    ticks = [
        Tick(y=round(HEIGHT - BOTTOM - plot_height * share, 1), label=label(top_value * share))
        for share in (0, 0.5, 1)
    ]
    slot = (WIDTH - RIGHT - LEFT) / len(days)
    # A label every week, the last one on today, so the newest day is always named.
    day_labels = [
        DayLabel(x=round(LEFT + slot * (i + 0.5), 1), text=_day(day))
        for i, day in enumerate(days[:-1])
        if (len(days) - 1 - i) % 7 == 0
    ]
    day_labels.append(DayLabel(x=WIDTH - RIGHT, text=_day(days[-1]), anchor="end"))
    return ticks, day_labels, slot


def _day(day: date) -> str:
    """ "3 Nov", with the month in the page's language."""
    return date_format(day, "j M")


def _span(days: list[date]) -> str:
    return _("%(first)s to %(last)s %(year)s") % {
        "first": _day(days[0]),
        "last": _day(days[-1]),
        "year": days[-1].year,
    }


def orders_chart(days: list[date], counts: dict[date, dict[str, int]]) -> Chart:
    totals = {day: sum(counts.get(day, {}).values()) for day in days}
    shown = [s for s in STATUS_ORDER if any(s in counts.get(day, {}) for day in days)]
    top = nice_ceiling(max(totals.values(), default=0), COUNT_STEPS)
    ticks, day_labels, slot = _frame(days, top, lambda v: f"{v:g}")
    scale = (HEIGHT - BOTTOM - TOP) / top
    bars = []
    for i, day in enumerate(days):
        base, segments = float(HEIGHT - BOTTOM), []
        for status in STATUS_ORDER:
            n = counts.get(day, {}).get(status, 0)
            if n:
                height = n * scale
                base -= height
                segments.append(Segment(status, str(n), round(base, 2), round(height, 2)))
        cells = [str(counts.get(day, {}).get(status, 0)) for status in shown]
        bars.append(
            Bar(day, round(LEFT + slot * i + slot * 0.15, 2), round(slot * 0.7, 2),
                str(totals[day]), segments, cells)
        )  # fmt: skip
    total = sum(totals.values())
    busiest = max(days, key=lambda d: (totals[d], d))
    span = _span(days)
    description = (
        ngettext(
            "%(total)s order from %(span)s; the most on %(day)s (%(most)s).",
            "%(total)s orders from %(span)s; the most on %(day)s (%(most)s).",
            total,
        )
        if total
        else ngettext("%(total)s order from %(span)s.", "%(total)s orders from %(span)s.", total)
    ) % {"total": total, "span": span, "day": _day(busiest), "most": totals[busiest]}
    return Chart(
        title=_("Orders per day, by status"),
        description=description,
        bars=bars,
        ticks=ticks,
        day_labels=day_labels,
        statuses=[(s.value, s.label) for s in shown],
    )


def spend_chart(days: list[date], spend: dict[date, Decimal], currency: str) -> Chart:
    top = nice_ceiling(float(max(spend.values(), default=0)))
    ticks, day_labels, slot = _frame(days, top, lambda v: f"{v:g}")
    scale = (HEIGHT - BOTTOM - TOP) / top
    bars = []
    for i, day in enumerate(days):
        amount = spend.get(day, Decimal(0))
        segments = []
        if amount:
            height = float(amount) * scale
            segments.append(
                Segment("", money(amount), round(HEIGHT - BOTTOM - height, 2), round(height, 2))
            )
        bars.append(
            Bar(day, round(LEFT + slot * i + slot * 0.15, 2), round(slot * 0.7, 2),
                money(amount), segments, [money(amount)])
        )  # fmt: skip
    total = sum(spend.values(), Decimal(0))
    return Chart(
        title=_("Spend per day (%(currency)s)") % {"currency": currency},
        description=_("%(amount)s %(currency)s spent from %(span)s.")
        % {"amount": money(total), "currency": currency, "span": _span(days)},
        bars=bars,
        ticks=ticks,
        day_labels=day_labels,
        statuses=[],
    )
