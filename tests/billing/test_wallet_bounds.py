"""An operator's wallet entry past what the columns hold is a clear error on the admin form,
never a 500 from the database; a balance that would overflow writes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from billing.models import MAX_BALANCE, LedgerEntry, largest_value
from billing.services import BillingError, post_wallet_entry, sandbox_top_up
from tests.billing.helpers import assert_ledger_consistent
from tests.operators import staff_client

LARGEST = "9999999999.99"  # numeric(12, 2)


@pytest.fixture
def finance(db):
    """A Finance operator (the group that may top up wallets), not a superuser."""
    return staff_client("finance@example.com", groups=["Finance"])


def wallet_url(business) -> str:
    return reverse("admin:accounts_business_wallet", args=[business.pk])


def post_entry(client, business, amount: str, kind: str = "TOP_UP", environment: str = "live"):
    return client.post(
        wallet_url(business),
        {"environment": environment, "kind": kind, "amount": amount, "note": "Bank transfer"},
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_bounds_are_the_columns():
    assert largest_value(LedgerEntry, "amount") == Decimal(LARGEST)
    assert Decimal(LARGEST) == MAX_BALANCE


def test_a_top_up_that_would_overflow_the_balance_is_a_form_error(finance, alice):
    entries = LedgerEntry.objects.count()

    response = post_entry(finance, alice.business, LARGEST)  # on top of alice's 100.00

    assert response.status_code == 200
    [message] = messages_of(response)
    assert "more than a wallet can hold (9999999999.99)" in message
    assert LedgerEntry.objects.count() == entries
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


def test_a_top_up_up_to_the_largest_balance_is_recorded(finance, alice):
    response = post_entry(finance, alice.business, "9999999899.99")  # 100.00 + this = largest

    assert response.status_code == 302
    assert assert_ledger_consistent(alice, "live") == Decimal(LARGEST)
    # One cent more, in one entry or another: refused, nothing written.
    assert post_entry(finance, alice.business, "0.01").status_code == 200
    assert assert_ledger_consistent(alice, "live") == Decimal(LARGEST)


@pytest.mark.parametrize(
    ("amount", "kind", "error"),
    [
        ("10000000000.00", "TOP_UP", "less than or equal to 9999999999.99"),
        ("99999999999999", "TOP_UP", "less than or equal to 9999999999.99"),
        ("-10000000000.00", "ADJUSTMENT", "greater than or equal to -9999999999.99"),
    ],
)
def test_an_amount_past_the_column_is_a_field_error(finance, alice, amount, kind, error):
    entries = LedgerEntry.objects.count()

    response = post_entry(finance, alice.business, amount, kind)

    assert response.status_code == 200
    assert any(error in e for e in response.context["form"].errors["amount"])
    assert LedgerEntry.objects.count() == entries


def test_self_serve_sandbox_top_ups_cannot_overflow_either(alice):
    post_wallet_entry(
        business=alice.business, environment="sandbox", amount=MAX_BALANCE - Decimal("105.00")
    )  # alice's sandbox had 100.00: now 5.00 short of the largest

    with pytest.raises(BillingError, match="more than a wallet can hold"):
        sandbox_top_up(business=alice.business, amount=Decimal("10.00"))

    assert assert_ledger_consistent(alice, "sandbox") == MAX_BALANCE - Decimal("5.00")
