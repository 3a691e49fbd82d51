"""A courier's day (docs/couriers.md, "History"): the stops they finished on one day in the
service's time zone, with when, how it ended and the cash collected; never where the
recipient lives or their phone."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.utils import timezone

from core.formats import iso_z, money
from couriers.changes import first_name
from orders.models import DeliveryEvent, DropStatus, FailureReason
from orders.statuses import FINISHED_STATUSES

# A stop is done for the courier when they delivered it, it failed, or it came back to the
# shop; a cancelled drop was never their work.
DONE = [status for status in FINISHED_STATUSES if status != DropStatus.CANCELLED]


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())
    return start, datetime.combine(day + timedelta(days=1), time.min, tzinfo=start.tzinfo)


def history_of(courier, day: date) -> dict:
    """The courier's done stops of `day`, in the order they were done, and the day's cash."""
    start, end = day_bounds(day)
    events = (
        DeliveryEvent.objects.filter(
            drop__order__driver=courier, status__in=DONE, at__gte=start, at__lt=end
        )
        .select_related("drop__business")
        .order_by("at", "id")
    )
    stops, cash = [], defaultdict(Decimal)
    for event in events:
        drop = event.drop
        collected = None
        if event.status == DropStatus.DELIVERED and drop.cod_collected_at is not None:
            collected = {"amount": money(drop.cod_amount), "currency": drop.currency}
            cash[drop.currency] += drop.cod_amount
        failed = event.status == DropStatus.FAILED
        stops.append(
            {
                "drop_id": str(drop.pk),
                "client_order_id": drop.client_order_id,
                "shop": drop.business.name,
                "recipient_first_name": first_name(drop),
                "outcome": event.status.lower(),
                "at": iso_z(event.at),
                "time": timezone.localtime(event.at).strftime("%H:%M"),
                "failure_reason": (drop.failure_reason or FailureReason.OTHER) if failed else None,
                "cod_collected": collected,
            }
        )
    return {
        "date": day.isoformat(),
        "time_zone": str(timezone.get_current_timezone()),
        "stops": stops,
        "cod_collected": [
            {"currency": currency, "amount": money(total)}
            for currency, total in sorted(cash.items())
        ],
    }
