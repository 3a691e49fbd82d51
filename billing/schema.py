"""GET /account on the wire: the output serializer that renders it and documents it."""

from __future__ import annotations

from rest_framework import serializers

from accounts.schema import BILLING_MODELS, ENVIRONMENTS
from billing.models import InvoiceStatus
from core.openapi import EVERY_CALL, money, operation, shape, success

# Named enum (SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] points here).
INVOICE_STATUSES = list(InvoiceStatus.values)


class Pricing(serializers.Serializer):
    base_fee = money(allow_null=True)
    per_km_fee = money(allow_null=True)
    included_km = serializers.CharField(allow_null=True, help_text="Decimal string, in km.")
    return_fee_percent = serializers.CharField(
        allow_null=True,
        help_text="Decimal string: the share of a drop's price charged when it is RETURNED "
        "(docs/contract.md §19).",
    )


class Wallet(serializers.Serializer):
    balance = money()
    owed = money(
        help_text="What a charge after creation (a return fee) could not take from the balance. "
        "The next top-up pays it first; while it is above 0.00, new drops are rejected "
        "INSUFFICIENT_BALANCE (docs/contract.md §19)."
    )


class CurrentInvoice(serializers.Serializer):
    period = serializers.RegexField(r"^\d{4}-\d{2}$", help_text="YYYY-MM, service time zone.")
    accrued = money()
    status = serializers.ChoiceField(choices=INVOICE_STATUSES)


class Account(serializers.Serializer):
    business = shape("AccountBusiness", id=serializers.UUIDField(), name=serializers.CharField())()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    billing_model = serializers.ChoiceField(choices=BILLING_MODELS)
    currency = serializers.CharField()
    pricing = Pricing()
    wallet = Wallet(required=False, help_text="Wallet accounts only.")
    invoice = CurrentInvoice(required=False, help_text="Invoiced accounts: this month's bill.")


ACCOUNT = operation(
    "account_retrieve",
    "account",
    "The calling account: pricing and balance",
    "The business, the key's environment, the billing model and pricing, and the wallet "
    "balance and what it owes (wallet accounts) or this month's invoice (invoiced accounts).",
    responses={200: success("Account", Account), **EVERY_CALL},
)
