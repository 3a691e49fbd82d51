"""The money of an edit (docs/contract.md §17): a location that moves the price settles the
difference in the edit's own transaction, to the cent, and never more than once."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from billing.models import EntryKind, Invoice, InvoiceLine, LedgerEntry
from billing.services import Movement, append_entries, lock_account
from orders.models import Drop
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.factories import HOME, batch, drop, group
from tests.tracking.helpers import cancel, entries, place
from tests.tracking.test_edits import CENTRAL_MARKET, assert_rejected, edited, patch, updates_of

AIRPORT = {"lat": 11.5466, "long": 104.8441}  # in the area, far from the shop
AIRPORT_ADDRESS = {
    "complete_address": "Phnom Penh International Airport",
    "city": "Phnom Penh",
    "country": "KH",
}
ROYAL_PALACE = {"lat": 11.5637, "long": 104.9311}  # nearer the shop than the default drop


def price_at(api, key: str, where: dict) -> Decimal:
    """What a new drop at `where` costs now, as POST /orders/quote prices it."""
    response = api.post("/orders/quote", batch(group(drop("Q-1", **where))), key)
    assert response.status_code == 200, response.content
    [quoted] = response.json()["data"]["orders"]
    return Decimal(quoted["price"])


def adjustments_of(drop_id) -> list[Decimal]:
    return list(
        LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.ADJUSTMENT)
        .order_by("id")
        .values_list("amount", flat=True)
    )


@pytest.mark.parametrize("where", [AIRPORT, ROYAL_PALACE], ids=["farther", "nearer"])
def test_a_new_location_settles_the_price_difference_as_one_adjustment(
    open_for_business, alice, api, where
):
    key = alice.sandbox_key
    drop_id = place(api, key, "M-1")["M-1"]
    charged = Drop.objects.get(pk=drop_id).price
    start = wallet_of(alice).balance
    new_price = price_at(api, key, where)
    assert new_price != charged

    entry = edited(patch(api, drop_id, {"dropoff": where}, key))

    assert Decimal(entry["price"]) == new_price == Drop.objects.get(pk=drop_id).price
    assert (entry["dropoff"]["lat"], entry["dropoff"]["long"]) == (where["lat"], where["long"])
    assert adjustments_of(drop_id) == [charged - new_price]
    assert assert_ledger_consistent(alice) == start - (new_price - charged)
    [event] = updates_of(drop_id)
    assert event["changed"] == ["dropoff.lat", "dropoff.long", "price"]
    assert event["price"] == entry["price"]


def test_a_cancel_after_an_edit_gives_back_everything_charged(open_for_business, alice, api):
    key = alice.sandbox_key
    start = wallet_of(alice).balance
    drop_id = place(api, key, "M-1")["M-1"]
    edited(patch(api, drop_id, {"dropoff": AIRPORT}, key))

    entries(cancel(api, key, "M-1"))

    [refund] = LedgerEntry.objects.filter(drop_id=drop_id, kind=EntryKind.REFUND)
    assert refund.amount == Drop.objects.get(pk=drop_id).price
    assert assert_ledger_consistent(alice) == start


def test_an_address_alone_is_geocoded_and_priced_where_it_resolves(open_for_business, alice, api):
    key = alice.sandbox_key
    drop_id = place(api, key, "M-1")["M-1"]  # at the Central Market's pin, no address
    charged = Drop.objects.get(pk=drop_id).price

    # The Central Market's address resolves to the pin the drop has: only the address changes.
    entry = edited(patch(api, drop_id, {"dropoff": {"address": CENTRAL_MARKET}}, key))
    assert entry["dropoff"]["address"] == CENTRAL_MARKET
    assert entry["dropoff"]["resolved_pin"] == {"lat": HOME["lat"], "long": HOME["long"]}
    assert Decimal(entry["price"]) == charged

    entry = edited(patch(api, drop_id, {"dropoff": {"address": AIRPORT_ADDRESS}}, key))
    assert entry["dropoff"]["resolved_pin"] == AIRPORT
    assert (entry["dropoff"]["lat"], entry["dropoff"]["long"]) == (AIRPORT["lat"], AIRPORT["long"])
    price = Decimal(entry["price"])
    assert price == price_at(api, key, AIRPORT) > charged
    assert adjustments_of(drop_id) == [charged - price]
    assert [e["changed"] for e in updates_of(drop_id)] == [
        ["dropoff.address"],
        ["dropoff.lat", "dropoff.long", "dropoff.address", "price"],
    ]


def test_a_debit_the_wallet_cannot_cover_is_insufficient_balance(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="10.00")
    key = tenant.sandbox_key
    drop_id = place(api, key, "M-1")["M-1"]
    charged = Drop.objects.get(pk=drop_id).price
    # Spend all but a cent less than the difference the edit would need.
    difference = price_at(api, key, AIRPORT) - charged
    wallet = wallet_of(tenant)
    with transaction.atomic():
        locked = lock_account(business=tenant.business, environment="sandbox")
        spend = Movement(EntryKind.ADJUSTMENT, -(wallet.balance - difference + Decimal("0.01")))
        append_entries(wallet=locked, movements=[spend], at=timezone.now())

    error = assert_rejected(
        patch(api, drop_id, {"dropoff": AIRPORT, "notes": "x"}, key), "INSUFFICIENT_BALANCE"
    )

    assert money_text(difference) in error["message"]
    after = Drop.objects.get(pk=drop_id)
    assert (after.price, after.notes) == (charged, None)
    assert adjustments_of(drop_id) == []
    assert assert_ledger_consistent(tenant) == difference - Decimal("0.01")
    assert updates_of(drop_id) == []


def test_a_wallet_that_owes_money_cannot_pay_a_higher_price_but_gets_a_lower_one(
    open_for_business, alice, api
):
    key = alice.sandbox_key
    far = place(api, key, "M-1", **AIRPORT)["M-1"]
    near = place(api, key, "M-2")["M-2"]
    back = Drop.objects.get(pk=far).price - price_at(api, key, ROYAL_PALACE)
    wallet = wallet_of(alice)
    with transaction.atomic():  # a return fee larger than the balance: the rest is owed
        locked = lock_account(business=alice.business, environment="sandbox")
        fee = Movement(EntryKind.RETURN_FEE, -(wallet.balance + 5), may_owe=True)
        append_entries(wallet=locked, movements=[fee], at=timezone.now())
    assert wallet_of(alice).owed == Decimal("5.00")

    assert_rejected(patch(api, near, {"dropoff": AIRPORT}, key), "INSUFFICIENT_BALANCE")
    edited(patch(api, far, {"dropoff": ROYAL_PALACE}, key))

    # The credit pays what is owed first (billing.services.append_entries).
    assert adjustments_of(far) == [back]
    wallet = wallet_of(alice)
    assert wallet.owed == max(Decimal("0.00"), Decimal("5.00") - back)
    assert_ledger_consistent(alice)


def test_an_invoiced_account_gets_a_line_of_the_difference(open_for_business, make_tenant, api):
    tenant = make_tenant(billing="invoiced")
    key = tenant.sandbox_key
    drop_id = place(api, key, "M-1")["M-1"]
    charged = Drop.objects.get(pk=drop_id).price
    new_price = price_at(api, key, AIRPORT)

    edited(patch(api, drop_id, {"dropoff": AIRPORT}, key))

    lines = InvoiceLine.objects.filter(drop_id=drop_id).order_by("id")
    assert [line.amount for line in lines] == [charged, new_price - charged]
    invoice = Invoice.objects.get(business=tenant.business, environment="sandbox")
    assert invoice.accrued == new_price == sum(line.amount for line in invoice.lines.all())
    assert not LedgerEntry.objects.filter(drop_id=drop_id).exists()


def money_text(amount: Decimal) -> str:
    return f"{amount:.2f}"
