"""A drop's window status kept current (docs/contract.md §17): on every move, and every minute.

Watching a window after the drop is made, where orders/windows.py is the rule itself (whether
a window can be kept, at creation and on an edit, and what its status is): two concerns,
so two names; this one sits in tracking because it reads the tracking entries.

The status is stored on the drop, so that GET /orders can filter on it through an index
(orders.models.Drop, drop_listing_by_window); orders/windows.py works it out from the ETA
model. While a drop is on track, `window_risk_at` is when its ETA passes the window's end if
nothing moves (until a move, the ETA only grows with time): the minute's job turns the drops
past that moment at_risk, found through their own index, and a move works the status out
afresh. `order.window_at_risk` fires once per drop, the first time it turns at_risk:
`window_alerted` remembers it, under the drop's row lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.formats import moment_of
from events.models import EventType
from events.services import NewEvent, record_many
from geo.geometry import DistancesFrom
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from orders.runs import run_of, to_do
from orders.statuses import WINDOW_MILESTONES
from orders.windows import AT_RISK, ON_TRACK, EtaTerms
from tracking.eta import etas_through_run
from tracking.selectors import entries_by_drop_id

# The minute's job takes the drops turning at risk this many at a time, a transaction each.
JOB_CHUNK = 1000


def refresh_windows(drops: Sequence[Drop], at: datetime) -> list[Drop]:
    """Work out the window status of drops just moved or edited (as they now are, under their
    row locks, in that transaction) and store what changed; the drops that turn at_risk for
    the first time, whose event the caller records with record_window_alerts (after its own)."""
    unwindowed = [d.pk for d in drops if d.window_end is None and d.window_status is not None]
    if unwindowed:  # an edit took the window away
        Drop.objects.filter(pk__in=unwindowed).update(window_status=None, window_risk_at=None)
    windowed = [drop for drop in drops if drop.window_end is not None]
    if not windowed:
        return []
    pickups = {
        pk: (DistancesFrom(lat, long), scheduled)
        for pk, lat, long, scheduled in Order.objects.filter(
            pk__in={drop.order_id for drop in windowed}
        ).values_list("pk", "pickup_lat", "pickup_long", "pickup_scheduled_at")
    }
    # When each began to wait for a courier and was picked up: the first such move (the
    # moves of this transaction included).
    began: dict[tuple, datetime] = {}
    for drop_id, status, moved_at in (
        DeliveryEvent.objects.filter(
            drop_id__in=[drop.pk for drop in windowed],
            status__in=WINDOW_MILESTONES,
        )
        .order_by("-at")
        .values_list("drop_id", "status", "at")
    ):
        began[drop_id, status] = moved_at
    terms, changed, alerts = EtaTerms(), [], []
    for drop in windowed:
        distances, scheduled = pickups[drop.order_id]
        status, risk_at = terms.outlook(
            status=drop.status,
            end=drop.window_end,
            km=distances.km(drop.lat, drop.long),
            waiting_since=began.get((drop.pk, DropStatus.PENDING)) or scheduled or drop.created_at,
            picked_up_at=began.get((drop.pk, DropStatus.PICKED_UP)),
            delivered_at=at if drop.status == DropStatus.DELIVERED else None,
            now=at,
        )
        first_alert = status == AT_RISK and not drop.window_alerted
        if first_alert:
            drop.window_alerted = True
            alerts.append(drop)
        if first_alert or (status, risk_at) != (drop.window_status, drop.window_risk_at):
            drop.window_status, drop.window_risk_at = status, risk_at
            changed.append(drop)
    Drop.objects.bulk_update(
        changed, ["window_status", "window_risk_at", "window_alerted"], batch_size=500
    )
    return alerts


def flag_run_windows(courier_id: int, position: tuple[float, float], at: datetime) -> int:
    """Turn at_risk the drops on track of the courier's run whose ETA through the run (from
    the courier's position, other orders' stops included: tracking/eta.py) passes
    their window's end: a run that grew or was reordered. A drop locked by a move is left to
    it. How many turned."""
    etas = etas_through_run(position=position, stops=to_do(run_of(courier_id)), now=at)
    drops = list(
        Drop.objects.select_for_update(skip_locked=True)
        .filter(pk__in=list(etas), window_status__among=(ON_TRACK,), window_end__isnull=False)
        .only("id", "business_id", "environment", "window_alerted", "window_end")
    )
    turned = [d for d in drops if moment_of(etas[str(d.pk)]["dropoff_at"]) > d.window_end]
    if not turned:
        return 0
    Drop.objects.filter(pk__in=[drop.pk for drop in turned]).update(
        window_status=AT_RISK, window_risk_at=None, window_alerted=True, updated_at=at
    )
    record_window_alerts([drop for drop in turned if not drop.window_alerted], at)
    return len(turned)


def record_window_alerts(drops: Sequence[Drop], at: datetime) -> None:
    """One order.window_at_risk per drop, carrying its tracking entry (docs/contract.md §17)."""
    if not drops:
        return
    entries = entries_by_drop_id([drop.pk for drop in drops])
    record_many(
        [
            NewEvent(
                drop.business_id,
                drop.environment,
                EventType.ORDER_WINDOW_AT_RISK,
                entries[str(drop.pk)],
            )
            for drop in drops
        ],
        at=at,
    )


def flag_windows_at_risk() -> int:
    """Turn at_risk every drop on track whose ETA has passed its window's end, a chunk per
    transaction; how many. Idempotent: a drop turned is no longer on track, and one locked
    by a move is skipped (the move works its status out itself)."""
    total = 0
    while True:
        with transaction.atomic():
            due = list(
                Drop.objects.select_for_update(skip_locked=True)
                .filter(window_status__among=(ON_TRACK,), window_risk_at__lt=timezone.now())
                .only("id", "business_id", "environment", "window_alerted")
                .order_by("window_risk_at")[:JOB_CHUNK]
            )
            if not due:
                return total
            # Stamped once the rows are locked, as a move stamps it (tracking/listing.py): the
            # entry changed, so a client syncing by updated_at sees it again.
            now = timezone.now()
            Drop.objects.filter(pk__in=[drop.pk for drop in due]).update(
                window_status=AT_RISK, window_risk_at=None, window_alerted=True, updated_at=now
            )
            record_window_alerts([drop for drop in due if not drop.window_alerted], now)
            total += len(due)
