"""Credits to the wallet, payouts and deliveries racing on one COD account, on PostgreSQL with
real threads (docs/contract.md §18): owed never goes below zero and no cent is lost."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import Sum

from billing.cod import CodExceedsOwed, remit_cod
from billing.models import CodEntry, CodKind, EntryKind, LedgerEntry
from events.models import Event, EventType
from tests.billing.cod_helpers import assert_cod_consistent, owed_of, place_cod
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.fixtures import Api
from tests.helpers import run_concurrently
from tests.tracking.helpers import advance, entries

pytestmark = pytest.mark.django_db(transaction=True)

EACH = Decimal("15.00")


def total(kind: str) -> Decimal:
    return CodEntry.objects.filter(kind=kind).aggregate(t=Sum("amount"))["t"] or Decimal("0.00")


def test_credits_payouts_and_deliveries_at_once_never_overdraw_and_lose_no_cent(
    open_for_business, make_tenant
):
    tenant = make_tenant(sandbox_balance="50.00")
    key = tenant.sandbox_key
    delivered = {f"D-{i}": "10.00" for i in range(10)}
    racing = {f"R-{i}": "5.00" for i in range(4)}
    place_cod(Api(), key, {**delivered, **racing})
    entries(advance(Api(), key, *delivered, to="DELIVERED"))  # 100.00 owed
    entries(advance(Api(), key, *racing, to="PICKED_UP"))
    wallet_before = wallet_of(tenant).balance

    def work(api, i):
        kind, n = i % 3, i // 3
        if kind == 0:
            return api.post("/account/cod/credit-wallet", {"amount": str(EACH)}, key).status_code
        if kind == 1:
            try:
                remit_cod(
                    business=tenant.business, environment="sandbox", amount=EACH, reference=f"T-{n}"
                )
            except CodExceedsOwed:
                return 409
            return 200
        return advance(api, key, f"R-{n}", to="DELIVERED").status_code

    # 4 credits and 4 payouts of 15.00 (120.00 asked) against 100.00, and 4 deliveries of 5.00.
    answers = run_concurrently(12, work)

    assert set(answers) <= {200, 409}
    assert answers[2::3] == [200] * 4
    collected, remitted = total(CodKind.COLLECTED), -total(CodKind.REMITTED)
    credited = -total(CodKind.CREDITED_TO_WALLET)
    assert collected == Decimal("120.00")
    moved = answers[0::3].count(200) + answers[1::3].count(200)
    assert remitted + credited == moved * EACH <= collected
    assert moved == 8  # 120.00 was there once the deliveries were in: every request fitted
    assert owed_of(tenant) == collected - remitted - credited >= 0
    assert_cod_consistent()  # owed the sum of entries, each owed_after >= 0
    # The wallet got exactly what was credited, as TOP_UPs, with an event each.
    top_ups = LedgerEntry.objects.filter(kind=EntryKind.TOP_UP, note="From cash on delivery")
    assert top_ups.aggregate(t=Sum("amount"))["t"] == credited
    assert assert_ledger_consistent(tenant) == wallet_before + credited
    assert Event.objects.filter(type=EventType.COD_CREDITED).count() == answers[0::3].count(200)
    assert Event.objects.filter(type=EventType.COD_REMITTED).count() == answers[1::3].count(200)


def test_more_asked_at_once_than_is_owed_moves_only_what_is_owed(open_for_business, make_tenant):
    tenant = make_tenant(sandbox_balance="50.00")
    key = tenant.sandbox_key
    amounts = {f"D-{i}": "10.00" for i in range(5)}
    place_cod(Api(), key, amounts)
    entries(advance(Api(), key, *amounts, to="DELIVERED"))  # 50.00 owed
    wallet_before = wallet_of(tenant).balance

    def work(api, i):
        if i % 2:
            return api.post("/account/cod/credit-wallet", {"amount": "15.00"}, key).status_code
        try:
            remit_cod(business=tenant.business, environment="sandbox", amount=EACH, reference="T")
        except CodExceedsOwed:
            return 409
        return 200

    answers = run_concurrently(8, work)  # 120.00 asked of 50.00

    assert sorted(answers) == [200] * 3 + [409] * 5  # three of 15.00 fit in 50.00
    assert owed_of(tenant) == Decimal("5.00")
    assert -total(CodKind.REMITTED) - total(CodKind.CREDITED_TO_WALLET) == Decimal("45.00")
    assert_cod_consistent()
    credited = -total(CodKind.CREDITED_TO_WALLET)
    assert assert_ledger_consistent(tenant) == wallet_before + credited
