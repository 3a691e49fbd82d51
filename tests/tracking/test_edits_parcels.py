"""Editing a drop's parcel and cash on delivery (docs/contract.md §17, §18): only in SCHEDULED
or PENDING, judged by rules 8 and 9 as at creation (the parcel against its order's vehicle and
load), and a new COD fee settled in the edit's own transaction, to the cent."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from billing.models import EntryKind, InvoiceLine, LedgerEntry
from billing.services import Movement, append_entries, lock_account
from events.models import Event
from orders.models import Drop, DropStatus
from tests.billing.helpers import assert_ledger_consistent, wallet_of
from tests.factories import batch, drop, group
from tests.fixtures import Api
from tests.helpers import assert_error
from tests.tracking.helpers import cancel, entries
from tests.tracking.test_edits import (
    AIRPORT,
    assert_rejected,
    edited,
    patch,
    put_in,
    updates_of,
    window_from,
)
from tests.tracking.test_edits_concurrency import holding, patch_waiting
from tests.tracking.test_edits_money import adjustments_of, price_at
from tracking.edit_inputs import parse_drop_change
from tracking.edits import edit_drop

S = DropStatus
BOX = {"size": "M", "weight_kg": 5, "description": "Shoes", "value": "40"}


def place_group(api, key: str, *drops: dict, vehicle: str | None = None) -> dict[str, str]:
    """One pickup group of these drops, all accepted; client_order_id → drop id."""
    body = batch({**group(*drops), **({"vehicle": vehicle} if vehicle else {})})
    response = api.bulk(body, key)
    orders = response.json()["data"]["orders"]
    assert [o["status"] for o in orders] == ["accepted"] * len(drops), response.content
    return {o["client_order_id"]: o["drop_id"] for o in orders}


def carrying(client_order_id: str, **fields) -> dict:
    return {**drop(client_order_id), **fields}


def parcel_of(drop_id) -> tuple:
    row = Drop.objects.get(pk=drop_id)
    return (row.parcel_size, row.parcel_weight_kg, row.parcel_description, row.parcel_value)


def money(amount: str) -> Decimal:
    return Decimal(amount)


# --- The parcel ----------------------------------------------------------------------------


def test_a_new_parcel_before_pickup_is_stored_shown_and_told(open_for_business, alice, api):
    key = alice.sandbox_key
    drop_id = put_in(api, key, "P-1", S.PENDING)
    price = Drop.objects.get(pk=drop_id).price

    entry = edited(patch(api, drop_id, {"parcel": BOX}, key))

    assert entry["parcel"] == {
        "size": "M",
        "weight_kg": 5.0,
        "description": "Shoes",
        "value": "40.00",
    }
    assert parcel_of(drop_id) == ("M", money("5"), "Shoes", money("40.00"))
    assert [e["changed"] for e in updates_of(drop_id)] == [["parcel"]]
    # What is carried does not move the price: the vehicle is the order's.
    assert Decimal(entry["price"]) == price == Drop.objects.get(pk=drop_id).price
    assert adjustments_of(drop_id) == []

    # null sets the contract's default parcel back (S, 1 kg, nothing said).
    entry = edited(patch(api, drop_id, {"parcel": None}, alice.sandbox_key))

    assert entry["parcel"] == {"size": "S", "weight_kg": 1.0, "description": None, "value": None}
    assert parcel_of(drop_id) == ("S", money("1"), None, None)
    assert [e["changed"] for e in updates_of(drop_id)] == [["parcel"], ["parcel"]]


@pytest.mark.parametrize(
    ("parcel", "problem"),
    [
        ({"size": "L"}, "A size L parcel is larger than a motorbike takes (up to M)."),
        ({"weight_kg": 20.5}, "A parcel of 20.5 kg is over a motorbike's 20 kg."),
    ],
    ids=["size", "weight"],
)
def test_a_parcel_the_vehicle_cannot_take_is_parcel_too_large(
    open_for_business, alice, api, parcel, problem
):
    drop_id = put_in(api, alice.sandbox_key, "P-1", S.PENDING)

    error = assert_rejected(
        patch(api, drop_id, {"parcel": parcel}, alice.sandbox_key), "PARCEL_TOO_LARGE"
    )

    assert error["message"] == problem
    assert [d["field"] for d in error["details"]] == ["parcel"]
    assert parcel_of(drop_id) == ("S", money("1"), None, None)
    assert updates_of(drop_id) == []


def test_a_bigger_vehicle_takes_what_a_motorbike_cannot(open_for_business, alice, api):
    ids = place_group(api, alice.sandbox_key, drop("V-1"), vehicle="van")

    entry = edited(
        patch(api, ids["V-1"], {"parcel": {"size": "XL", "weight_kg": 150}}, alice.sandbox_key)
    )

    assert entry["parcel"]["size"] == "XL"


def test_a_parcel_counts_against_the_load_of_its_order_other_active_drops(
    open_for_business, alice, api
):
    """A motorbike carries 30 kg an order. Beside the edited drop: 15 + 10 kg said, a drop
    that says nothing (not weighed, as at creation), and another order's 20 kg (not its)."""
    key = alice.sandbox_key
    ids = place_group(
        api,
        key,
        carrying("HEAVY", parcel={"weight_kg": 15}),
        carrying("MID", parcel={"weight_kg": 10}),
        drop("UNSAID"),
        carrying("EDITED", parcel={"weight_kg": 4}),
    )
    place_group(api, key, carrying("ELSEWHERE", parcel={"weight_kg": 20}))
    edited_id = ids["EDITED"]

    error = assert_rejected(
        patch(api, edited_id, {"parcel": {"weight_kg": 5.5}}, key), "PARCEL_TOO_LARGE"
    )

    assert error["message"] == (
        "With this parcel the pickup's accepted load would be 30.5 kg, over a motorbike's 30 kg."
    )
    assert parcel_of(edited_id)[1] == money("4")
    # Exactly the load, the drop's own 4 kg not counted twice: it goes.
    edited(patch(api, edited_id, {"parcel": {"weight_kg": 5}}, key))
    assert parcel_of(edited_id)[1] == money("5")
    # A cancelled drop carries nothing any more.
    entries(cancel(api, key, "HEAVY"))
    edited(patch(api, edited_id, {"parcel": {"weight_kg": 20}}, key))
    assert parcel_of(edited_id)[1] == money("20")


