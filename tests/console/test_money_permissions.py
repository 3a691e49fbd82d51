"""Money in admin needs Finance's permissions (docs/contract.md §16): wallet entries and
invoices."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine
from django.urls import reverse

from billing.models import Invoice, InvoiceStatus, LedgerEntry
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.operators import staff_client

pytestmark = pytest.mark.django_db

TOP_UP = {"environment": "live", "kind": "TOP_UP", "amount": "50.00", "note": "Bank transfer"}


@pytest.fixture
def operator():
    """Day-to-day operators see money but do not move it."""
    return staff_client("operator@example.com", groups=["Operators"])


@pytest.fixture
def finance():
    return staff_client("finance@example.com", groups=["Finance"])


def wallet_url(business) -> str:
    return reverse("admin:accounts_business_wallet", args=[business.pk])


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


# --- wallet top-ups and adjustments


def test_wallet_entries_are_403_and_not_offered_without_adjust_wallet(operator, alice):
    entries = LedgerEntry.objects.count()

    change_page = page(
        operator, reverse("admin:accounts_business_change", args=[alice.business.pk])
    )
    assert wallet_url(alice.business) not in change_page
    assert operator.get(wallet_url(alice.business)).status_code == 403
    assert operator.post(wallet_url(alice.business), TOP_UP).status_code == 403

    assert LedgerEntry.objects.count() == entries
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


@pytest.mark.parametrize(
    ("kind", "amount", "balance"),
    [("TOP_UP", "50.00", "150.00"), ("ADJUSTMENT", "-40.00", "60.00")],
)
def test_finance_tops_up_and_adjusts_a_wallet(finance, alice, kind, amount, balance):
    change_page = page(finance, reverse("admin:accounts_business_change", args=[alice.business.pk]))
    assert wallet_url(alice.business) in change_page
    assert finance.get(wallet_url(alice.business)).status_code == 200

    response = finance.post(wallet_url(alice.business), {**TOP_UP, "kind": kind, "amount": amount})

    assert response.status_code == 302
    entry = LedgerEntry.objects.filter(wallet=wallet_of(alice, "live")).latest("id")
    assert (entry.kind, entry.amount, entry.actor.username) == (
        kind,
        Decimal(amount),
        "finance@example.com",
    )
    assert assert_ledger_consistent(alice, "live") == Decimal(balance)


def test_finance_sees_wallets_and_ledgers_read_only(finance, alice):
    wallet = wallet_of(alice, "live")

    assert "Provisioned balance" in page(
        finance, reverse("admin:billing_wallet_change", args=[wallet.pk])
    )
    page(finance, reverse("admin:billing_ledgerentry_changelist"))
    assert (
        finance.post(reverse("admin:billing_wallet_change", args=[wallet.pk]), {}).status_code
        == 403
    )


# --- invoices


@pytest.fixture
def invoices(make_tenant):
    """An ended month's invoice already issued and one still open, at 10:00 on Dec 1."""
    tenant = make_tenant(billing="invoiced", net_days=10)
    with time_machine.travel(datetime(2026, 12, 1, 3, 0, tzinfo=UTC), tick=False):
        yield {
            "issued": Invoice.objects.create(
                business=tenant.business,
                environment="live",
                period="2026-10",
                status=InvoiceStatus.ISSUED,
                accrued=Decimal("9.99"),
            ),
            "open": Invoice.objects.create(
                business=tenant.business, environment="live", period="2026-11"
            ),
        }


def run_action(client, action: str, *invoices):
    return client.post(
        reverse("admin:billing_invoice_changelist"),
        {"action": action, "index": "0", "_selected_action": [str(i.pk) for i in invoices]},
    )


def status_of(invoice) -> str:
    invoice.refresh_from_db()
    return invoice.status


@pytest.mark.parametrize(
    ("action", "missing"),
    [("mark_paid", "billing.mark_invoice_paid"), ("issue_ended_months", "billing.issue_invoice")],
)
def test_invoice_actions_are_403_and_not_offered_without_their_permission(
    operator, invoices, action, missing
):
    """Operators can read invoices but not run either action; Finance without this one neither."""
    other = {"billing.mark_invoice_paid", "billing.issue_invoice"} - {missing}
    almost = staff_client("almost@example.com", perms=["billing.view_invoice", *other])

    for client in (operator, almost):
        assert f'value="{action}"' not in page(client, reverse("admin:billing_invoice_changelist"))
        assert run_action(client, action, invoices["issued"], invoices["open"]).status_code == 403

    assert status_of(invoices["issued"]) == InvoiceStatus.ISSUED
    assert status_of(invoices["open"]) == InvoiceStatus.OPEN


def test_finance_issues_and_marks_invoices_paid(finance, invoices):
    changelist = page(finance, reverse("admin:billing_invoice_changelist"))
    assert 'value="issue_ended_months"' in changelist
    assert 'value="mark_paid"' in changelist

    assert run_action(finance, "issue_ended_months", invoices["open"]).status_code == 302
    assert run_action(finance, "mark_paid", invoices["issued"]).status_code == 302

    assert status_of(invoices["open"]) == InvoiceStatus.ISSUED
    assert status_of(invoices["issued"]) == InvoiceStatus.PAID
