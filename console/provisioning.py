"""Provisioning a business in one call, for operators' scripts, demos and tests."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from accounts import services
from accounts.models import BillingModel, Business, Environment, Stage
from billing import onboarding
from billing.models import EntryKind, Wallet
from billing.services import post_wallet_entry

STAGES = {
    "registered": Stage.REGISTERED,
    "requested": Stage.ACCESS_REQUESTED,
    "approved": Stage.APPROVED,
    "live": Stage.LIVE,
}


@dataclass(frozen=True, slots=True)
class Provisioned:
    business: Business
    sandbox_key: str | None
    live_key: str | None


@transaction.atomic
def provision_business(
    *,
    name: str,
    email: str,
    billing: str = BillingModel.WALLET,
    stage: str = "live",
    live_balance: Decimal = Decimal("0.00"),
    sandbox_balance: Decimal | None = None,
    base_fee: Decimal = Decimal("2.00"),
    per_km_fee: Decimal = Decimal("0.50"),
    included_km: Decimal = Decimal("0"),
    net_days: int = 30,
    key_label: str = "provisioned",
) -> Provisioned:
    """Walk a new business through onboarding up to `stage`, minting the keys it allows.

    `sandbox_balance` None: 100.00 for a prepaid business, nothing for an invoiced one, whose
    sandbox drops go on a sandbox invoice (as approval does: billing.onboarding.approve).
    """
    target = STAGES[stage]
    business = onboarding.create_business(name=name, email=email)
    if target == Stage.REGISTERED:
        return Provisioned(business, None, None)
    services.request_access(business=business, use_case="Provisioned", expected_monthly_volume=0)
    if target == Stage.ACCESS_REQUESTED:
        return Provisioned(business, None, None)
    onboarding.approve(
        business=business,
        billing_model=billing,
        base_fee=base_fee,
        per_km_fee=per_km_fee,
        included_km=included_km,
        net_days=net_days,
    )
    business.refresh_from_db()
    if sandbox_balance is None and billing == BillingModel.WALLET:
        sandbox_balance = Decimal("100.00")
    if sandbox_balance is not None:
        set_balance(business=business, environment=Environment.SANDBOX, balance=sandbox_balance)
    sandbox_key = services.create_api_key(
        business=business, environment=Environment.SANDBOX, label=key_label
    ).plaintext
    if target == Stage.APPROVED:
        return Provisioned(business, sandbox_key, None)
    services.enable_live(business=business)
    set_balance(business=business, environment=Environment.LIVE, balance=live_balance)
    live_key = services.create_api_key(
        business=business, environment=Environment.LIVE, label=key_label
    ).plaintext
    return Provisioned(business, sandbox_key, live_key)


def set_balance(*, business: Business, environment: str, balance: Decimal) -> None:
    """Bring a wallet to `balance` with one ledger entry (a top-up or an adjustment)."""
    current = Wallet.objects.get(business=business, environment=environment).balance
    difference = Decimal(balance) - current
    if difference > 0:
        post_wallet_entry(
            business=business,
            environment=environment,
            amount=difference,
            kind=EntryKind.TOP_UP,
            note="Provisioned balance",
        )
    elif difference < 0:
        post_wallet_entry(
            business=business,
            environment=environment,
            amount=difference,
            kind=EntryKind.ADJUSTMENT,
            note="Provisioned balance",
        )
