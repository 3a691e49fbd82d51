"""What waits for an operator, oldest first: businesses that asked for API access or for live,
and live orders waiting for a driver."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.db.models import Count, Q, QuerySet, Window
from django.db.models.functions import Coalesce

from accounts.models import Business, Environment, Stage
from orders.models import Drop, DropStatus, Order

# Each onboarding move's own permission (docs/contract.md §16); the buttons, their URLs and the
# queue on the admin index all ask these.
APPROVE = "accounts.approve_business"
ENABLE_LIVE = "accounts.enable_live_business"
SUSPEND = "accounts.suspend_business"
DISPATCH = "orders.dispatch_drop"

# The index shows the oldest few of each list; the count says how many wait in all.
SHOWN = 10


@dataclass(frozen=True, slots=True)
class Waiting:
    count: int
    oldest: list  # what has waited longest first (businesses, orders), at most SHOWN


@dataclass(frozen=True, slots=True)
class NeedsDoing:
    """The lists a user may act on; None where they lack the permission to act."""

    access: Waiting | None
    live: Waiting | None
    driver: Waiting | None

    @property
    def shown(self) -> bool:
        return any(part is not None for part in (self.access, self.live, self.driver))


def waiting_for_access() -> QuerySet[Business]:
    return Business.objects.filter(stage=Stage.ACCESS_REQUESTED).order_by(
        "access_requested_at", "pk"
    )


def waiting_for_live() -> QuerySet[Business]:
    """Approved businesses that asked for live: the only ones an operator may switch on."""
    return (
        Business.objects.filter(stage=Stage.APPROVED, live_requested_at__isnull=False)
        .select_related("pricing_plan")
        .order_by("live_requested_at", "pk")
    )


def waiting_for_driver() -> QuerySet[Order]:
    """Live orders with a drop waiting for a driver.

    PENDING is the state machine's "awaiting a driver" (docs/contract.md §6, tracking/lifecycle.py):
    a drop is made PENDING, or becomes PENDING from SCHEDULED when its pickup is due, and
    leaves it when a driver is assigned (ASSIGNED) or it is cancelled. Only live orders
    wait for an operator: the sandbox test driver moves sandbox ones by itself.
    """
    # No index of its own (docs/decisions.md, "Drops carry only the indexes a query uses"):
    # PENDING drops are active ones, which the partial index client_order_id_active_once
    # holds without the finished ones, and the listing index leads with the business.
    pending = Drop.objects.filter(
        business__in=Business.objects.filter(live_enabled_at__isnull=False).values("pk"),
        environment=Environment.LIVE,
        status=DropStatus.PENDING,
    )
    return Order.objects.filter(environment=Environment.LIVE, pk__in=pending.values("order_id"))


def _waiting_drivers() -> QuerySet[Order]:
    """The index's list: since when each order waits (its pickup time, or its creation) and
    how many of its drops do, with its business, oldest first."""
    return (
        waiting_for_driver()
        .select_related("business")
        .annotate(
            waiting_since=Coalesce("pickup_scheduled_at", "created_at"),
            pending=Count("drops", filter=Q(drops__status=DropStatus.PENDING)),
        )
        .order_by("waiting_since", "pk")
    )


def _oldest(waiting: QuerySet) -> Waiting:
    # COUNT(*) OVER () is computed before the LIMIT: the total rides along on every row,
    # so the list and its count are one query.
    rows = list(waiting.annotate(waiting=Window(Count("pk")))[:SHOWN])
    return Waiting(count=rows[0].waiting if rows else 0, oldest=rows)


def needs_doing(user: PermissionsMixin | AnonymousUser) -> NeedsDoing:
    return NeedsDoing(
        access=_oldest(waiting_for_access()) if user.has_perm(APPROVE) else None,
        live=_oldest(waiting_for_live()) if user.has_perm(ENABLE_LIVE) else None,
        driver=_oldest(_waiting_drivers()) if user.has_perm(DISPATCH) else None,
    )
