"""Onboarding steps that involve money: a new business gets its wallets, approval sets its
pricing and credits the sandbox (docs/contract.md §2). The other steps are accounts.services."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.models import BillingModel, Business, Environment, Membership, Stage
from accounts.services import OnboardingError
from billing.models import EntryKind
from billing.services import ensure_wallets, post_wallet_entry, set_pricing


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
    """Approval sets billing and pricing together, and credits a prepaid business's sandbox
    wallet."""
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
    # An invoiced business's drops, sandbox ones too, go on invoices, never on its wallet:
    # a credit there would be a balance nothing spends (docs/decisions.md, "The ledger's
    # smaller rules").
    if billing_model == BillingModel.WALLET and settings.SANDBOX_STARTING_BALANCE > 0:
        post_wallet_entry(
            business=business,
            environment=Environment.SANDBOX,
            amount=settings.SANDBOX_STARTING_BALANCE,
            kind=EntryKind.TOP_UP,
            actor=actor,
            note="Sandbox starting balance",
        )
