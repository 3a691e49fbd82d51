"""Onboarding moves and API keys. Admin, dashboard and commands all call these."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.keys import digest_of, hint_of, new_key
from accounts.models import ApiKey, Business, Environment, Stage


class OnboardingError(Exception):
    """A move the business's current stage does not allow."""


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key: ApiKey
    plaintext: str  # shown once, never stored


def set_languages(*, business: Business, recipient_language: str, dashboard_language: str) -> None:
    """The business's languages where a page or message has no better clue (docs/contract.md
    §26): its recipients' and its dashboard's; each one of settings.LANGUAGES."""
    codes = {code for code, _ in settings.LANGUAGES}
    if not {recipient_language, dashboard_language} <= codes:
        raise ValueError(f"A language is one of {', '.join(sorted(codes))}.")
    business.recipient_language = recipient_language
    business.dashboard_language = dashboard_language
    business.save(update_fields=["recipient_language", "dashboard_language"])


def request_access(*, business: Business, use_case: str, expected_monthly_volume: int) -> None:
    if business.stage not in (Stage.REGISTERED, Stage.REJECTED):
        raise OnboardingError("Access can be requested once, from a registered account.")
    business.use_case, business.expected_monthly_volume = use_case, expected_monthly_volume
    business.stage, business.access_requested_at = Stage.ACCESS_REQUESTED, timezone.now()
    business.save()


def reject(*, business: Business) -> None:
    if business.stage != Stage.ACCESS_REQUESTED:
        raise OnboardingError("Only a pending access request can be rejected.")
    business.stage = Stage.REJECTED
    business.save(update_fields=["stage"])


def enable_live(*, business: Business) -> None:
    if business.stage != Stage.APPROVED:
        raise OnboardingError("Only an approved business can be switched to live.")
    business.stage, business.live_enabled_at = Stage.LIVE, timezone.now()
    business.save(update_fields=["stage", "live_enabled_at"])


def suspend(*, business: Business) -> None:
    if business.stage == Stage.SUSPENDED:
        return
    business.stage_before_suspension, business.stage = business.stage, Stage.SUSPENDED
    business.save(update_fields=["stage", "stage_before_suspension"])


def reactivate(*, business: Business) -> None:
    if business.stage != Stage.SUSPENDED:
        raise OnboardingError("The business is not suspended.")
    business.stage = business.stage_before_suspension or Stage.REGISTERED
    business.stage_before_suspension = ""
    business.save(update_fields=["stage", "stage_before_suspension"])


@transaction.atomic
def create_api_key(
    *, business: Business, environment: str, label: str = "", created_by=None
) -> IssuedKey:
    business = Business.objects.select_for_update().get(pk=business.pk)
    if environment == Environment.SANDBOX and not business.can_use_sandbox:
        raise OnboardingError("Sandbox keys can be made once the business is approved.")
    if environment == Environment.LIVE and not business.is_live:
        raise OnboardingError("Live keys can be made once live access is switched on.")
    active = ApiKey.objects.filter(
        business=business, environment=environment, revoked_at__isnull=True
    ).count()
    if active >= settings.MAX_ACTIVE_KEYS_PER_ENVIRONMENT:
        raise OnboardingError(
            f"At most {settings.MAX_ACTIVE_KEYS_PER_ENVIRONMENT} active keys per environment."
        )
    plaintext = new_key(environment)
    key = ApiKey.objects.create(
        business=business,
        environment=environment,
        digest=digest_of(plaintext),
        hint=hint_of(plaintext),
        label=label,
        created_by=created_by,
    )
    return IssuedKey(key=key, plaintext=plaintext)


def revoke_api_key(*, key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
