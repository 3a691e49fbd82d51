"""Returns racing top-ups and batches on one wallet, on PostgreSQL with real threads
(docs/contract.md §19): no cent lost, never below zero, no drop taken while money is owed.

A return takes the account lock before the drop's row (tracking.lifecycle), as batches and
cancellations do, so the three serialise on the wallet row and never deadlock.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from billing.models import EntryKind, LedgerEntry, PricingPlan
from billing.services import post_wallet_entry
from orders.models import Drop, DropStatus
from tests.billing.helpers import assert_ledger_consistent, outcomes, wallet_of
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tests.helpers import run_concurrently
from tests.tracking.helpers import advance, entries, place

pytestmark = pytest.mark.django_db(transaction=True)

RETURNS = 6
PRICE = Decimal("2.00")


def test_returns_top_ups_and_batches_at_once_lose_no_cent_and_take_no_drop_while_owing(
    open_for_business, make_tenant
):
    tenant = make_tenant(
        base_fee="2.00", per_km_fee="0.50", included_km="50", sandbox_balance="12.00"
    )
    PricingPlan.objects.filter(pk=tenant.business.pricing_plan_id).update(
        return_fee_percent=Decimal("100")
    )
    api, key = Api(), tenant.sandbox_key
    returning = [f"R-{i}" for i in range(RETURNS)]
    place(api, key, *returning)  # the wallet is empty now
    assert {
        e["status"] for e in entries(advance(api, key, *returning, to="RETURNING")).values()
    } == {"RETURNING"}

    def work(api, i):
        kind, n = i % 3, i // 3
        if kind == 0:
            return advance(api, key, returning[n], to="RETURNED")
        if kind == 1:
            post_wallet_entry(business=tenant.business, environment="sandbox", amount=Decimal("1"))
            return None
        return api.bulk(batch(group(drop(f"N-{n}"))), key)

    responses = run_concurrently(3 * RETURNS, work)

    assert all(r is None or r.status_code == 200 for r in responses)
    assert Counter(
        Drop.objects.filter(client_order_id__in=returning).values_list("status", flat=True)
    ) == {DropStatus.RETURNED: RETURNS}
    fees = LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE)
    assert [f.owed_change - f.amount for f in fees] == [PRICE] * RETURNS  # each fee whole
    accepted = sum(outcomes(r).count("accepted") for r in responses[2::3])
    wallet = wallet_of(tenant)
    # Every cent: 6 top-ups of 1.00 in, 6 fees of 2.00 and the accepted drops out.
    assert (
        wallet.balance - wallet.owed == RETURNS * Decimal("1") - RETURNS * PRICE - accepted * PRICE
    )
    assert_ledger_consistent(tenant)  # balance and owed each the sum of entries, never < 0
    entries_in_order = list(LedgerEntry.objects.filter(wallet=wallet).order_by("id"))
    for before, entry in zip(entries_in_order, entries_in_order[1:], strict=False):
        if entry.kind == EntryKind.ORDER_DEBIT:
            assert before.owed_after == 0, "a drop was taken while the wallet owed money"


def test_a_return_racing_a_cancel_and_a_new_batch_of_its_id_never_deadlocks(
    open_for_business, make_tenant
):
    """A cancel and a batch lock the account, then the drop (its row, or its id in the unique
    index); a return must take them in the same order, or two of them wait for each other."""
    tenant = make_tenant(
        base_fee="2.00", per_km_fee="0.50", included_km="50", sandbox_balance="100.00"
    )
    api, key = Api(), tenant.sandbox_key
    returning = [f"R-{i}" for i in range(RETURNS)]
    place(api, key, *returning)
    advance(api, key, *returning, to="RETURNING")

    def work(api, i):
        kind, n = i % 3, i // 3
        if kind == 0:
            return advance(api, key, returning[n], to="RETURNED")
        if kind == 1:
            return api.post("/orders/cancel", {"identifiers": [returning[n]]}, key)
        return api.bulk(batch(group(drop(returning[n]))), key)

    responses = run_concurrently(3 * RETURNS, work)

    assert [r.status_code for r in responses] == [200] * (3 * RETURNS)
    new_drops_cancelled = 0
    for n in range(RETURNS):
        returned, cancelled, again = responses[3 * n : 3 * n + 3]
        back = entries(returned)[returning[n]]
        assert "error" not in back and back["status"] == "RETURNED"
        cancel = entries(cancelled)[returning[n]]
        if "error" in cancel:  # it met the drop returning or returned: refused
            assert cancel["error"]["code"] == "NOT_CANCELLABLE"
        else:  # it came after the new batch, whose drop took the id: that one was cancelled
            assert cancel["status"] == "CANCELLED" and cancel["drop_id"] != back["drop_id"]
            assert outcomes(again) == ["accepted"]
            new_drops_cancelled += 1
        assert outcomes(again) in (["accepted"], ["DUPLICATE_CLIENT_ORDER_ID"])
    assert LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE).count() == RETURNS
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == new_drops_cancelled
    assert_ledger_consistent(tenant)
