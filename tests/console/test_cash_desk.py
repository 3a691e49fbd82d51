"""The console's cash desk (docs/contract.md §23): couriers with cash in hand, the longest held
first; the hand-over a Cashier records (expected, counted, receipt; a shortage needs a note);
the end of day report per courier (CSV)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group
from django.urls import reverse

from billing.custody import hand_over
from billing.models import CashKind, CourierCashAccount, CourierCashEntry, HubCashEntry
from couriers.services import provision_courier
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod
from tests.billing.custody_helpers import cash_account, delivered_by, in_hand
from tests.operators import staff_client

pytestmark = pytest.mark.django_db

DESK = "admin:billing_couriercashaccount_changelist"


def courier(name: str, phone: str):
    return provision_courier(name=name, phone=phone, vehicle="motorbike", password="correct horse")


@pytest.fixture
def dara(db):
    return courier("Dara Sok", "+85512340011")


@pytest.fixture
def vanna(db):
    return courier("Vanna Keo", "+85512340012")


@pytest.fixture
def cashier():
    return staff_client("cashier@example.com", groups=["Cashier"])


@pytest.fixture
def operator():
    return staff_client("operator@example.com", groups=["Operators"])


@pytest.fixture
def holding(open_for_business, api, alice, dara, vanna):
    """Vanna collected first (an hour ago), then Dara; Dara holds 42.50, Vanna 10.00."""
    delivered_by(api, alice, vanna, "10.00")
    CourierCashEntry.objects.update(
        created_at=CourierCashEntry.objects.get().created_at - timedelta(hours=1)
    )
    delivered_by(api, alice, dara, "30.00", "12.50")
    return cash_account(dara)


def hand_over_url(account) -> str:
    return reverse("admin:billing_couriercashaccount_hand_over", args=[account.pk])


def test_the_desk_lists_couriers_with_cash_the_longest_held_first(holding, cashier, dara, vanna):
    hand_over(courier=dara, currency="USD", expected="42.50", counted="42.50", receipt="R-0")
    page = cashier.get(reverse(DESK))

    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [(a.courier, a.in_hand) for a in rows] == [(vanna, Decimal("10.00"))]
    assert holding.pk not in {a.pk for a in rows}  # Dara holds nothing now: not on the desk
    assert "Vanna Keo" in page.content.decode()


def test_oldest_collection_in_hand_orders_the_desk(holding, cashier, dara, vanna):
    rows = cashier.get(reverse(DESK)).context["cl"].result_list
    assert [a.courier for a in rows] == [vanna, dara]


def test_the_desk_shows_unattributed_cash(open_for_business, api, alice, cashier):
    delivered_cod(api, alice, {"L-1": "7.00"}, environment="live")  # no courier on the order

    page = cashier.get(reverse(DESK))

    assert "Unattributed" in page.content.decode()


def test_a_cashier_records_a_hand_over_with_a_shortage_and_its_note(holding, cashier, dara):
    form = cashier.get(hand_over_url(holding))
    assert form.status_code == 200 and "42.50 USD" in form.content.decode()

    no_note = cashier.post(
        hand_over_url(holding), {"expected": "42.50", "counted": "40.00", "receipt": "R-1"}
    )
    assert no_note.status_code == 200 and "say why in a note" in no_note.content.decode()
    assert in_hand(dara) == Decimal("42.50")

    done = cashier.post(
        hand_over_url(holding),
        {"expected": "42.50", "counted": "40.00", "receipt": "R-1", "note": "Paid short"},
    )

    assert done.status_code == 302
    account = cash_account(dara)
    assert (account.in_hand, account.courier_owes) == (Decimal("0.00"), Decimal("2.50"))
    assert account.entries.get(kind=CashKind.HANDED_OVER).actor.username == "cashier@example.com"
    assert "Short 2.50" in LogEntry.objects.get().change_message
    assert_cod_consistent()


def test_counted_over_expected_is_the_hub_s_surplus(holding, cashier, dara):
    done = cashier.post(
        hand_over_url(holding), {"expected": "42.50", "counted": "50.00", "receipt": "R-2"}
    )

    assert done.status_code == 302
    assert HubCashEntry.objects.get().amount == Decimal("7.50")
    assert in_hand(dara) == Decimal("0.00")
    assert_cod_consistent()


def test_a_hand_over_recorded_first_elsewhere_is_refused_with_the_new_expected(
    holding, cashier, dara
):
    hand_over(
        courier=dara,
        currency="USD",
        expected="42.50",
        counted="30.00",
        receipt="R-3",
        note="Partial",
    )  # fmt: skip  another cashier, first

    late = cashier.post(
        hand_over_url(holding), {"expected": "42.50", "counted": "42.50", "receipt": "R-4"}
    )

    assert late.status_code == 200
    text = late.content.decode()
    assert "Nothing was recorded" in text and "another cashier" in text
    assert CourierCashEntry.objects.filter(receipt="R-4").count() == 0


def test_only_cashiers_record_hand_overs(holding, operator):
    assert operator.get(reverse(DESK)).status_code == 200  # Operators see the desk
    assert operator.get(hand_over_url(holding)).status_code == 403
    answer = operator.post(
        hand_over_url(holding), {"expected": "42.50", "counted": "42.50", "receipt": "R-5"}
    )
    assert answer.status_code == 403 and in_hand(holding.courier) == Decimal("42.50")


def test_the_end_of_day_report_has_a_line_per_courier(holding, cashier, dara, vanna):
    hand_over(courier=dara, currency="USD", expected="42.50", counted="40.00", receipt="R-6",
              note="Short")  # fmt: skip

    response = cashier.get(
        reverse("admin:billing_couriercashaccount_report") + "?environment=live&date=2026-11-23"
    )

    assert response.status_code == 200
    assert 'filename="cash-desk-live-2026-11-23.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows[0][:3] == ["date", "courier_id", "courier"]
    by_name = {row[2]: row[5:] for row in rows[1:]}
    assert by_name == {
        "Dara Sok": ["USD", "42.50", "40.00", "2.50", "0.00", "0.00", "2.50"],
        "Vanna Keo": ["USD", "10.00", "0.00", "0.00", "0.00", "10.00", "0.00"],
    }
    yesterday = cashier.get(
        reverse("admin:billing_couriercashaccount_report") + "?environment=live&date=2026-11-22"
    )
    assert len(list(csv.reader(io.StringIO(yesterday.content.decode("utf-8-sig"))))) == 1


def test_the_desk_is_in_the_couriers_section(cashier, db):
    index = cashier.get(reverse("admin:app_list", kwargs={"app_label": "couriers"}))
    assert index.status_code == 200
    assert reverse(DESK) in index.content.decode()


def test_the_cashier_group_has_the_hand_over_permission(db):
    codenames = set(
        Group.objects.get(name="Cashier").permissions.values_list("codename", flat=True)
    )
    assert "record_hand_over" in codenames
    assert CourierCashAccount._meta.verbose_name_plural == "cash desk"
