"""HTTP for the calling account: GET /account, POST /account/cod/credit-wallet."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import viewsets
from rest_framework.decorators import action

from billing.account import account_answer
from billing.cod import CodExceedsOwed, CodNotCreditable, cod_summary, credit_wallet
from billing.inputs import parse_credit
from billing.schema import ACCOUNT, CREDIT_WALLET, CodCredited
from billing.services import read_wallet
from core.api import ApiError, envelope, json_body
from core.formats import money


class AccountViewSet(viewsets.ViewSet):
    @ACCOUNT
    def list(self, request):
        # Built as the wire shape (billing.schema.Account documents it; a test holds the two
        # equal): rendering through the nested serializers cost more than the reads.
        return envelope(
            account_answer(
                business=request.auth.business,
                environment=request.auth.environment,
                at=timezone.now(),
            )
        )

    @CREDIT_WALLET
    @action(detail=False, methods=["post"], url_path="cod/credit-wallet")
    def credit_wallet(self, request):
        business, environment = request.auth.business, request.auth.environment
        amount = parse_credit(json_body(request))
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
