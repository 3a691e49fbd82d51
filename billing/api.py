"""HTTP for the calling account: GET /account."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import viewsets

from billing.schema import ACCOUNT, Account
from billing.services import account_summary
from core.api import envelope


class AccountViewSet(viewsets.ViewSet):
    @ACCOUNT
    def list(self, request):
        business, environment = request.auth.business, request.auth.environment
        summary = account_summary(business=business, environment=environment, at=timezone.now())
        data = {"business": business, "environment": environment, **summary}
        return envelope(Account(data).data)
