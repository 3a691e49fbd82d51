"""The couriers' cash ledger (docs/contract.md §23): who holds the cash collected on delivery,
hand-overs at the hub with their shortages and surpluses, and the invariant that every cent
the businesses are owed is in a courier's hand, handed over, or owed by a courier."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction

from billing.custody import (
    CashInvalid,
    HandOverStale,
    custody_breaches,
    hand_over,
    log_custody_breaches,
)
from billing.models import (
    CashKind,
    CodEntry,
    CodKind,
    CourierCashAccount,
    CourierCashEntry,
    HubCashEntry,
)
from billing.tasks import check_custody
from couriers.services import provision_courier
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod
from tests.billing.custody_helpers import cash_account, delivered_by, in_hand

pytestmark = pytest.mark.django_db

USD = "USD"


@pytest.fixture
def dara(db):
    return provision_courier(
        name="Dara Sok", phone="+85512340001", vehicle="motorbike", password="correct horse"
    )


@pytest.fixture
def cashier(db):
    return get_user_model().objects.create_user("cashier@example.com", password="x")


@pytest.fixture
def holding(open_for_business, api, alice, dara) -> CourierCashAccount:
    """Dara delivered two live COD drops of Alice's: 42.50 in hand."""
    delivered_by(api, alice, dara, "30.00", "12.50")
    return cash_account(dara)


def test_a_delivery_puts_its_cash_in_the_hand_of_the_courier_who_delivered_it(holding, dara):
    assert holding.in_hand == holding.collected_total == Decimal("42.50")
    entries = list(holding.entries.all())
    assert sorted((e.kind, e.amount) for e in entries) == [
        (CashKind.COLLECTED, Decimal("12.50")),
        (CashKind.COLLECTED, Decimal("30.00")),
    ]
    # The COD ledger's COLLECTED names the courier too, drop by drop.
    cod = CodEntry.objects.filter(kind=CodKind.COLLECTED)
    assert {e.courier_id for e in cod} == {dara.pk}
    assert {e.drop_id for e in cod} == {e.drop_id for e in entries}
    assert_cod_consistent()


def test_the_sandbox_test_driver_holds_sandbox_cash_apart_from_live(open_for_business, api, alice):
    delivered_cod(api, alice, {"S-1": "9.00"})  # the sandbox test driver walks it

    account = CourierCashAccount.objects.get(environment="sandbox")
    assert account.courier.is_sandbox_test_driver and account.in_hand == Decimal("9.00")
    assert not CourierCashAccount.objects.filter(environment="live").exists()
    assert_cod_consistent()


def test_cash_of_an_order_without_a_courier_is_unattributed(open_for_business, api, alice):
    delivered_cod(api, alice, {"L-1": "7.00"}, environment="live")  # an operator's moves

    account = CourierCashAccount.objects.get(environment="live")
    assert account.courier is None and account.in_hand == Decimal("7.00")
    assert CodEntry.objects.get(kind=CodKind.COLLECTED).courier_id is None
    assert_cod_consistent()


def test_a_full_hand_over_empties_the_hand(holding, dara, cashier):
    result = hand_over(
        courier=dara, currency=USD, expected="42.50", counted="42.50", receipt="R-1",
        cashier=cashier,
    )  # fmt: skip

    assert (result.handed_over, result.shortage, result.surplus) == (
        Decimal("42.50"), Decimal("0.00"), Decimal("0.00"),
    )  # fmt: skip
    holding.refresh_from_db()
    assert holding.in_hand == Decimal("0.00") and holding.handed_over_total == Decimal("42.50")
    entry = holding.entries.get(kind=CashKind.HANDED_OVER)
    assert (entry.amount, entry.receipt, entry.actor) == (Decimal("-42.50"), "R-1", cashier)
    assert_cod_consistent()


def test_counted_short_is_a_shortage_the_courier_owes_and_needs_a_note(holding, dara, cashier):
    with pytest.raises(CashInvalid, match="note"):
        hand_over(courier=dara, currency=USD, expected="42.50", counted="40.00", receipt="R-2")
    assert cash_account(dara).entries.count() == 2  # nothing written

    result = hand_over(
        courier=dara, currency=USD, expected="42.50", counted="40.00", receipt="R-2",
        note="Says a customer paid short", cashier=cashier,
    )  # fmt: skip

    assert (result.handed_over, result.shortage) == (Decimal("40.00"), Decimal("2.50"))
    assert (result.in_hand, result.courier_owes) == (Decimal("0.00"), Decimal("2.50"))
    shortage = cash_account(dara).entries.get(kind=CashKind.SHORTAGE)
    assert shortage.amount == Decimal("-2.50") and shortage.note == "Says a customer paid short"
    assert_cod_consistent()


def test_nothing_counted_is_all_shortage(holding, dara):
    hand_over(courier=dara, currency=USD, expected="42.50", counted="0", receipt="R-3", note="Lost")

    account = cash_account(dara)
    assert (account.in_hand, account.courier_owes) == (Decimal("0.00"), Decimal("42.50"))
    assert not account.entries.filter(kind=CashKind.HANDED_OVER).exists()
    assert_cod_consistent()


