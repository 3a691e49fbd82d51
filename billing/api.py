"""HTTP for the calling account: GET /account, POST /account/cod/credit-wallet."""

from __future__ import annotations

import re
from decimal import Decimal

from django.utils import timezone
from rest_framework import viewsets
from rest_framework.decorators import action

from billing.account import account_answer, beside_key
from billing.cod import CodExceedsOwed, CodNotCreditable, cod_summary, credit_wallet
from billing.schema import ACCOUNT, CREDIT_WALLET, CodCredited
from billing.services import read_wallet
from core.api import ApiError, envelope, json_body, validation_error
from core.formats import money

# A money string: digits, at most two decimals (the columns hold ten digits before them).
MONEY_TEXT = re.compile(r"[0-9]{1,10}(?:\.[0-9]{1,2})?\Z")


class AccountViewSet(viewsets.ViewSet):
    at = None  # the moment of GET /account's answer, once its read is asked

    def read_beside_key(self, request, environment: str):
        """GET /account's one read, made by the key's statement (accounts.auth.BesideKey)."""
        if self.action != "list":
            return None
        self.at = timezone.now()
        return beside_key(environment, self.at)

    @ACCOUNT
    def list(self, request):
        # Built as the wire shape (billing.schema.Account documents it; a test holds the two
        # equal): rendering through the nested serializers cost more than the reads.
        rows = request.auth.beside
        return envelope(
            account_answer(
                business=request.auth.business,
                environment=request.auth.environment,
                at=self.at or timezone.now(),
                row=rows[0] if rows else None,
            )
        )

    @CREDIT_WALLET
    @action(detail=False, methods=["post"], url_path="cod/credit-wallet")
    def credit_wallet(self, request):
        business, environment = request.auth.business, request.auth.environment
        amount = _amount_of(json_body(request))
        try:
            credit_wallet(business=business, environment=environment, amount=amount)
        except CodExceedsOwed as refused:
            raise ApiError(409, "COD_EXCEEDS_OWED", str(refused)) from refused
        except CodNotCreditable as refused:
            raise ApiError(409, "COD_NOT_CREDITABLE", str(refused)) from refused
        wallet = read_wallet(business=business, environment=environment)
        data = {
            "credited": money(amount),
            "cod": _cod(business, environment),
            "wallet": {"balance": money(wallet.balance), "owed": money(wallet.owed)},
        }
        return envelope(CodCredited(data).data)


def _cod(business, environment: str) -> dict[str, str]:
    """GET /account's `cod`, as money strings (docs/contract.md §18)."""
    summary = cod_summary(business=business, environment=environment)
    return {name: money(value) for name, value in summary.items()}


def _amount_of(body) -> Decimal:
    """The body's `amount`: a money string of at least 0.01; every problem a 400 naming it."""
    if not isinstance(body, dict):
        raise validation_error([{"field": "", "message": 'Send a JSON object: {"amount": "…"}.'}])
    problems = [{"field": name, "message": "Unknown field."} for name in body if name != "amount"]
    amount = body.get("amount")
    if amount is None:
        problems.append({"field": "amount", "message": "This field is required."})
    elif not isinstance(amount, str) or not MONEY_TEXT.match(amount) or not Decimal(amount) > 0:
        message = 'Must be a money string of at least 0.01, such as "25.00".'
        problems.append({"field": "amount", "message": message})
    if problems:
        raise validation_error(problems)
    return Decimal(amount)
