"""Who may call the API: the key's account must be active, and live keys need live access.

DRF's split (STYLE.md): authentication says who is calling (accounts.auth), these
permission classes say whether that caller may; each refusal is a 403 with its own code.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from accounts.models import Environment
from core.api import ApiError


class AccountIsActive(BasePermission):
    """ACCOUNT_SUSPENDED: an operator suspended the business, or it has no API access yet."""

    def has_permission(self, request, view) -> bool:
        business = request.auth.business
        if business.is_suspended:
            raise ApiError(403, "ACCOUNT_SUSPENDED", "This account is suspended.")
        if not business.can_use_sandbox:
            raise ApiError(403, "ACCOUNT_SUSPENDED", "This account has no API access.")
        return True


class LiveAccessEnabled(BasePermission):
    """LIVE_ACCESS_DISABLED: a live key of a business whose live access is not switched on."""

    def has_permission(self, request, view) -> bool:
        if request.auth.environment == Environment.LIVE and not request.auth.business.is_live:
            raise ApiError(
                403, "LIVE_ACCESS_DISABLED", "Live access is not enabled for this account."
            )
        return True


class SandboxKeyOnly(BasePermission):
    """SANDBOX_ONLY: the sandbox test driver moves sandbox drops only."""

    def has_permission(self, request, view) -> bool:
        if request.auth.environment != Environment.SANDBOX:
            raise ApiError(403, "SANDBOX_ONLY", "The test driver works with sandbox keys only.")
        return True
