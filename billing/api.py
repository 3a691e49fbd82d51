"""HTTP for the calling account: GET /account."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import viewsets

from billing.services import account_summary
from config.openapi import ACCOUNT
from core.api import envelope


class AccountViewSet(viewsets.ViewSet):
    @ACCOUNT
    def list(self, request):
        business, environment = request.auth.business, request.auth.environment
        data = {
            "business": {"id": str(business.pk), "name": business.name},
            "environment": environment,
            **account_summary(business=business, environment=environment, at=timezone.now()),
        }
        return envelope(data)
