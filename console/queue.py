"""What waits for an operator: businesses that asked for API access or for live, oldest first."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.db.models import Count, QuerySet, Window

from accounts.models import Business, Stage

# Each onboarding move's own permission (DESIGN.md §16); the buttons, their URLs and the
# queue on the admin index all ask these.
APPROVE = "accounts.approve_business"
ENABLE_LIVE = "accounts.enable_live_business"
SUSPEND = "accounts.suspend_business"

# The index shows the oldest few of each list; the count says how many wait in all.
SHOWN = 10


@dataclass(frozen=True, slots=True)
class Waiting:
    count: int
    oldest: list[Business]  # oldest request first, at most SHOWN


@dataclass(frozen=True, slots=True)
class NeedsDoing:
    """The lists a user may act on; None where they lack the permission to act."""

    access: Waiting | None
    live: Waiting | None

    @property
    def shown(self) -> bool:
        return self.access is not None or self.live is not None


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


def _oldest(businesses: QuerySet[Business]) -> Waiting:
    # COUNT(*) OVER () is computed before the LIMIT: the total rides along on every row,
    # so the list and its count are one query.
    rows = list(businesses.annotate(waiting=Window(Count("pk")))[:SHOWN])
    return Waiting(count=rows[0].waiting if rows else 0, oldest=rows)


def needs_doing(user: PermissionsMixin | AnonymousUser) -> NeedsDoing:
    return NeedsDoing(
        access=_oldest(waiting_for_access()) if user.has_perm(APPROVE) else None,
        live=_oldest(waiting_for_live()) if user.has_perm(ENABLE_LIVE) else None,
    )
