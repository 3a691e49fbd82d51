"""Invoiced accounts (docs/contract.md §7): monthly accrual in the service time zone, close, pay."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from billing.models import EntryKind, Invoice, InvoiceLine, InvoiceStatus, LedgerEntry
from billing.services import BillingError, invoice_period, mark_invoice_paid
from orders.models import Drop
from tests.billing.helpers import assert_ledger_consistent, outcomes, prices
from tests.factories import SHOP, batch, drop, group, many_drops
from tests.fixtures import OPEN_HOURS

OCTOBER = datetime(2026, 10, 20, 3, 0, tzinfo=UTC)  # 10:00 in Phnom Penh
DECEMBER_1 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)  # 10:00 on Dec 1 in Phnom Penh
# 00:30 on Dec 1 in Phnom Penh, still Nov 30 in UTC: the area is closed, so the pickup is
# scheduled for 09:00 local.
DECEMBER_LOCALLY = datetime(2026, 11, 30, 17, 30, tzinfo=UTC)
SCHEDULED_DEC_1 = "2026-12-01T02:00:00Z"


@pytest.fixture
def invoiced(make_tenant):
    """An invoiced account with empty wallets: invoiced drops never need a balance."""
    return make_tenant(
        name="Invoiced Shop",
        billing="invoiced",
        net_days=14,
        sandbox_balance="0.00",
        live_balance="0.00",
    )


def invoice(tenant, period: str, environment: str = "sandbox") -> Invoice:
    return Invoice.objects.get(business=tenant.business, environment=environment, period=period)


def assert_accrued_is_sum_of_lines(inv: Invoice) -> Decimal:
    inv.refresh_from_db()
    assert inv.accrued == inv.lines.aggregate(total=Sum("amount"))["total"]
    return inv.accrued


def close(*args) -> str:
    out = StringIO()
    call_command("close_invoices", *args, stdout=out)
    return out.getvalue()


def test_accepted_drops_accrue_lines_on_the_open_invoice_of_the_month(
    open_for_business, invoiced, api
):
    first = api.bulk(batch(group(drop("A-1"), drop("A-2", **SHOP))), invoiced.sandbox_key)
    second = api.bulk(batch(group(drop("A-3"))), invoiced.sandbox_key)

    assert outcomes(first) + outcomes(second) == ["accepted"] * 3  # no balance needed
    assert prices(first) + prices(second) == ["2.83", "2.00", "2.83"]
    november = invoice(invoiced, "2026-11")
    assert november.status == InvoiceStatus.OPEN
    assert assert_accrued_is_sum_of_lines(november) == Decimal("7.66")
    lines = {line.drop.client_order_id: line.amount for line in november.lines.all()}
    assert lines == {d.client_order_id: d.price for d in Drop.objects.all()}
    assert Invoice.objects.count() == 1
    assert not LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).exists()
    assert assert_ledger_consistent(invoiced, "sandbox") == Decimal("0.00")


def test_sandbox_and_live_accrue_on_separate_invoices(open_for_business, invoiced, api):
    api.bulk(batch(group(drop("A-1"))), invoiced.sandbox_key)
    api.bulk(batch(group(drop("A-1"), drop("A-2"))), invoiced.live_key)

    assert assert_accrued_is_sum_of_lines(invoice(invoiced, "2026-11", "sandbox")) == Decimal(
        "2.83"
    )
    assert assert_accrued_is_sum_of_lines(invoice(invoiced, "2026-11", "live")) == Decimal("5.66")


@pytest.mark.parametrize(
    ("moment", "period"),
    [
        (datetime(2026, 11, 30, 16, 59, 59, tzinfo=UTC), "2026-11"),  # 23:59:59 local
        (datetime(2026, 11, 30, 17, 0, tzinfo=UTC), "2026-12"),  # midnight local
        (datetime(2026, 12, 31, 17, 0, tzinfo=UTC), "2027-01"),  # a new year locally
    ],
)
def test_invoice_month_is_the_calendar_month_in_the_service_time_zone(moment, period):
    assert invoice_period(moment) == period


def test_drop_created_after_local_midnight_accrues_to_the_next_month_while_utc_lags(
    open_for_business, invoiced, api
):
    api.bulk(batch(group(drop("N-1"))), invoiced.sandbox_key)  # Nov 23
    open_for_business.move_to(DECEMBER_LOCALLY)

    response = api.bulk(
        batch(group(drop("D-1"), pickup_scheduled_at=SCHEDULED_DEC_1)), invoiced.sandbox_key
    )

    assert outcomes(response) == ["accepted"]
    december = invoice(invoiced, "2026-12")
    assert [line.drop.client_order_id for line in december.lines.all()] == ["D-1"]
    assert assert_accrued_is_sum_of_lines(december) == Decimal("2.83")
    assert assert_accrued_is_sum_of_lines(invoice(invoiced, "2026-11")) == Decimal("2.83")
    summary = api.get("/account", invoiced.sandbox_key).json()["data"]["invoice"]
    assert summary == {"period": "2026-12", "accrued": "2.83", "status": "OPEN"}


@pytest.fixture
def three_months(open_for_business, invoiced, make_tenant, api):
    """Accruals in October, November and (from Dec 1 local) December, live and sandbox.

    A second invoiced account with 45 net days shows the terms are per account.
    """
    slow_payer = make_tenant(name="Slow Payer", billing="invoiced", net_days=45)
    for moment, prefix in ((OCTOBER, "O"), (OPEN_HOURS, "N")):
        open_for_business.move_to(moment)
        for tenant in (invoiced, slow_payer):
            api.bulk(batch(group(drop(f"{prefix}-1"))), tenant.live_key)
            api.bulk(batch(group(drop(f"{prefix}-1"), drop(f"{prefix}-2"))), tenant.sandbox_key)
    open_for_business.move_to(DECEMBER_1)
    api.bulk(batch(group(drop("D-1"))), invoiced.live_key)
    return invoiced, slow_payer


def test_close_invoices_issues_live_invoices_of_ended_months_with_the_accounts_terms(
    three_months,
):
    invoiced, slow_payer = three_months

    output = close()

    for period in ("2026-10", "2026-11"):
        live = invoice(invoiced, period, "live")
        assert (live.status, live.issued_on, live.due_on) == (
            InvoiceStatus.ISSUED,
            date(2026, 12, 1),
            date(2026, 12, 15),
        )
        assert assert_accrued_is_sum_of_lines(live) == Decimal("2.83")
        assert invoice(slow_payer, period, "live").due_on == date(2027, 1, 15)
    assert invoice(invoiced, "2026-12", "live").status == InvoiceStatus.OPEN
    assert "Closed 8 invoice(s)." in output


def test_close_invoices_closes_sandbox_invoices_without_billing_them(three_months):
    invoiced, _ = three_months

    close()

    for period in ("2026-10", "2026-11"):
        sandbox = invoice(invoiced, period, "sandbox")
        assert (sandbox.status, sandbox.issued_on, sandbox.due_on) == (
            InvoiceStatus.CLOSED,
            None,
            None,
        )
        assert assert_accrued_is_sum_of_lines(sandbox) == Decimal("5.66")


@pytest.fixture
def ended_months(open_for_business, invoiced):
    """Open live and sandbox invoices of October, November and December, seen on Dec 1."""
    open_for_business.move_to(DECEMBER_1)
    for period in ("2026-10", "2026-11", "2026-12"):
        for environment in ("live", "sandbox"):
            Invoice.objects.create(
                business=invoiced.business,
                environment=environment,
                period=period,
                accrued=Decimal("1.00"),
            )
    return invoiced


def test_close_invoices_twice_changes_nothing_the_second_time(ended_months):
    close()
    before = list(Invoice.objects.order_by("pk").values())

    output = close()

    assert "Closed 0 invoice(s)." in output
    assert list(Invoice.objects.order_by("pk").values()) == before


def test_close_invoices_with_month_closes_only_up_to_that_month(ended_months):
    invoiced = ended_months

    close("--month", "2026-10")

    assert invoice(invoiced, "2026-10", "live").status == InvoiceStatus.ISSUED
    assert invoice(invoiced, "2026-10", "sandbox").status == InvoiceStatus.CLOSED
    assert invoice(invoiced, "2026-11", "live").status == InvoiceStatus.OPEN
    assert invoice(invoiced, "2026-11", "sandbox").status == InvoiceStatus.OPEN


def test_close_invoices_with_a_december_month_crosses_the_year(invoiced):
    last_year = Invoice.objects.create(
        business=invoiced.business, environment="live", period="2025-12"
    )
    january = Invoice.objects.create(
        business=invoiced.business, environment="live", period="2026-01"
    )

    close("--month", "2025-12")

    last_year.refresh_from_db(), january.refresh_from_db()
    assert (last_year.status, january.status) == (InvoiceStatus.ISSUED, InvoiceStatus.OPEN)


@pytest.mark.parametrize("month", ["2026-12", "2027-01"])
def test_close_invoices_refuses_a_month_that_has_not_ended(ended_months, month):
    with pytest.raises(CommandError, match="not ended"):
        close("--month", month)

    assert not Invoice.objects.exclude(status=InvoiceStatus.OPEN).exists()


@pytest.mark.parametrize("month", ["2026-13", "11/2026", "November", "2026-11-01", "2026-9"])
def test_close_invoices_refuses_a_malformed_month(ended_months, month):
    with pytest.raises(CommandError):
        close("--month", month)

    assert not Invoice.objects.exclude(status=InvoiceStatus.OPEN).exists()


def test_the_month_ends_at_local_midnight_and_issue_date_is_the_local_date(
    open_for_business, invoiced, api
):
    api.bulk(batch(group(drop("N-1"))), invoiced.live_key)
    november = invoice(invoiced, "2026-11", "live")

    open_for_business.move_to(datetime(2026, 11, 30, 16, 30, tzinfo=UTC))  # 23:30 local
    close()
    november.refresh_from_db()
    assert november.status == InvoiceStatus.OPEN

    open_for_business.move_to(DECEMBER_LOCALLY)  # 00:30 local on Dec 1, Nov 30 in UTC
    close()
    november.refresh_from_db()
    assert november.status == InvoiceStatus.ISSUED
    assert (november.issued_on, november.due_on) == (date(2026, 12, 1), date(2026, 12, 15))


def test_issued_invoice_can_be_marked_paid_once(ended_months):
    invoiced = ended_months
    close()
    october = invoice(invoiced, "2026-10", "live")

    mark_invoice_paid(invoice=october, at=DECEMBER_1)

    october.refresh_from_db()
    assert (october.status, october.paid_at) == (InvoiceStatus.PAID, DECEMBER_1)
    with pytest.raises(BillingError):
        mark_invoice_paid(invoice=october, at=DECEMBER_1)


@pytest.mark.parametrize(("period", "environment"), [("2026-12", "live"), ("2026-10", "sandbox")])
def test_only_issued_invoices_can_be_marked_paid(ended_months, period, environment):
    invoiced = ended_months
    close()
    unpaid = invoice(invoiced, period, environment)  # OPEN, or CLOSED (sandbox)

    with pytest.raises(BillingError):
        mark_invoice_paid(invoice=unpaid, at=DECEMBER_1)

    unpaid.refresh_from_db()
    assert unpaid.status != InvoiceStatus.PAID and unpaid.paid_at is None


def test_cancelling_reverses_the_accrual_with_a_negative_line(open_for_business, invoiced, api):
    api.bulk(batch(group(drop("C-1"), drop("C-2", **SHOP))), invoiced.sandbox_key)

    response = api.post("/orders/cancel", {"identifiers": ["C-1"]}, invoiced.sandbox_key)

    assert response.json()["data"]["orders"][0]["status"] == "CANCELLED"
    november = invoice(invoiced, "2026-11")
    reversal = november.lines.get(amount__lt=0)
    assert (reversal.drop.client_order_id, reversal.amount) == ("C-1", Decimal("-2.83"))
    assert assert_accrued_is_sum_of_lines(november) == Decimal("2.00")
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()


def test_cancelling_after_the_month_was_issued_reverses_on_the_current_invoice(
    open_for_business, invoiced, api
):
    api.bulk(batch(group(drop("C-1"))), invoiced.live_key)
    open_for_business.move_to(DECEMBER_1)
    close()

    response = api.post("/orders/cancel", {"identifiers": ["C-1"]}, invoiced.live_key)

    assert response.json()["data"]["orders"][0]["status"] == "CANCELLED"
    november, december = invoice(invoiced, "2026-11", "live"), invoice(invoiced, "2026-12", "live")
    assert november.status == InvoiceStatus.ISSUED
    assert assert_accrued_is_sum_of_lines(november) == Decimal("2.83")  # issued: untouched
    assert december.status == InvoiceStatus.OPEN
    assert assert_accrued_is_sum_of_lines(december) == Decimal("-2.83")


def test_accruals_of_a_batch_cost_the_same_queries_for_1_and_for_40_drops(
    open_for_business, invoiced, api
):
    api.bulk(many_drops(1, "WARM"), invoiced.sandbox_key)  # the month's invoice exists now

    with CaptureQueriesContext(connection) as one:
        api.bulk(many_drops(1, "ONE"), invoiced.sandbox_key)
    with CaptureQueriesContext(connection) as forty:
        api.bulk(many_drops(40, "FORTY"), invoiced.sandbox_key)

    assert InvoiceLine.objects.count() == 42
    assert len(forty) == len(one)