# --- The cash on delivery ------------------------------------------------------------------


@pytest.mark.parametrize("amount", ["500.01", "0", "0.00", "12.345", 12.5, "-5"], ids=str)
def test_an_amount_not_allowed_is_invalid_cod(open_for_business, alice, api, amount):
    drop_id = put_in(api, alice.sandbox_key, "C-1", S.PENDING)

    error = assert_rejected(
        patch(api, drop_id, {"cod": {"amount": amount}}, alice.sandbox_key), "INVALID_COD"
    )

    assert "cod.amount" in error["message"]
    assert [d["field"] for d in error["details"]] == ["cod"]
    assert Drop.objects.get(pk=drop_id).cod_amount is None
    assert updates_of(drop_id) == []


def test_an_amount_as_a_number_is_invalid_cod_even_when_it_equals_the_stored_one(
    open_for_business, alice, api
):
    ids = place_group(api, alice.sandbox_key, carrying("CASH", cod={"amount": "12.50"}))

    assert_rejected(
        patch(api, ids["CASH"], {"cod": {"amount": 12.5}}, alice.sandbox_key), "INVALID_COD"
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"cod": "5.00"}, ["cod"]),
        ({"cod": {}}, ["cod"]),
        ({"cod": {"amount": "5.00", "currency": "USD"}}, ["cod"]),
        ({"parcel": {"weight_kg": 0}}, ["parcel.weight_kg"]),
        ({"parcel": {"size": "M", "colour": "red"}}, ["parcel"]),
    ],
)
def test_a_parcel_or_cod_of_the_wrong_shape_is_400(open_for_business, alice, api, body, fields):
    drop_id = put_in(api, alice.sandbox_key, "C-1", S.PENDING)

    error = assert_error(patch(api, drop_id, body, alice.sandbox_key), 400, "VALIDATION_ERROR")

    assert [d["field"] for d in error["details"]] == fields
    assert Drop.objects.get(pk=drop_id).updated_at == Drop.objects.get(pk=drop_id).created_at


