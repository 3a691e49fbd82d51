"""Money under concurrency, on PostgreSQL with real threads: no overdraft, no lost update.

Every thread starts at a Barrier with its own client and database connection, so the
requests really overlap; the wallet row lock (Till, post_wallet_entry) must serialise them.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from billing.models import EntryKind, Invoice, InvoiceLine, LedgerEntry
from billing.services import BillingError, post_wallet_entry
from orders.models import Drop, DropStatus
from tests.billing.helpers import assert_debited_per_batch, assert_ledger_consistent, outcomes
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tests.helpers import run_concurrently

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_dollar_drops(make_tenant):
    """Every drop costs exactly 2.00: the distance is inside the included km."""

    def make(balance: str, **options):
        return make_tenant(
            base_fee="2.00", per_km_fee="0.50", included_km="50", sandbox_balance=balance, **options
        )

    return make


def one_drop_batch(api, tenant, i: int):
    response = api.bulk(batch(group(drop(f"C-{i}"))), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return response


def test_thirty_concurrent_batches_against_a_wallet_for_ten_accept_exactly_ten(
    open_for_business, two_dollar_drops
):
    tenant = two_dollar_drops("20.00")

    responses = run_concurrently(30, lambda api, i: one_drop_batch(api, tenant, i))

    counted = Counter(outcome for r in responses for outcome in outcomes(r))
    assert counted == {"accepted": 10, "INSUFFICIENT_BALANCE": 20}
    assert Drop.objects.count() == 10
    debits = LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT)
    assert debits.count() == 10
    assert set(debits.values_list("amount", flat=True)) == {Decimal("-2.00")}
    # One debit per batch that accepted its drop, naming that batch.
    assert set(debits.values_list("batch_id", flat=True)) == set(
        Drop.objects.values_list("batch_id", flat=True)
    )
    assert len(assert_debited_per_batch(tenant)) == 10
    assert assert_ledger_consistent(tenant) == Decimal("0.00")


def test_hundred_concurrent_debits_lose_no_update(make_tenant):
    tenant = make_tenant(sandbox_balance="5.00")

    def debit(api, i):
        return post_wallet_entry(
            business=tenant.business,
            environment="sandbox",
            amount=Decimal("-0.01"),
            kind=EntryKind.ADJUSTMENT,
            note=f"debit {i}",
        )

    run_concurrently(100, debit)

    assert (
        LedgerEntry.objects.filter(kind=EntryKind.ADJUSTMENT, note__startswith="debit").count()
        == 100
    )
    assert assert_ledger_consistent(tenant) == Decimal("4.00")


def test_hundred_concurrent_debits_never_overdraw(make_tenant):
    tenant = make_tenant(sandbox_balance="0.90")

    def debit(api, i):
        try:
            post_wallet_entry(
                business=tenant.business,
                environment="sandbox",
                amount=Decimal("-0.01"),
                kind=EntryKind.ADJUSTMENT,
            )
        except BillingError:
            return "refused"
        return "debited"

    results = run_concurrently(100, debit)

    assert Counter(results) == {"debited": 90, "refused": 10}
    assert assert_ledger_consistent(tenant) == Decimal("0.00")


def test_concurrent_one_drop_batches_with_room_to_spare_debit_every_drop_once(
    open_for_business, two_dollar_drops
):
    tenant = two_dollar_drops("1000.00")

    responses = run_concurrently(40, lambda api, i: one_drop_batch(api, tenant, i))

    assert all(outcomes(r) == ["accepted"] for r in responses)
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).count() == 40
    assert assert_ledger_consistent(tenant) == Decimal("920.00")


def test_concurrent_batches_of_an_invoiced_account_accrue_on_one_invoice(
    open_for_business, two_dollar_drops
):
    tenant = two_dollar_drops("0.00", billing="invoiced")

    responses = run_concurrently(20, lambda api, i: one_drop_batch(api, tenant, i))

    assert all(outcomes(r) == ["accepted"] for r in responses)
    invoice = Invoice.objects.get(business=tenant.business, environment="sandbox")
    assert invoice.period == "2026-11"
    assert InvoiceLine.objects.filter(invoice=invoice).count() == 20
    assert invoice.accrued == Decimal("40.00")


def test_concurrent_top_ups_batches_and_cancellations_keep_the_ledger_exact(
    open_for_business, two_dollar_drops
):
    tenant = two_dollar_drops("10.00")
    # Five drops to cancel (10.00 refunded in all), placed before the race.
    setup = Api().bulk(batch(group(*[drop(f"X-{i}") for i in range(5)])), tenant.sandbox_key)
    assert outcomes(setup) == ["accepted"] * 5  # the wallet is empty now

    def work(api, i):
        kind = i % 3
        if kind == 0 and i // 3 < 5:
            return api.post("/orders/cancel", {"identifiers": [f"X-{i // 3}"]}, tenant.sandbox_key)
        if kind == 1:
            post_wallet_entry(
                business=tenant.business, environment="sandbox", amount=Decimal("1.00")
            )
            return None
        return one_drop_batch(api, tenant, i)

    responses = run_concurrently(30, work)

    assert Drop.objects.filter(status=DropStatus.CANCELLED).count() == 5
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == 5
    accepted = sum(
        outcomes(r).count("accepted")
        for r in responses
        if r is not None and "counts" in r.json()["data"]
    )
    # 10.00 paid the first five drops; then 5 refunds of 2.00 and 10 top-ups of 1.00 came in.
    expected = (
        Decimal("0.00") + 5 * Decimal("2.00") + 10 * Decimal("1.00") - accepted * Decimal("2.00")
    )
    assert expected >= 0
    assert assert_ledger_consistent(tenant) == expected
