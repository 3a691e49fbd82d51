"""The operator console for money: approval, wallet entries, read-only ledgers, invoices."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest
import time_machine
from django.test import override_settings
from django.urls import reverse

from accounts import services
from accounts.models import BillingModel, Business, Stage
from billing import onboarding
from billing.models import EntryKind, Invoice, InvoiceStatus, LedgerEntry, Wallet
from tests.billing.helpers import assert_ledger_consistent, wallet_of


def _tenant(business) -> SimpleNamespace:
    """The one attribute of a tenant the ledger helpers need."""
    return SimpleNamespace(business=business)


@pytest.fixture
def applicant(db) -> Business:
    """A business waiting in the approval queue."""
    business = onboarding.create_business(name="Applicant", email="applicant@example.com")
    services.request_access(business=business, use_case="Noodles", expected_monthly_volume=300)
    return business


def approve_url(business) -> str:
    return reverse("admin:accounts_business_approve", args=[business.pk])


def wallet_url(business) -> str:
    return reverse("admin:accounts_business_wallet", args=[business.pk])


APPROVAL = {
    "billing_model": "invoiced",
    "base_fee": "1.50",
    "per_km_fee": "0.25",
    "included_km": "2.00",
    "net_days": "45",
}


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


# --- approval


def test_approve_form_sets_billing_pricing_and_terms_and_credits_the_sandbox(
    admin_client, admin_user, applicant
):
    # A prepaid business: an invoiced one gets no sandbox credit (test_invoiced_sandbox.py).
    response = admin_client.post(approve_url(applicant), {**APPROVAL, "billing_model": "wallet"})

    assert response.status_code == 302
    assert response.url == reverse("admin:accounts_business_change", args=[applicant.pk])
    business = Business.objects.select_related("pricing_plan").get(pk=applicant.pk)
    assert business.stage == Stage.APPROVED
    # A prepaid wallet has no credit terms: the net days sent are not stored.
    assert (business.billing_model, business.net_days) == (BillingModel.WALLET, 30)
    plan = business.pricing_plan
    assert (plan.base_fee, plan.per_km_fee, plan.included_km) == (
        Decimal("1.50"),
        Decimal("0.25"),
        Decimal("2.00"),
    )
    credit = LedgerEntry.objects.get(wallet__business=business)
    assert (credit.kind, credit.amount, credit.actor) == (
        EntryKind.TOP_UP,
        Decimal("100.00"),
        admin_user,
    )
    assert credit.wallet.environment == "sandbox"
    assert assert_ledger_consistent(_tenant(business), "sandbox") == Decimal("100.00")
    assert assert_ledger_consistent(_tenant(business), "live") == Decimal("0.00")


@override_settings(SANDBOX_STARTING_BALANCE=Decimal("25.00"))
def test_approval_credits_the_configured_sandbox_starting_balance(admin_client, applicant):
    admin_client.post(approve_url(applicant), {**APPROVAL, "billing_model": "wallet"})

    assert wallet_of(_tenant(applicant), "sandbox").balance == Decimal("25.00")
    assert Business.objects.get(pk=applicant.pk).billing_model == BillingModel.WALLET


@pytest.mark.parametrize(
    "change",
    [{"billing_model": ""}, {"base_fee": "-1.00"}, {"per_km_fee": "abc"}, {"net_days": "-1"}],
)
def test_invalid_approval_form_changes_nothing(admin_client, applicant, change):
    response = admin_client.post(approve_url(applicant), {**APPROVAL, **change})

    assert response.status_code == 200
    assert response.context["form"].errors
    business = Business.objects.get(pk=applicant.pk)
    assert (business.stage, business.pricing_plan) == (Stage.ACCESS_REQUESTED, None)
    assert not LedgerEntry.objects.exists()


def test_an_invoiced_approval_sets_its_net_days(admin_client, applicant):
    response = admin_client.post(approve_url(applicant), APPROVAL)

    assert response.status_code == 302
    business = Business.objects.get(pk=applicant.pk)
    assert (business.billing_model, business.net_days) == (BillingModel.INVOICED, 45)


def test_an_invoiced_approval_needs_its_net_days(admin_client, applicant):
    response = admin_client.post(approve_url(applicant), {**APPROVAL, "net_days": ""})

    assert response.status_code == 200
    assert list(response.context["form"].errors) == ["net_days"]
    assert Business.objects.get(pk=applicant.pk).stage == Stage.ACCESS_REQUESTED


@pytest.mark.parametrize("net_days", ["999", "-1", "soon", ""])
def test_a_wallet_approval_ignores_whatever_net_days_say(admin_client, applicant, net_days):
    Business.objects.filter(pk=applicant.pk).update(net_days=21)

    response = admin_client.post(
        approve_url(applicant), {**APPROVAL, "billing_model": "wallet", "net_days": net_days}
    )

    assert response.status_code == 302
    business = Business.objects.get(pk=applicant.pk)
    assert (business.stage, business.billing_model) == (Stage.APPROVED, BillingModel.WALLET)
    assert business.net_days == 21  # the business's own, untouched


def test_the_approve_page_marks_net_days_as_invoice_only_and_serves_the_toggle(
    admin_client, applicant
):
    page = admin_client.get(approve_url(applicant)).content.decode()

    assert re.search(r'<input[^>]*name="net_days"[^>]*data-invoice-only', page) or re.search(
        r'<input[^>]*data-invoice-only[^>]*name="net_days"', page
    )
    script = re.search(r'<script src="([^"]*billing_terms[^"]*\.js)"', page).group(1)
    assert admin_client.get(script).status_code == 200


def business_page_form(client, business) -> dict:
    """What the business page's form posts as it stands: its fields and its inlines'."""
    page = client.get(reverse("admin:accounts_business_change", args=[business.pk]))
    forms = [page.context["adminform"].form]
    for inline in page.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    data = {form[name].html_name: form[name].value() for form in forms for name in form.fields}
    return {name: "" if value is None else value for name, value in data.items()}


def test_the_business_page_keeps_net_days_when_billing_by_wallet(admin_client, make_tenant):
    business = make_tenant(stage="approved", billing="invoiced", net_days=10).business
    data = business_page_form(admin_client, business)

    url = reverse("admin:accounts_business_change", args=[business.pk])

    saved = admin_client.post(url, {**data, "billing_model": "wallet", "net_days": "90"})
    assert saved.status_code == 302
    business.refresh_from_db()
    assert (business.billing_model, business.net_days) == (BillingModel.WALLET, 10)

    admin_client.post(url, {**data, "billing_model": "invoiced", "net_days": "90"})
    business.refresh_from_db()
    assert (business.billing_model, business.net_days) == (BillingModel.INVOICED, 90)


def test_approving_an_approved_business_again_credits_nothing(admin_client, make_tenant):
    tenant = make_tenant(stage="approved", base_fee="2.00")
    entries = LedgerEntry.objects.count()

    response = admin_client.post(approve_url(tenant.business), APPROVAL)

    assert response.status_code == 200
    assert any("cannot be approved" in m for m in messages_of(response))
    assert LedgerEntry.objects.count() == entries
    business = Business.objects.select_related("pricing_plan").get(pk=tenant.business.pk)
    assert business.pricing_plan.base_fee == Decimal("2.00")
    assert business.billing_model == BillingModel.WALLET


def test_approve_form_renders_for_an_operator(admin_client, applicant):
    response = admin_client.get(approve_url(applicant))

    assert response.status_code == 200
    for name in APPROVAL:
        assert f'name="{name}"' in response.content.decode()


# --- wallet entries through the form


def test_wallet_top_up_form_writes_a_ledger_entry_with_the_operator_as_actor(
    admin_client, admin_user, alice
):
    response = admin_client.post(
        wallet_url(alice.business),
        {"environment": "live", "kind": "TOP_UP", "amount": "50.25", "note": "Bank transfer 7"},
    )

    assert response.status_code == 302
    entry = LedgerEntry.objects.filter(wallet=wallet_of(alice, "live")).latest("id")
    assert (entry.kind, entry.amount, entry.balance_after, entry.actor, entry.note) == (
        EntryKind.TOP_UP,
        Decimal("50.25"),
        Decimal("150.25"),
        admin_user,
        "Bank transfer 7",
    )
    assert assert_ledger_consistent(alice, "live") == Decimal("150.25")
    assert assert_ledger_consistent(alice, "sandbox") == Decimal("100.00")


def test_wallet_adjustment_form_can_lower_the_balance_down_to_zero(admin_client, admin_user, alice):
    response = admin_client.post(
        wallet_url(alice.business),
        {"environment": "sandbox", "kind": "ADJUSTMENT", "amount": "-100.00", "note": "Reset"},
    )

    assert response.status_code == 302
    entry = LedgerEntry.objects.filter(wallet=wallet_of(alice)).latest("id")
    assert (entry.kind, entry.amount, entry.actor) == (
        EntryKind.ADJUSTMENT,
        Decimal("-100.00"),
        admin_user,
    )
    assert assert_ledger_consistent(alice) == Decimal("0.00")


@pytest.mark.parametrize(
    ("kind", "amount", "message"),
    [
        ("ADJUSTMENT", "-100.01", "negative"),
        ("TOP_UP", "-5.00", "positive"),
        ("TOP_UP", "0", "positive"),
    ],
)
def test_wallet_form_never_lets_the_balance_go_negative_and_writes_nothing(
    admin_client, alice, kind, amount, message
):
    entries = LedgerEntry.objects.count()

    response = admin_client.post(
        wallet_url(alice.business),
        {"environment": "live", "kind": kind, "amount": amount, "note": "Oops"},
    )

    assert response.status_code == 200
    assert any(message in m for m in messages_of(response)), messages_of(response)
    assert LedgerEntry.objects.count() == entries
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


@pytest.mark.parametrize(
    "change",
    [{"note": ""}, {"kind": "ORDER_DEBIT"}, {"kind": "REFUND"}, {"amount": "1.001"}],
)
def test_wallet_form_accepts_only_operator_kinds_with_a_note_in_cents(admin_client, alice, change):
    entries = LedgerEntry.objects.count()
    data = {"environment": "live", "kind": "TOP_UP", "amount": "5.00", "note": "Why", **change}

    response = admin_client.post(wallet_url(alice.business), data)

    assert response.status_code == 200
    assert response.context["form"].errors
    assert LedgerEntry.objects.count() == entries


def test_wallet_form_is_for_operators_only(client, django_user_model, alice):
    user = django_user_model.objects.create_user(username="owner@example.com", password="pw")
    client.force_login(user)

    response = client.post(
        wallet_url(alice.business),
        {"environment": "live", "kind": "TOP_UP", "amount": "1000", "note": "Free money"},
    )

    assert response.status_code == 302
    assert reverse("admin:login") in response.url
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


# --- ledgers and wallets are read-only


@pytest.mark.parametrize("model", [Wallet, LedgerEntry])
def test_ledger_and_wallets_cannot_be_added_changed_or_deleted_in_admin(admin_client, alice, model):
    row = (
        wallet_of(alice, "live")
        if model is Wallet
        else LedgerEntry.objects.filter(wallet=wallet_of(alice, "live")).latest("id")
    )
    name = model._meta.model_name
    change_url = reverse(f"admin:billing_{name}_change", args=[row.pk])

    assert admin_client.get(reverse(f"admin:billing_{name}_changelist")).status_code == 200
    assert admin_client.get(change_url).status_code == 200  # view only
    assert admin_client.get(reverse(f"admin:billing_{name}_add")).status_code == 403
    assert (
        admin_client.post(change_url, {"balance": "9999.00", "amount": "9999.00"}).status_code
        == 403
    )
    delete_url = reverse(f"admin:billing_{name}_delete", args=[row.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    bulk_delete = admin_client.post(
        reverse(f"admin:billing_{name}_changelist"),
        {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
    )
    assert bulk_delete.status_code in (200, 302)
    assert model.objects.filter(pk=row.pk).exists()
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


def test_wallet_page_shows_its_ledger_read_only(admin_client, alice):
    response = admin_client.get(
        reverse("admin:billing_wallet_change", args=[wallet_of(alice, "live").pk])
    )

    page = response.content.decode()
    assert "Provisioned balance" in page
    assert 'name="_save"' not in page


# --- invoices


@pytest.fixture
def december(db):
    """10:00 on Dec 1 in Phnom Penh."""
    with time_machine.travel(datetime(2026, 12, 1, 3, 0, tzinfo=UTC), tick=False):
        yield


@pytest.fixture
def invoices(make_tenant, december):
    """October and November (ended) and December (current), live; one sandbox November."""
    tenant = make_tenant(billing="invoiced", net_days=10)
    made = {
        period: Invoice.objects.create(
            business=tenant.business, environment="live", period=period, accrued=Decimal("9.99")
        )
        for period in ("2026-10", "2026-11", "2026-12")
    }
    made["sandbox"] = Invoice.objects.create(
        business=tenant.business, environment="sandbox", period="2026-11"
    )
    return made


def run_action(admin_client, action: str, invoices):
    return admin_client.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": action, "_selected_action": [i.pk for i in invoices]},
        follow=True,
    )


def status_of(invoice) -> str:
    invoice.refresh_from_db()
    return invoice.status


def test_issue_action_issues_the_selected_invoices_of_ended_months_only(admin_client, invoices):
    response = run_action(
        admin_client,
        "issue_ended_months",
        [invoices["2026-10"], invoices["2026-12"], invoices["sandbox"]],
    )

    assert response.status_code == 200
    assert status_of(invoices["2026-10"]) == InvoiceStatus.ISSUED
    invoices["2026-10"].refresh_from_db()
    assert str(invoices["2026-10"].due_on) == "2026-12-11"
    assert status_of(invoices["sandbox"]) == InvoiceStatus.CLOSED
    assert status_of(invoices["2026-12"]) == InvoiceStatus.OPEN  # the month has not ended
    assert status_of(invoices["2026-11"]) == InvoiceStatus.OPEN  # not selected


def test_mark_paid_action_pays_issued_invoices_and_refuses_others(admin_client, invoices):
    run_action(admin_client, "issue_ended_months", [invoices["2026-10"]])

    response = run_action(admin_client, "mark_paid", [invoices["2026-10"], invoices["2026-11"]])

    assert status_of(invoices["2026-10"]) == InvoiceStatus.PAID
    invoices["2026-10"].refresh_from_db()
    assert invoices["2026-10"].paid_at == datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    assert status_of(invoices["2026-11"]) == InvoiceStatus.OPEN
    assert any("Only an issued invoice" in m for m in messages_of(response))


def test_invoices_themselves_are_read_only_in_admin(admin_client, invoices):
    october = invoices["2026-10"]
    change_url = reverse("admin:billing_invoice_change", args=[october.pk])

    assert admin_client.get(change_url).status_code == 200
    assert admin_client.post(change_url, {"status": "PAID", "accrued": "0.00"}).status_code == 403
    assert admin_client.get(reverse("admin:billing_invoice_add")).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:billing_invoice_delete", args=[october.pk]), {"post": "yes"}
        ).status_code
        == 403
    )

    october.refresh_from_db()
    assert (october.status, october.accrued) == (InvoiceStatus.OPEN, Decimal("9.99"))
