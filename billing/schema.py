"""GET /account on the wire: the output serializer that renders it and documents it."""

from __future__ import annotations

from rest_framework import serializers

from accounts.schema import BILLING_MODELS, ENVIRONMENTS
from billing.inputs import CREDIT
from billing.models import InvoiceStatus
from core.openapi import EVERY_CALL, EVERY_POST, failure, money, operation, shape, success

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
    cod_fee_percent = serializers.CharField(
        allow_null=True,
        help_text="Decimal string: the share of a cash-on-delivery amount added to the drop's "
        "price as `price_breakdown.cod_fee` (docs/contract.md §18).",
    )
    vehicle_multipliers = serializers.DictField(
        child=serializers.CharField(),
        help_text='The active vehicle types\' price multipliers by code, e.g. {"motorbike": '
        '"1.00", "van": "3.00"}: a drop\'s delivery price is the §7 formula × its pickup '
        "group's vehicle's (GET /vehicle-types).",
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


class Cod(serializers.Serializer):
    owed = money(
        help_text="Cash collected on delivery that we hold for you: collected − remitted − "
        "credited to the wallet. Never below 0.00."
    )
    collected_total = money(help_text="All cash couriers collected (delivered COD drops).")
    remitted_total = money(help_text="All of it our finance team paid out to you.")
    credited_total = money(help_text="All of it moved into your wallet (credit-wallet).")


class Account(serializers.Serializer):
    business = shape("AccountBusiness", id=serializers.UUIDField(), name=serializers.CharField())()
    environment = serializers.ChoiceField(choices=ENVIRONMENTS)
    billing_model = serializers.ChoiceField(choices=BILLING_MODELS)
    currency = serializers.CharField()
    pricing = Pricing()
    wallet = Wallet(required=False, help_text="Wallet accounts only.")
    invoice = CurrentInvoice(required=False, help_text="Invoiced accounts: this month's bill.")
    cod = Cod(help_text="Cash on delivery held for this account (docs/contract.md §18).")


ACCOUNT = operation(
    "account_retrieve",
    "account",
    "The calling account: pricing and balance",
    "The business, the key's environment, the billing model and pricing, and the wallet "
    "balance and what it owes (wallet accounts) or this month's invoice (invoiced accounts), "
    "and the cash collected on delivery held for it.",
    responses={200: success("Account", Account), **EVERY_CALL},
)


CodCreditIn = CREDIT.serializer()  # the body, from its one declaration (billing/inputs.py)


class CodCredited(serializers.Serializer):
    credited = money(help_text="The amount moved.")
    cod = Cod()
    wallet = Wallet()


CREDIT_REFUSED = failure(
    "CodCreditRefused",
    409,
    ["COD_EXCEEDS_OWED", "COD_NOT_CREDITABLE"],
    "COD_EXCEEDS_OWED: the amount is more than `cod.owed` now (nothing moved). "
    "COD_NOT_CREDITABLE: an account billed by invoice has no wallet to credit.",
)
CREDIT_WALLET = operation(
    "account_cod_credit_wallet",
    "account",
    "Move collected cash into the wallet",
    "Takes `amount` from the cash on delivery held for you (`cod.owed`) and tops up the "
    "wallet of the key's environment by it, in one transaction: a COD ledger entry "
    "CREDITED_TO_WALLET and a wallet TOP_UP (which pays what the wallet owes first). Sends "
    "`cod.credited`. Not idempotent: a retry after a lost answer moves the amount again "
    "(check `cod.owed` with GET /account first).",
    request=CodCreditIn,
    responses={200: success("CodCredited", CodCredited), **EVERY_POST, 409: CREDIT_REFUSED},
)
