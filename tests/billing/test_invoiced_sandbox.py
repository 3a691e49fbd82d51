"""An invoiced business's sandbox is billed as its live is, by invoice: approving it credits no
sandbox wallet, so its sandbox ledger shows no 100.00 it can never spend."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO
from types import SimpleNamespace

import orjson
import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts import services
from accounts.models import Business, Stage
from billing import onboarding
from billing.models import EntryKind, Invoice, LedgerEntry
from tests.billing.helpers import assert_ledger_consistent
from tests.factories import batch, drop, group
from tests.operators import staff_client

TERMS = {
    "base_fee": "2.00",
    "per_km_fee": "0.50",
    "included_km": "0",
    "net_days": "30",
}


@pytest.fixture
def operator(db):
    return staff_client("operator@example.com", groups=["Operators"])


@pytest.fixture
def applicant(db) -> Business:
    business = onboarding.create_business(name="Lotus Wholesale", email="lotus@example.com")
    services.request_access(business=business, use_case="Office", expected_monthly_volume=300)
    return business


def approve(operator, business, billing_model: str):
    url = reverse("admin:accounts_business_approve", args=[business.pk])
    return operator.post(url, {**TERMS, "billing_model": billing_model}, follow=True)


def said(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_approving_an_invoiced_business_credits_no_sandbox_wallet(operator, applicant):
    response = approve(operator, applicant, "invoiced")

    assert Business.objects.get(pk=applicant.pk).stage == Stage.APPROVED
    assert not LedgerEntry.objects.filter(wallet__business=applicant).exists()
    tenant = SimpleNamespace(business=applicant)
    assert assert_ledger_consistent(tenant, "sandbox") == Decimal("0.00")
    assert said(response) == [
        "Lotus Wholesale approved; billed by invoice, their sandbox orders go on a sandbox "
        "invoice that is never billed, so their sandbox wallet was not credited. They can "
        "make sandbox keys now."
    ]


def test_approving_a_prepaid_business_still_credits_its_sandbox(operator, applicant):
    approve(operator, applicant, "wallet")

    [credit] = LedgerEntry.objects.filter(wallet__business=applicant)
    assert (credit.kind, credit.amount, credit.wallet.environment) == (
        EntryKind.TOP_UP,
        Decimal("100.00"),
        "sandbox",
    )


def test_the_approve_page_says_who_gets_the_sandbox_credit(operator, applicant):
    page = operator.get(reverse("admin:accounts_business_approve", args=[applicant.pk]))

    text = page.content.decode()
    assert "Approving credits their sandbox wallet with 100.00 USD" in text
    assert "billed by monthly invoice gets no sandbox credit" in text


def test_an_invoiced_business_s_sandbox_orders_go_on_its_sandbox_invoice(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(billing="invoiced")

    response = api.bulk(batch(group(drop("INV-1"))), tenant.sandbox_key)

    [entry] = response.json()["data"]["orders"]
    assert entry["status"] == "accepted"
    invoice = Invoice.objects.get(business=tenant.business, environment="sandbox")
    assert invoice.accrued == Decimal(entry["price"])
    # Every cent is in a book: the sandbox ledger has nothing, and sums to its balance.
    assert not LedgerEntry.objects.filter(wallet__business=tenant.business).exists()
    assert assert_ledger_consistent(tenant, "sandbox") == Decimal("0.00")


def test_the_dashboard_ledger_of_an_invoiced_sandbox_shows_no_top_up(make_tenant, member):
    tenant = make_tenant(billing="invoiced", stage="approved")

    page = member(tenant.business).get("/wallet/?environment=sandbox").content.decode()

    assert "Top-up" not in page
    assert "100.00" not in page


def test_provision_business_gives_an_invoiced_sandbox_no_balance_unless_asked(db):
    out = StringIO()
    call_command(
        "provision_business",
        "--name=Invoiced",
        "--email=invoiced@example.com",
        "--billing=invoiced",
        "--json",
        stdout=out,
    )
    business = Business.objects.get(pk=orjson.loads(out.getvalue())["business_id"])
    assert not LedgerEntry.objects.filter(wallet__business=business).exists()

    call_command(
        "provision_business", "--name=Prepaid", "--email=prepaid@example.com", stdout=StringIO()
    )
    prepaid = SimpleNamespace(business=Business.objects.get(name="Prepaid"))
    assert assert_ledger_consistent(prepaid, "sandbox") == Decimal("100.00")