def test_counted_over_is_the_hub_s_surplus_never_the_courier_s(holding, dara, cashier):
    result = hand_over(
        courier=dara, currency=USD, expected="42.50", counted="45.00", receipt="R-4",
        cashier=cashier,
    )  # fmt: skip

    assert (result.handed_over, result.surplus, result.in_hand) == (
        Decimal("42.50"), Decimal("2.50"), Decimal("0.00"),
    )  # fmt: skip
    surplus = HubCashEntry.objects.get()
    assert (surplus.amount, surplus.courier, surplus.receipt) == (Decimal("2.50"), dara, "R-4")
    account = cash_account(dara)
    assert account.handed_over_total == Decimal("42.50") and account.courier_owes == 0
    assert_cod_consistent()


def test_a_stale_expected_amount_is_refused(holding, dara):
    with pytest.raises(HandOverStale, match="42.50 is in hand now"):
        hand_over(courier=dara, currency=USD, expected="30.00", counted="30.00", receipt="R-5")
    assert in_hand(dara) == Decimal("42.50")


@pytest.mark.parametrize(
    ("expected", "counted", "receipt", "message"),
    [
        ("42.50", "42.50", "  ", "receipt"),
        ("0", "0", "R", "Expected"),
        ("42.505", "42.50", "R", "Expected"),
        ("42.50", "-1", "R", "Counted"),
        ("42.50", "lots", "R", "Counted"),
        ("42.50", "NaN", "R", "Counted"),
        ("42.50", "1e20", "R", "Counted"),
        ("42.50", "42.50", "R" * 101, "receipt number is at most"),
    ],
)
def test_bad_hand_overs_are_refused_writing_nothing(
    holding, dara, expected, counted, receipt, message
):
    with pytest.raises(CashInvalid, match=message):
        hand_over(courier=dara, currency=USD, expected=expected, counted=counted, receipt=receipt)
    assert cash_account(dara).entries.count() == 2


def test_nothing_in_hand_has_nothing_to_hand_over(open_for_business, dara):
    with pytest.raises(HandOverStale):
        hand_over(courier=dara, currency=USD, expected="5.00", counted="5.00", receipt="R-6")


def test_the_database_refuses_a_negative_hand_and_a_shortage_without_a_note(holding):
    with pytest.raises(IntegrityError), transaction.atomic():
        CourierCashAccount.objects.filter(pk=holding.pk).update(in_hand=Decimal("-0.01"))
    with pytest.raises(IntegrityError), transaction.atomic():
        CourierCashEntry.objects.create(
            account=holding, kind=CashKind.SHORTAGE, amount=Decimal("-1.00"),
            in_hand_after=Decimal("41.50"), created_at=holding.updated_at,
        )  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        CourierCashEntry.objects.create(
            account=holding, kind=CashKind.HANDED_OVER, amount=Decimal("-1.00"), receipt="R",
            in_hand_after=Decimal("-1.00"), created_at=holding.updated_at,
        )  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        HubCashEntry.objects.create(
            environment="live", currency=USD, amount=Decimal("-1.00"), receipt="R",
            created_at=holding.updated_at,
        )  # fmt: skip


def test_a_cent_missing_from_custody_is_a_breach_the_job_logs(holding, caplog):
    assert custody_breaches() == [] and check_custody.call() == 0

    # A cent taken out of a courier's hand with no entry for it.
    CourierCashAccount.objects.filter(pk=holding.pk).update(in_hand=Decimal("42.49"))

    [breach] = custody_breaches()
    assert (breach.environment, breach.currency) == ("live", USD)
    assert breach.businesses_collected == breach.couriers_collected == Decimal("42.50")
    assert breach.accounted == Decimal("42.49")
    with caplog.at_level(logging.ERROR, logger="billing.custody"):
        assert log_custody_breaches() == 1
    assert "Cash custody does not add up: live USD" in caplog.text


def test_a_collection_missing_from_the_couriers_ledger_is_a_breach(holding):
    CourierCashEntry.objects.filter(kind=CashKind.COLLECTED, amount=Decimal("12.50")).update(
        amount=Decimal("12.00")
    )
    [breach] = custody_breaches()
    assert breach.couriers_collected == Decimal("42.00") != breach.businesses_collected


def test_collections_from_before_the_ledger_are_attributed_to_who_delivered_them(
    open_for_business, api, alice, dara
):
    delivered_by(api, alice, dara, "30.00", "12.50")
    delivered_cod(api, alice, {"L-1": "7.00"}, environment="live")  # no courier
    # As before the cash ledger: no courier named, no cash accounts.
    CourierCashEntry.objects.all().delete()
    CourierCashAccount.objects.all().delete()
    CodEntry.objects.update(courier=None)
    assert custody_breaches() != []

    migration = __import__(
        "billing.migrations.0008_attribute_collected_cash", fromlist=["attribute"]
    )
    migration.attribute(apps, connection.schema_editor())

    assert in_hand(dara) == Decimal("42.50")
    unattributed = CourierCashAccount.objects.get(courier=None, environment="live")
    assert unattributed.in_hand == Decimal("7.00")
    assert_cod_consistent()  # every COD COLLECTED names the courier of its cash entry
