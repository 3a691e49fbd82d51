"""Operator permissions (docs/contract.md §16): each onboarding move has its own, and the groups."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from accounts import services
from accounts.models import ApiKey, Business, Stage
from billing import onboarding
from billing.models import LedgerEntry
from tests.operators import staff_client

pytestmark = pytest.mark.django_db

OPERATOR_MOVES = {
    "accounts.approve_business",
    "accounts.enable_live_business",
    "accounts.suspend_business",
    "accounts.revoke_apikey",
    "orders.dispatch_drop",
    "orders.cancel_drop",
}
MONEY_MOVES = {
    "billing.adjust_wallet",
    "billing.issue_invoice",
    "billing.mark_invoice_paid",
    "billing.remit_cod",  # a payout of cash collected on delivery (billing 0005)
    "couriers.export_pay",  # every courier's pay over a period, as CSV (couriers 0007)
}

APPROVAL = {
    "billing_model": "wallet",
    "base_fee": "1.50",
    "per_km_fee": "0.25",
    "included_km": "0",
    "net_days": "30",
}


@pytest.fixture
def applicant() -> Business:
    business = onboarding.create_business(name="Applicant", email="applicant@example.com")
    services.request_access(business=business, use_case="Noodles", expected_monthly_volume=300)
    return business


@pytest.fixture
def viewer():
    """Staff who may look at businesses and keys, and do nothing else."""
    return staff_client(
        "viewer@example.com", perms=["accounts.view_business", "accounts.view_apikey"]
    )


@pytest.fixture
def operator():
    return staff_client("operator@example.com", groups=["Operators"])


def change_url(business) -> str:
    return reverse("admin:accounts_business_change", args=[business.pk])


def move_url(business, move: str) -> str:
    return reverse("admin:accounts_business_move", args=[business.pk, move])


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def buttons(client, business) -> set[str]:
    """The operator buttons on a business's admin page."""
    html = page(client, change_url(business))
    markers = {
        "approve": reverse("admin:accounts_business_approve", args=[business.pk]),
        "wallet": reverse("admin:accounts_business_wallet", args=[business.pk]),
        **{
            move: f'form="move-{move}"'
            for move in ("reject", "enable_live", "suspend", "reactivate")
        },
    }
    return {name for name, marker in markers.items() if marker in html}


def stage_of(business) -> str:
    return Business.objects.get(pk=business.pk).stage


# --- the groups


def granted(group_name: str) -> set[str]:
    group = Group.objects.get(name=group_name)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def test_migrate_creates_operators_and_finance_with_their_own_moves():
    # Run the migration again: a transactional test earlier in the run may have emptied the
    # groups, and this is about what migrate makes.
    call_command("migrate", "accounts", "0004", verbosity=0)
    assert not Group.objects.filter(name__in=["Operators", "Finance"]).exists()
    call_command("migrate", verbosity=0)

    operators, finance = granted("Operators"), granted("Finance")
    assert operators & (OPERATOR_MOVES | MONEY_MOVES) == OPERATOR_MOVES
    assert finance & (OPERATOR_MOVES | MONEY_MOVES) == MONEY_MOVES
    assert {
        "accounts.view_business",
        "accounts.change_business",
        "orders.view_order",
        "orders.view_drop",
        "couriers.change_driver",
        "billing.view_invoice",
        "billing.view_wallet",
        "billing.view_ledgerentry",
        "geo.change_servicearea",
        "billing.view_codaccount",
        "billing.view_codentry",
        "couriers.change_payplan",
    } <= operators
    assert {
        "accounts.view_business",
        "billing.view_invoice",
        "billing.view_invoiceline",
        "billing.view_wallet",
        "billing.view_ledgerentry",
        "billing.view_codaccount",
        "billing.view_codentry",
        "fleet.view_vehicletype",
        "couriers.view_payplan",
        "billing.view_couriercashaccount",
        "billing.view_couriercashentry",
        "billing.view_hubcashentry",
    } == finance - MONEY_MOVES - {"billing.view_pricingplan"}
    # The cash desk: Cashiers record hand-overs; Operators and Finance only see it.
    assert granted("Cashier") == {
        "billing.view_couriercashaccount",
        "billing.view_couriercashentry",
        "billing.view_hubcashentry",
        "billing.record_hand_over",
    }
    assert "billing.record_hand_over" not in operators | finance
    # History is appended by services only: no group may edit or delete money or drops.
    models = ("wallet", "ledgerentry", "invoice", "invoiceline", "drop", "order")
    for model in (*models, "codaccount", "codentry"):
        for verb in ("add", "change", "delete"):
            assert not {f"billing.{verb}_{model}", f"orders.{verb}_{model}"} & (operators | finance)


# --- a staff user without the permission: no button, 403


def test_staff_without_onboarding_permissions_sees_no_move_buttons(viewer, applicant, make_tenant):
    approved = make_tenant(stage="approved").business

    for business in (applicant, approved):
        assert buttons(viewer, business) == set()
        assert "/move/" not in page(viewer, change_url(business))


def all_but(missing: str):
    """Staff with every operator and money permission and change_business, except one."""
    others = OPERATOR_MOVES | MONEY_MOVES | {"accounts.view_business", "accounts.change_business"}
    return staff_client("almost@example.com", perms=sorted(others - {missing}))