def test_a_cod_change_settles_its_fee_both_ways_to_the_cent(open_for_business, alice, api):
    """The plan's 1.00 % of the amount, half-up: added, raised, lowered and removed, each
    difference one ADJUSTMENT naming the drop, the wallet's ledger summing to what is left."""
    key = alice.sandbox_key
    start = wallet_of(alice).balance
    drop_id = put_in(api, key, "C-1", S.PENDING)
    delivery = Drop.objects.get(pk=drop_id).price

    steps = [({"amount": "250.00"}, "2.50"), ({"amount": "12.50"}, "0.13"), (None, "0.00")]
    for cod, fee in steps:
        entry = edited(patch(api, drop_id, {"cod": cod}, key))
        assert entry["price_breakdown"] == {"delivery": str(delivery), "cod_fee": fee}
        assert entry["price"] == str(delivery + money(fee))
        stored = Drop.objects.get(pk=drop_id)
        assert (stored.cod_fee, stored.price) == (money(fee), delivery + money(fee))
        assert stored.cod_amount == (None if cod is None else money(cod["amount"]))
    assert entry["cod"] is None

    assert adjustments_of(drop_id) == [money("-2.50"), money("2.37"), money("0.13")]
    assert assert_ledger_consistent(alice) == start - delivery
    assert [e["changed"] for e in updates_of(drop_id)] == [["cod", "price"]] * 3


def test_a_move_and_a_new_amount_together_price_as_a_new_drop(open_for_business, alice, api):
    key = alice.sandbox_key
    drop_id = put_in(api, key, "C-1", S.PENDING)
    charged = Drop.objects.get(pk=drop_id).price
    moved = price_at(api, key, AIRPORT)

    entry = edited(patch(api, drop_id, {"dropoff": AIRPORT, "cod": {"amount": "100"}}, key))

    assert entry["price_breakdown"] == {"delivery": str(moved), "cod_fee": "1.00"}
    assert adjustments_of(drop_id) == [charged - moved - money("1.00")]
    assert updates_of(drop_id)[0]["changed"] == ["dropoff.lat", "dropoff.long", "cod", "price"]


def test_a_cod_fee_the_wallet_cannot_cover_is_insufficient_balance(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="10.00")
    key = tenant.sandbox_key
    drop_id = put_in(api, key, "C-1", S.PENDING)
    charged = Drop.objects.get(pk=drop_id).price
    with transaction.atomic():  # leave 4.99: a 5.00 fee (of 500.00) is a cent too much
        locked = lock_account(business=tenant.business, environment="sandbox")
        spend = Movement(EntryKind.ADJUSTMENT, -(locked.balance - money("4.99")))
        append_entries(wallet=locked, movements=[spend], at=timezone.now())

    body = {"cod": {"amount": "500.00"}, "notes": "Cash"}
    error = assert_rejected(patch(api, drop_id, body, key), "INSUFFICIENT_BALANCE")

    assert "5.00" in error["message"]
    assert [d["field"] for d in error["details"]] == ["cod"]
    after = Drop.objects.get(pk=drop_id)
    assert (after.price, after.cod_amount, after.cod_fee, after.notes) == (
        charged,
        None,
        money("0.00"),
        None,
    )
    assert adjustments_of(drop_id) == []
    assert assert_ledger_consistent(tenant) == money("4.99")
    # 499.00 is a 4.99 fee: exactly what is left.
    edited(patch(api, drop_id, {"cod": {"amount": "499.00"}}, key))
    assert assert_ledger_consistent(tenant) == money("0.00")


def test_an_invoiced_account_gets_a_line_of_the_fee(open_for_business, make_tenant, api):
    tenant = make_tenant(billing="invoiced")
    drop_id = put_in(api, tenant.sandbox_key, "C-1", S.PENDING)

    edited(patch(api, drop_id, {"cod": {"amount": "80.00"}}, tenant.sandbox_key))

    lines = InvoiceLine.objects.filter(drop_id=drop_id).order_by("id")
    assert [line.amount for line in lines][1:] == [money("0.80")]
    assert not LedgerEntry.objects.filter(drop_id=drop_id).exists()


