"""The operators' COD pages (docs/contract.md §18): the reconciliation and its CSV, each
account's ledger, and a payout recorded by Finance with a reference after a confirmation."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from billing.models import CodAccount, CodEntry, CodKind, Invoice
from events.models import Event, EventType
from orders.models import Drop
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod, owed_of
from tests.console.test_console_dates import LOCALE_FORMAT
from tests.factories import batch, drop, group
from tests.operators import staff_client

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:billing_codaccount_changelist"


@pytest.fixture
def operator():
    return staff_client("operator@example.com", groups=["Operators"])


@pytest.fixture
def finance():
    return staff_client("finance@example.com", groups=["Finance"])


@pytest.fixture
def owed(open_for_business, alice, bob, api) -> CodAccount:
    """Alice is owed 42.50 on live (and 9.00 of sandbox play money); Bob 10.00 on live."""
    delivered_cod(api, alice, {"A-1": "30.00", "A-2": "12.50"}, environment="live")
    delivered_cod(api, alice, {"S-1": "9.00"})
    delivered_cod(api, bob, {"B-1": "10.00"}, environment="live")
    return CodAccount.objects.get(business=alice.business, environment="live")


def payout_url(account: CodAccount) -> str:
    return reverse("admin:billing_codaccount_payout", args=[account.pk])


def test_the_reconciliation_shows_owed_and_collected_today_per_business(owed, operator):
    page = operator.get(reverse(CHANGELIST))

    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [(a.business.name, a.owed, a.collected_today) for a in rows] == [
        ("Alice Shop", Decimal("42.50"), Decimal("42.50")),
        ("Bob Shop", Decimal("10.00"), Decimal("10.00")),
    ]  # live only, most owed first: sandbox cash is play money
    assert "owed 52.50, collected today 52.50" in page.content.decode()
    assert operator.get(reverse(CHANGELIST) + "?_facets=True").status_code == 200  # Show counts
    sandbox = operator.get(reverse(CHANGELIST) + "?environment=sandbox").context["cl"].result_list
    assert [(a.business.name, a.owed) for a in sandbox] == [("Alice Shop", Decimal("9.00"))]


def test_the_reconciliation_csv_has_every_business_with_its_totals(owed, operator, alice, bob):
    owed.business.name = "=HYPERLINK(evil)"
    owed.business.save()

    response = operator.get(reverse("admin:billing_codaccount_csv") + "?environment=live")

    assert response.status_code == 200
    assert response["Content-Disposition"].startswith(
        'attachment; filename="cod-reconciliation-live'
    )
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows == [
        ["business_id", "business", "environment", "currency", "owed", "collected_today",
         "collected_total", "remitted_total", "credited_total"],
        [str(alice.business.pk), "'=HYPERLINK(evil)", "live", "USD", "42.50", "42.50", "42.50",
         "0.00", "0.00"],
        [str(bob.business.pk), "Bob Shop", "live", "USD", "10.00", "10.00", "10.00", "0.00",
         "0.00"],
    ]  # fmt: skip


def test_finance_records_a_payout_only_after_confirming_it(owed, finance, alice):
    ledger = finance.get(reverse("admin:billing_codaccount_change", args=[owed.pk]))
    assert payout_url(owed) in ledger.content.decode()
    body = {"amount": "40.00", "reference": " TRF-2026-881 "}

    confirm = finance.post(payout_url(owed), body)

    assert confirm.status_code == 200
    assert 'data-testid="confirm-payout"' in confirm.content.decode()
    assert "from 42.50 to 2.50" in confirm.content.decode()
    assert not CodEntry.objects.filter(kind=CodKind.REMITTED).exists()  # not before Confirm

    done = finance.post(payout_url(owed), {**body, "confirmed": "1"})

    assert done.status_code == 302
    payout = CodEntry.objects.get(kind=CodKind.REMITTED)
    assert (payout.amount, payout.reference, payout.actor.username) == (
        Decimal("-40.00"),
        "TRF-2026-881",
        "finance@example.com",
    )
    assert owed_of(alice, "live") == Decimal("2.50")
    event = Event.objects.get(type=EventType.COD_REMITTED)
    assert (event.business_id, event.environment, event.data["reference"]) == (
        alice.business.pk,
        "live",
        "TRF-2026-881",
    )
    assert LogEntry.objects.filter(object_id=str(owed.pk)).count() == 1
    assert_cod_consistent()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"amount": "42.51", "reference": "T-1"}, "amount"),
        ({"amount": "0", "reference": "T-1"}, "amount"),
        ({"amount": "abc", "reference": "T-1"}, "amount"),
        ({"amount": "5.00", "reference": "   "}, "reference"),
    ],
)
def test_a_payout_of_more_than_is_owed_or_without_a_reference_is_refused(
    owed, finance, body, field
):
    for confirmed in ({}, {"confirmed": "1"}):
        page = finance.post(payout_url(owed), {**body, **confirmed})

        assert page.status_code == 200
        assert field in page.context["form"].errors
    assert not CodEntry.objects.filter(kind=CodKind.REMITTED).exists()
    assert CodAccount.objects.get(pk=owed.pk).owed == Decimal("42.50")


def test_operators_without_finance_see_the_ledger_but_cannot_pay_out(owed, operator):
    ledger = operator.get(reverse("admin:billing_codaccount_change", args=[owed.pk]))

    assert ledger.status_code == 200
    assert payout_url(owed) not in ledger.content.decode()
    assert operator.get(payout_url(owed)).status_code == 403
    body = {"amount": "1.00", "reference": "T-1", "confirmed": "1"}
    assert operator.post(payout_url(owed), body).status_code == 403
    assert not CodEntry.objects.filter(kind=CodKind.REMITTED).exists()


def test_a_staff_user_without_cod_permissions_sees_nothing(owed):
    stranger = staff_client("stranger@example.com")

    assert stranger.get(reverse(CHANGELIST)).status_code == 403
    assert stranger.get(reverse("admin:billing_codaccount_csv")).status_code == 403


def test_an_invoice_line_shows_a_cod_drop_s_delivery_and_fee(open_for_business, make_tenant, api):
    tenant = make_tenant(billing="invoiced", base_fee="2", per_km_fee="0.5")
    with_cod, plain = drop("COD-1"), drop("PLAIN-1")
    with_cod["cod"] = {"amount": "13.00"}
    response = api.bulk(batch(group(with_cod, plain)), tenant.sandbox_key)
    assert response.status_code == 200, response.content
    charged = Drop.objects.get(client_order_id="COD-1")
    assert charged.cod_fee == Decimal("0.13")  # 1.00 % of 13.00
    invoice = Invoice.objects.get(business=tenant.business)
    finance = staff_client("finance@example.com", groups=["Finance"])

    page = finance.get(reverse("admin:billing_invoice_change", args=[invoice.pk])).content.decode()

    assert f"{charged.price - Decimal('0.13')} + 0.13" in page
    assert page.count(" + 0.13") == 1  # the drop without COD has no breakdown


def test_the_ledger_shows_its_entries_times_in_the_console_format(owed, operator):
    """ "28 Nov 2026, 05:10 UTC+7" as every console list, never "Nov. 28, 2026, 5:10 a.m."."""
    entry = owed.entries.order_by("id").first()
    local = timezone.localtime(entry.created_at)

    html = operator.get(reverse("admin:billing_codaccount_change", args=[owed.pk])).content.decode()

    ledger = html.split('id="entries-group"')[1]
    assert f"{local:%d %b %Y, %H:%M}".lstrip("0") + "</time>" in ledger
    assert ">UTC+7</abbr>" in ledger
    assert not LOCALE_FORMAT.search(ledger), LOCALE_FORMAT.search(ledger).group(0)
