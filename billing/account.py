"""GET /account's answer (docs/contract.md §8, §18): the business, its pricing, its wallet or
invoice, its cash on delivery, as the wire shape.

On PostgreSQL everything the answer reads after authentication is one statement, compiled
once (core.reads.row_compiled_once): the active vehicles' multipliers, the wallet (or this
month's invoice), the COD account and its totals, each a subquery of one row. Read apart, as
billing.services.account_summary and billing.cod.cod_summary do on the embedded default, they
were four statements compiled per call, two thirds of the call's own time (docs/decisions.md,
"The small calls' SQL and reference data are compiled once per process"). Both ways give the
same answer; a test holds them equal.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection
from django.db.models import OuterRef, Subquery

from accounts.models import BillingModel, Business
from billing.cod import TOTALS, cod_summary
from billing.models import ZERO, CodAccount, Invoice, InvoiceStatus, Wallet
from billing.services import account_pricing, account_summary, invoice_period
from core.formats import money
from core.reads import row_compiled_once
from fleet.models import VehicleType

# GET /account's `cod`: the COD account's owed and the totals it keeps (billing.cod).
COD_COLUMNS = ["owed", *TOTALS]


def account_answer(*, business: Business, environment: str, at: datetime) -> dict:
    """GET /account's `data`; `business` as authentication loaded it, with its plan."""
    read = _read_in_one if connection.vendor == "postgresql" else _read_apart
    billing, cod = read(business, environment, at)
    return {
        "business": {"id": str(business.pk), "name": business.name},
        "environment": environment,
        **billing,
        "cod": {name: money(value) for name, value in cod.items()},
    }


def _read_apart(business: Business, environment: str, at: datetime) -> tuple[dict, dict]:
    """The embedded default's way: the ORM's own reads, one per part."""
    billing = account_summary(business=business, environment=environment, at=at)
    return billing, cod_summary(business=business, environment=environment)


def _read_in_one(business: Business, environment: str, at: datetime) -> tuple[dict, dict]:
    """_read_apart's answers, from one row."""
    period = invoice_period(at)
    row = row_compiled_once(
        ("account", environment),
        _params(business, environment, period),
        lambda: _account_row(business, environment, period),
    )
    codes, multipliers, balance, owed, accrued, status, *cod_columns = row
    billing = account_pricing(business, zip(codes, multipliers, strict=True))
    if business.billing_model == BillingModel.WALLET:
        billing["wallet"] = {"balance": money(balance), "owed": money(owed)}
    else:
        billing["invoice"] = {
            "period": period,
            "accrued": money(ZERO if accrued is None else accrued),
            "status": status or InvoiceStatus.OPEN,
        }
    # No COD account yet: every figure 0, as cod_summary says.
    cod = {
        name: ZERO if value is None else value
        for name, value in zip(COD_COLUMNS, cod_columns, strict=True)
    }
    return billing, cod


def _params(business: Business, environment: str, period: str) -> list:
    """The values Django binds into _account_row's SQL, in its order."""
    return [  # (the vehicles' `active = true` is written into the SQL, not bound)
        environment,  # the wallet's balance
        environment,  # and owed
        environment,  # the invoice's accrued
        period,
        environment,  # and status
        period,
        *[environment for _ in COD_COLUMNS],  # the COD account's owed and kept totals
        business.pk,
    ]


def _account_row(business: Business, environment: str, period: str):
    vehicles = VehicleType.objects.filter(active=True).order_by("price_multiplier", "code")
    wallet = Wallet.objects.filter(business=OuterRef("pk"), environment=environment)
    invoice = Invoice.objects.filter(
        business=OuterRef("pk"), environment=environment, period=period
    )
    account = CodAccount.objects.filter(business=OuterRef("pk"), environment=environment)
    return Business.objects.filter(pk=business.pk).values_list(
        ArraySubquery(vehicles.values("code")),
        ArraySubquery(vehicles.values("price_multiplier")),
        Subquery(wallet.values("balance")[:1]),
        Subquery(wallet.values("owed")[:1]),
        Subquery(invoice.values("accrued")[:1]),
        Subquery(invoice.values("status")[:1]),
        *[Subquery(account.values(name)[:1]) for name in COD_COLUMNS],
    )
