"""Onboarding moves and API keys. Admin, dashboard and commands all call these."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.keys import digest_of, hint_of, new_key
from accounts.models import ApiKey, BillingModel, Business, Environment, Membership, Stage
from billing.models import EntryKind
from billing.services import ensure_wallets, post_wallet_entry, set_pricing


class OnboardingError(Exception):
    """A move the business's current stage does not allow."""


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key: ApiKey
    plaintext: str  # shown once, never stored


@transaction.atomic
def create_business(*, name: str, email: str, owner=None) -> Business:
    business = Business.objects.create(name=name, email=email)
    ensure_wallets(business=business)
    if owner is not None:
        Membership.objects.create(user=owner, business=business, is_owner=True)
    return business


@transaction.atomic
def sign_up(*, business_name: str, email: str, password: str) -> Business:
    user = get_user_model().objects.create_user(username=email, email=email, password=password)
    return create_business(name=business_name, email=email, owner=user)


def request_access(*, business: Business, use_case: str, expected_monthly_volume: int) -> None:
    if business.stage not in (Stage.REGISTERED, Stage.REJECTED):
        raise OnboardingError("Access can be requested once, from a registered account.")
    business.use_case, business.expected_monthly_volume = use_case, expected_monthly_volume
    business.stage, business.access_requested_at = Stage.ACCESS_REQUESTED, timezone.now()
    business.save()


@transaction.atomic
def approve(
    *,
    business: Business,
    billing_model: str,
    base_fee: Decimal,
    per_km_fee: Decimal,
    included_km: Decimal = Decimal("0"),
    net_days: int = 30,
    actor=None,
) -> None:
    """Approval sets billing and pricing together, and credits the sandbox wallet."""
    business = Business.objects.select_for_update().get(pk=business.pk)
    if business.stage not in (Stage.REGISTERED, Stage.ACCESS_REQUESTED, Stage.REJECTED):
        raise OnboardingError(f"A business in stage {business.stage} cannot be approved.")
    if billing_model not in BillingModel.values:
        raise OnboardingError("Choose a billing model.")
    set_pricing(
        business=business, base_fee=base_fee, per_km_fee=per_km_fee, included_km=included_km
    )
    business.billing_model, business.net_days = billing_model, net_days
    business.stage, business.approved_at = Stage.APPROVED, timezone.now()
    business.save()
    if settings.SANDBOX_STARTING_BALANCE > 0:
        post_wallet_entry(
            business=business,
            environment=Environment.SANDBOX,
            amount=settings.SANDBOX_STARTING_BALANCE,
            kind=EntryKind.TOP_UP,
            actor=actor,
            note="Sandbox starting balance",
        )


def reject(*, business: Business) -> None:
    if business.stage != Stage.ACCESS_REQUESTED:
        raise OnboardingError("Only a pending access request can be rejected.")
    business.stage = Stage.REJECTED
    business.save(update_fields=["stage"])


def has_accepted_sandbox_order(business: Business) -> bool:
    from orders.models import Drop

    return Drop.objects.filter(business=business, environment=Environment.SANDBOX).exists()


def request_live(*, business: Business) -> None:
    if business.stage != Stage.APPROVED:
        raise OnboardingError("Live access can be requested by an approved business.")
    if not has_accepted_sandbox_order(business):
        raise OnboardingError("Create at least one accepted sandbox order first.")
    business.live_requested_at = timezone.now()
    business.save(update_fields=["live_requested_at"])


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
