"""Account-state 403s are DRF permissions (accounts/permissions.py), not authentication."""

from __future__ import annotations

from django.test import RequestFactory
from rest_framework.settings import api_settings

from accounts.auth import ApiKeyAuthentication
from accounts.permissions import AccountIsActive, LiveAccessEnabled, SandboxKeyOnly
from accounts.services import suspend
from tests.helpers import assert_error
from tracking.api import SandboxViewSet


def test_authentication_names_a_suspended_caller_and_leaves_the_refusal_to_permissions(alice):
    suspend(business=alice.business)
    request = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}")

    principal, _ = ApiKeyAuthentication().authenticate(request)

    assert principal.business == alice.business


def test_every_api_call_checks_the_account_and_live_access():
    assert AccountIsActive in api_settings.DEFAULT_PERMISSION_CLASSES
    assert LiveAccessEnabled in api_settings.DEFAULT_PERMISSION_CLASSES
    assert SandboxViewSet.permission_classes[-1] is SandboxKeyOnly


def test_a_suspended_account_is_refused_before_the_live_check(make_tenant, api):
    tenant = make_tenant(stage="approved")  # no live access, a sandbox key only
    suspend(business=tenant.business)
    response = api.get("/account", tenant.sandbox_key)
    assert_error(response, 403, "ACCOUNT_SUSPENDED")


def test_the_test_driver_refuses_a_live_key_with_sandbox_only(alice, api):
    response = api.post("/sandbox/orders/advance", {"identifiers": ["X"]}, alice.live_key)
    assert_error(response, 403, "SANDBOX_ONLY")