# --- When, what first, and what is no change -----------------------------------------------


@pytest.mark.parametrize("status", [S.ASSIGNED, S.PICKED_UP])
@pytest.mark.parametrize(
    "body", [{"parcel": BOX}, {"cod": {"amount": "5.00"}}], ids=["parcel", "cod"]
)
def test_parcel_and_cod_are_not_editable_after_pending(open_for_business, alice, api, status, body):
    drop_id = put_in(api, alice.sandbox_key, "C-1", status)

    error = assert_error(patch(api, drop_id, body, alice.sandbox_key), 409, "NOT_EDITABLE")

    field = next(iter(body))
    assert error["message"] == (
        f"{field} can change only while the drop is SCHEDULED or PENDING; it is {status}."
    )
    assert [d["field"] for d in error["details"]] == list(body)
    assert (parcel_of(drop_id), Drop.objects.get(pk=drop_id).cod_amount) == (
        ("S", money("1"), None, None),
        None,
    )


def test_the_rules_are_judged_in_the_contracts_order(open_for_business, alice, api):
    """Rule 7 (the window) before 8 (the parcel) before 9 (the cash)."""
    key = alice.sandbox_key
    drop_id = put_in(api, key, "C-1", S.PENDING)
    too_big, bad_cash = {"size": "XL"}, {"amount": "0"}
    past = window_from(timezone.now() - timedelta(hours=5))

    for body, reason in [
        ({"dropoff_window": past, "parcel": too_big, "cod": bad_cash}, "INVALID_TIME_WINDOW"),
        ({"parcel": too_big, "cod": bad_cash}, "PARCEL_TOO_LARGE"),
        ({"parcel": BOX, "cod": bad_cash}, "INVALID_COD"),
    ]:
        assert_rejected(patch(api, drop_id, body, key), reason)
    assert parcel_of(drop_id) == ("S", money("1"), None, None)


def test_parcel_and_cod_sent_as_they_are_change_nothing_and_tell_nothing(
    open_for_business, alice, api
):
    key = alice.sandbox_key
    ids = place_group(
        api,
        key,
        carrying("CASH", cod={"amount": "12.50"}, parcel={"size": "M", "weight_kg": 2.5}),
        drop("PLAIN"),
    )
    start = wallet_of(alice).balance
    # As a batch reads them: "12.5" is the stored 12.50; null or the defaults are no parcel.
    for drop_id, body in [
        (ids["CASH"], {"cod": {"amount": "12.5"}, "parcel": {"size": "M", "weight_kg": 2.5}}),
        (ids["PLAIN"], {"cod": None, "parcel": None}),
        (ids["PLAIN"], {"parcel": {"size": "S", "weight_kg": 1}}),
    ]:
        entry = edited(patch(api, drop_id, body, key))
        assert entry["updated_at"] == entry["created_at"]

    assert not Event.objects.filter(type="order.updated").exists()
    assert wallet_of(alice).balance == start
    assert not LedgerEntry.objects.filter(kind=EntryKind.ADJUSTMENT).exists()


@pytest.mark.django_db(transaction=True)
def test_two_edits_of_one_orders_parcels_are_judged_one_after_the_other(open_for_business, alice):
    """Each edit alone fits the motorbike's 30 kg (10 + 20); together they would carry 40. The
    second waits for the first's account lock and is judged on the weight it left."""
    key = alice.sandbox_key
    ids = place_group(
        Api(),
        key,
        carrying("FIRST", parcel={"weight_kg": 10}),
        carrying("SECOND", parcel={"weight_kg": 10}),
    )
    heavier = {"parcel": {"weight_kg": 20}}

    def first_edit():
        change = parse_drop_change(heavier)
        edit_drop(
            business=alice.business, environment="sandbox", drop_id=ids["FIRST"], change=change
        )

    with holding(first_edit):
        second = patch_waiting(ids["SECOND"], heavier, key)

    error = assert_rejected(second.result(timeout=30), "PARCEL_TOO_LARGE")
    assert "40 kg" in error["message"]
    assert (parcel_of(ids["FIRST"])[1], parcel_of(ids["SECOND"])[1]) == (money("20"), money("10"))