def test_approve_view_is_403_on_get_and_post_without_approve_business(applicant):
    client = all_but("accounts.approve_business")
    url = reverse("admin:accounts_business_approve", args=[applicant.pk])

    assert client.get(url).status_code == 403
    assert client.post(url, APPROVAL).status_code == 403

    business = Business.objects.get(pk=applicant.pk)
    assert (business.stage, business.pricing_plan) == (Stage.ACCESS_REQUESTED, None)
    assert not LedgerEntry.objects.exists()


@pytest.mark.parametrize(
    ("move", "stage", "missing"),
    [
        ("reject", "requested", "accounts.approve_business"),
        ("enable_live", "approved", "accounts.enable_live_business"),
        ("suspend", "live", "accounts.suspend_business"),
    ],
)
def test_each_move_is_403_without_its_own_permission_even_with_the_others(
    make_tenant, move, stage, missing
):
    client = all_but(missing)
    business = make_tenant(stage=stage).business
    before = stage_of(business)

    assert client.get(move_url(business, move)).status_code == 403
    assert client.post(move_url(business, move)).status_code == 403

    assert stage_of(business) == before


def test_reactivating_needs_the_suspend_permission(make_tenant):
    business = make_tenant(stage="live").business
    services.suspend(business=business)
    client = all_but("accounts.suspend_business")

    assert buttons(client, business) == {"wallet"}
    assert client.post(move_url(business, "reactivate")).status_code == 403
    assert stage_of(business) == Stage.SUSPENDED


def test_pricing_is_read_only_without_approve_business(make_tenant):
    business = make_tenant(stage="approved").business
    editor = staff_client(
        "editor@example.com", perms=["accounts.view_business", "accounts.change_business"]
    )
    operator = staff_client("operator@example.com", groups=["Operators"])

    editable = page(editor, change_url(business))
    assert 'name="name"' in editable  # the rest of the business stays editable
    for field in ("billing_model", "pricing_plan", "net_days"):
        assert f'name="{field}"' not in editable
        assert f'name="{field}"' in page(operator, change_url(business))


# --- Operators do the day-to-day moves


def test_an_operator_sees_the_onboarding_buttons_but_not_the_wallet_one(operator, applicant):
    assert buttons(operator, applicant) == {"approve", "reject", "suspend"}


def test_an_operator_approves_and_prices_a_business(operator, applicant):
    url = reverse("admin:accounts_business_approve", args=[applicant.pk])
    assert operator.get(url).status_code == 200

    response = operator.post(url, APPROVAL)

    assert response.status_code == 302
    business = Business.objects.select_related("pricing_plan").get(pk=applicant.pk)
    assert business.stage == Stage.APPROVED
    assert str(business.pricing_plan.base_fee) == "1.50"


def test_an_operator_rejects_switches_live_suspends_and_reactivates(
    operator, applicant, make_tenant
):
    assert operator.post(move_url(applicant, "reject")).status_code == 302
    assert stage_of(applicant) == Stage.REJECTED

    approved = make_tenant(stage="approved").business
    # Enable live is offered once the business asked for it.
    Business.objects.filter(pk=approved.pk).update(live_requested_at=timezone.now())
    assert buttons(operator, approved) == {"enable_live", "suspend"}
    operator.post(move_url(approved, "enable_live"))
    assert stage_of(approved) == Stage.LIVE

    operator.post(move_url(approved, "suspend"))
    assert stage_of(approved) == Stage.SUSPENDED
    assert buttons(operator, approved) == {"reactivate"}
    operator.post(move_url(approved, "reactivate"))
    assert stage_of(approved) == Stage.LIVE


def test_an_unknown_move_is_404(operator, applicant):
    assert operator.post(move_url(applicant, "delete_everything")).status_code == 404
    assert stage_of(applicant) == Stage.ACCESS_REQUESTED


def test_finance_cannot_approve(applicant):
    finance = staff_client("finance@example.com", groups=["Finance"])

    assert buttons(finance, applicant) == {"wallet"}
    url = reverse("admin:accounts_business_approve", args=[applicant.pk])
    assert finance.post(url, APPROVAL).status_code == 403
    assert stage_of(applicant) == Stage.ACCESS_REQUESTED


# --- revoking API keys


def revoke(client, key: ApiKey):
    return client.post(
        reverse("admin:accounts_apikey_changelist"),
        {"action": "revoke", "index": "0", "_selected_action": [str(key.pk)]},
    )


def test_revoking_keys_is_403_and_not_offered_without_revoke_apikey(viewer, alice):
    key = ApiKey.objects.filter(business=alice.business).first()

    assert 'value="revoke"' not in page(viewer, reverse("admin:accounts_apikey_changelist"))
    assert revoke(viewer, key).status_code == 403

    key.refresh_from_db()
    assert key.is_active


def test_an_operator_revokes_a_key(operator, alice):
    key = ApiKey.objects.filter(business=alice.business).first()
    assert 'value="revoke"' in page(operator, reverse("admin:accounts_apikey_changelist"))

    assert revoke(operator, key).status_code == 302

    key.refresh_from_db()
    assert not key.is_active
