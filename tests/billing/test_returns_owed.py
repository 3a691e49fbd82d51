"""Return fees and what a wallet owes (docs/contract.md §19): RETURN_FEE on RETURNED, a charge
after creation never takes a wallet below zero, what it cannot cover is owed, the next credit
pays it first, and balance and owed are each the sum of the ledger's entries."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F, Sum

from billing.models import EntryKind, Invoice, InvoiceLine, LedgerEntry, PricingPlan, Wallet
from billing.services import post_wallet_entry, sandbox_top_up
from tests.billing.helpers import assert_ledger_consistent, outcomes, wallet_of
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, cancel, entries, place

RETURNED = "RETURNED"


@pytest.fixture
def shop(open_for_business, make_tenant):
    """Every drop costs exactly 2.05 (the distance is inside the included km)."""

    def make(balance: str = "100.00", **options):
        return make_tenant(
            base_fee="2.05", per_km_fee="0.50", included_km="50", sandbox_balance=balance, **options
        )

    return make


def set_return_fee(tenant, percent: str) -> None:
    PricingPlan.objects.filter(pk=tenant.business.pricing_plan_id).update(
        return_fee_percent=Decimal(percent)
    )


def wallet_answer(api, tenant) -> dict:
    response = api.get("/account", tenant.sandbox_key)
    assert response.status_code == 200, response.content
    return response.json()["data"]["wallet"]


def return_all(api, tenant, *client_order_ids: str) -> None:
    answer = entries(advance(api, tenant.sandbox_key, *client_order_ids, to=RETURNED))
    assert [answer[i]["status"] for i in client_order_ids] == [RETURNED] * len(client_order_ids)


def test_a_return_is_charged_half_its_price_rounded_half_up_with_the_drop(shop, api):
    tenant = shop()
    ids = place(api, tenant.sandbox_key, "R-1")

    return_all(api, tenant, "R-1")

    fee = LedgerEntry.objects.get(kind=EntryKind.RETURN_FEE)
    # 50 % of 2.05 is 1.025: half-up to cents is 1.03.
    assert (fee.amount, fee.owed_change, str(fee.drop_id)) == (
        Decimal("-1.03"),
        Decimal("0.00"),
        ids["R-1"],
    )
    assert fee.note == "Returned"
    assert wallet_answer(api, tenant) == {"balance": "96.92", "owed": "0.00"}
    assert assert_ledger_consistent(tenant) == Decimal("96.92")


def test_the_plan_sets_the_share_and_a_free_return_writes_no_entry(shop, api):
    tenant = shop()
    place(api, tenant.sandbox_key, "R-1", "R-2")
    set_return_fee(tenant, "100")
    return_all(api, tenant, "R-1")
    set_return_fee(tenant, "0")
    return_all(api, tenant, "R-2")

    fees = LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE)
    assert [f.amount for f in fees] == [Decimal("-2.05")]
    assert assert_ledger_consistent(tenant) == Decimal("100.00") - 2 * Decimal("2.05") - Decimal(
        "2.05"
    )


def test_a_fee_larger_than_the_balance_takes_what_it_covers_and_owes_the_rest(shop, api):
    tenant = shop(balance="5.00")
    place(api, tenant.sandbox_key, "R-1", "R-2")  # 4.10 spent: 0.90 left
    set_return_fee(tenant, "100")

    return_all(api, tenant, "R-1", "R-2")

    fees = list(LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE).order_by("id"))
    assert [(f.amount, f.owed_change, f.balance_after, f.owed_after) for f in fees] == [
        (Decimal("-0.90"), Decimal("1.15"), Decimal("0.00"), Decimal("1.15")),
        (Decimal("0.00"), Decimal("2.05"), Decimal("0.00"), Decimal("3.20")),
    ]
    # Every cent of both fees is in the ledger: taken from the balance, or owed.
    charged = sum((f.owed_change - f.amount for f in fees), Decimal("0"))
    assert charged == 2 * Decimal("2.05")
    assert wallet_answer(api, tenant) == {"balance": "0.00", "owed": "3.20"}
    wallet = wallet_of(tenant)
    sums = wallet.entries.aggregate(balance=Sum("amount"), owed=Sum("owed_change"))
    assert (sums["balance"], sums["owed"]) == (wallet.balance, wallet.owed)
    assert (wallet.balance, wallet.owed) == (Decimal("0.00"), Decimal("3.20"))
    assert_ledger_consistent(tenant)


def test_the_next_top_ups_pay_what_is_owed_first(shop, api):
    tenant = shop(balance="2.05")
    place(api, tenant.sandbox_key, "R-1")  # the wallet is empty now
    return_all(api, tenant, "R-1")  # owes 1.03
    assert wallet_answer(api, tenant) == {"balance": "0.00", "owed": "1.03"}

    sandbox_top_up(business=tenant.business, amount=Decimal("0.50"))  # pays 0.50 of it
    assert wallet_answer(api, tenant) == {"balance": "0.00", "owed": "0.53"}
    post_wallet_entry(business=tenant.business, environment="sandbox", amount=Decimal("10.00"))

    assert wallet_answer(api, tenant) == {"balance": "9.47", "owed": "0.00"}
    tail = list(LedgerEntry.objects.order_by("id"))[-4:]
    assert [(e.kind, e.amount, e.owed_change) for e in tail] == [
        (EntryKind.TOP_UP, Decimal("0.50"), Decimal("0.00")),
        (EntryKind.OWED_PAYMENT, Decimal("-0.50"), Decimal("-0.50")),
        (EntryKind.TOP_UP, Decimal("10.00"), Decimal("0.00")),
        (EntryKind.OWED_PAYMENT, Decimal("-0.53"), Decimal("-0.53")),
    ]
    assert assert_ledger_consistent(tenant) == Decimal("9.47")
    assert wallet_of(tenant).owed == 0


def test_a_refund_while_owing_pays_what_is_owed_first(shop, api):
    tenant = shop(balance="4.10")
    place(api, tenant.sandbox_key, "R-1", "C-1")  # empty
    return_all(api, tenant, "R-1")  # owes 1.03

    assert "error" not in entries(cancel(api, tenant.sandbox_key, "C-1"))["C-1"]

    assert wallet_answer(api, tenant) == {"balance": "1.02", "owed": "0.00"}
    assert LedgerEntry.objects.filter(kind=EntryKind.OWED_PAYMENT).get().amount == Decimal("-1.03")
    assert_ledger_consistent(tenant)


def test_an_invoiced_account_gets_the_return_fee_as_an_invoice_line(shop, api):
    tenant = shop(balance="0.00", billing="invoiced")
    ids = place(api, tenant.sandbox_key, "R-1")

    return_all(api, tenant, "R-1")

    invoice = Invoice.objects.get(business=tenant.business, environment="sandbox")
    lines = list(InvoiceLine.objects.filter(invoice=invoice).order_by("id"))
    assert [(str(li.drop_id), li.amount, li.description) for li in lines] == [
        (ids["R-1"], Decimal("2.05"), "Delivery"),
        (ids["R-1"], Decimal("1.03"), "Return fee"),
    ]
    assert invoice.accrued == Decimal("3.08")
    assert not LedgerEntry.objects.filter(kind=EntryKind.RETURN_FEE).exists()


def test_the_database_refuses_a_negative_owed(shop):
    tenant = shop()
    wallet = wallet_of(tenant)
    with pytest.raises(IntegrityError), transaction.atomic():
        Wallet.objects.filter(pk=wallet.pk).update(owed=Decimal("-0.01"))
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.filter(wallet=wallet).update(owed_after=F("owed_after") - 1)


def test_the_dashboard_wallet_shows_what_is_owed_and_a_top_up_says_what_it_paid(shop, api, member):
    tenant = shop(balance="2.05")
    place(api, tenant.sandbox_key, "R-1")
    return_all(api, tenant, "R-1")  # owes 1.03
    web = member(tenant.business)

    page = web.get("/wallet/?environment=sandbox").content.decode()
    assert 'data-testid="owed"><strong>1.03 USD</strong>' in page
    assert "owed +1.03 (now 1.03)" in page  # the fee's ledger line

    after = web.post("/wallet/sandbox-top-up/", {"amount": "5.00"}, follow=True)
    text = after.content.decode()
    assert "Added 5.00 to the sandbox wallet (3.97, after paying 1.03 owed)." in text
    assert 'data-testid="owed"' not in text
    assert wallet_answer(api, tenant) == {"balance": "3.97", "owed": "0.00"}


OWED_MESSAGE = (
    "The wallet owes money (a return fee its balance did not cover): "
    "a top-up pays it first, then new drops are taken again."
)


def test_while_anything_is_owed_new_drops_and_quotes_are_insufficient_balance(shop, api):
    tenant = shop(balance="3.00")
    place(api, tenant.sandbox_key, "R-1")  # 0.95 left
    return_all(api, tenant, "R-1")  # the fee 1.03 takes 0.95 and owes 0.08
    one_more = batch(group(drop("N-1")))

    refused = api.bulk(one_more, tenant.sandbox_key)
    quoted = api.post("/orders/quote", one_more, tenant.sandbox_key)

    assert outcomes(refused) == ["INSUFFICIENT_BALANCE"]
    assert refused.json()["data"]["orders"][0]["message"] == OWED_MESSAGE
    assert quoted.status_code == 200, quoted.content
    assert quoted.json()["data"]["orders"][0]["failure_reason"] == "INSUFFICIENT_BALANCE"
    assert quoted.json()["data"]["orders"][0]["message"] == OWED_MESSAGE
    sandbox_top_up(business=tenant.business, amount=Decimal("0.08"))  # owes nothing, holds 0.00
    plain = api.bulk(batch(group(drop("N-2"))), tenant.sandbox_key)
    assert plain.json()["data"]["orders"][0]["message"] == (
        "The wallet balance does not cover this drop's price."
    )
    sandbox_top_up(business=tenant.business, amount=Decimal("2.05"))
    assert outcomes(api.bulk(batch(group(drop("N-3"))), tenant.sandbox_key)) == ["accepted"]
    assert assert_ledger_consistent(tenant) == Decimal("0.00")


def test_an_invoiced_account_never_owes_and_keeps_taking_drops(shop, api):
    tenant = shop(balance="0.00", billing="invoiced")
    place(api, tenant.sandbox_key, "R-1")
    return_all(api, tenant, "R-1")

    assert outcomes(api.bulk(batch(group(drop("N-1"))), tenant.sandbox_key)) == ["accepted"]


def test_owing_refuses_even_a_drop_the_balance_would_cover(shop, api):
    tenant = shop(balance="2.05")
    place(api, tenant.sandbox_key, "R-1")
    return_all(api, tenant, "R-1")  # owes 1.03, holds 0.00
    PricingPlan.objects.filter(pk=tenant.business.pricing_plan_id).update(
        base_fee=Decimal("0.00"), per_km_fee=Decimal("0.00")
    )  # a free drop: 0.00 is covered

    assert outcomes(api.bulk(batch(group(drop("N-1"))), tenant.sandbox_key)) == [
        "INSUFFICIENT_BALANCE"
    ]
    sandbox_top_up(business=tenant.business, amount=Decimal("1.03"))
    assert outcomes(api.bulk(batch(group(drop("N-2"))), tenant.sandbox_key)) == ["accepted"]
