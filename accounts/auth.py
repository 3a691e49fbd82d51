"""DRF authentication by API key: `Authorization: Bearer svc_test_…|svc_live_…`."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.keys import ENVIRONMENT_OF_MARKER, KEY_PATTERN, digest_of
from accounts.models import ApiKey, Business

LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """Who is calling: a business, in one environment, through one key."""

    business: Business
    environment: str
    key: ApiKey
    is_authenticated: bool = True


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None  # another scheme: not ours to judge
        token = token.strip()
        if not KEY_PATTERN.match(token):
            raise exceptions.AuthenticationFailed("The API key is malformed.")
        digest = digest_of(token)
        key = (
            ApiKey.objects.select_related("business__pricing_plan")
            .filter(digest=digest, revoked_at__isnull=True)
            .first()
        )
        # The digest was found through a unique index; compare in constant time anyway.
        if key is None or not hmac.compare_digest(key.digest, digest):
            raise exceptions.AuthenticationFailed("The API key is unknown or revoked.")
        # Whether this account may call at all is for the permission classes
        # (accounts.permissions): authentication only says who is calling.
        environment = ENVIRONMENT_OF_MARKER[token[:9]]
        self._touch(key)
        principal = KeyPrincipal(business=key.business, environment=environment, key=key)
        return principal, principal

    def authenticate_header(self, request):
        return self.keyword

    @staticmethod
    def _touch(key: ApiKey) -> None:
        # Written at most once a minute, so a busy key costs no extra write per request.
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
