"""The onboarding step that depends on orders: live access needs an accepted sandbox order."""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Business, Environment, Stage
from accounts.services import OnboardingError
from orders.models import Drop


def has_accepted_sandbox_order(business: Business) -> bool:
    return Drop.objects.filter(business=business, environment=Environment.SANDBOX).exists()


def request_live(*, business: Business) -> None:
    if business.stage != Stage.APPROVED:
        raise OnboardingError("Live access can be requested by an approved business.")
    if not has_accepted_sandbox_order(business):
        raise OnboardingError("Create at least one accepted sandbox order first.")
    business.live_requested_at = timezone.now()
    business.save(update_fields=["live_requested_at"])
