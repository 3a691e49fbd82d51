"""DRF authentication by API key: `Authorization: Bearer svc_test_…|svc_live_…`."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.keys import COURIER_TOKEN_PREFIX, ENVIRONMENT_OF_MARKER, KEY_PATTERN, digest_of
from accounts.models import ApiKey, Business
from core import counters, throttling
from core.reads import compiled_once, row_compiled_once

LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """Who is calling: a business, in one environment, through one key."""

    business: Business
    environment: str
    key: ApiKey
    is_authenticated: bool = True


# The key, its business and the business's pricing plan, read as one row on PostgreSQL: the
# SQL Django compiles for them is kept (core.reads.row_compiled_once), and the three models
# are made from the row as Django's select_related makes them (Model.from_db). Compiling the
# three-table join and walking its related selections cost Django ~1 ms a request, more
# than the database takes to answer (docs/decisions.md, "The small calls' SQL and reference
# data are compiled once per process").
_PLAN = Business._meta.get_field("pricing_plan").related_model
_PATHS = ((ApiKey, ""), (Business, "business__"), (_PLAN, "business__pricing_plan__"))
_PARTS = [(model, [f.attname for f in model._meta.concrete_fields]) for model, _ in _PATHS]
_COLUMNS = [
    prefix + name for (_, prefix), (_, names) in zip(_PATHS, _PARTS, strict=True) for name in names
]
_READ = ("api key by digest",)


def unrevoked_key(
    digest: str, hit: throttling.Hit | None = None
) -> tuple[ApiKey | None, counters.Window | None]:
    """The unrevoked key with this digest, with its business and plan loaded (else None),
    and `hit` counted on the key's counter by the same statement (core.counters.count_with_row):
    the counter's window, None when `hit` is None or no key was found."""
    if connection.vendor != "postgresql":  # the embedded default: the ORM's own types
        key = (
            ApiKey.objects.select_related("business__pricing_plan")
            .filter(digest=digest, revoked_at__isnull=True)
            .first()
        )
        return key, None

    def read():
        return (
            ApiKey.objects.filter(digest=digest, revoked_at__isnull=True)
            .order_by("pk")
            .values_list(*_COLUMNS)[:1]
        )

    if hit is None:
        row, window = row_compiled_once(_READ, [digest], read), None
    else:
        sql, params = compiled_once(_READ, [digest], read)
        row, window = counters.count_with_row(
            hit.prefix, hit.rate.period, sql, params, width=len(_COLUMNS), now=hit.now
        )
    return (None if row is None else _key_of(row)), window


def _key_of(row: tuple) -> ApiKey:
    made, start = [], 0
    for model, names in _PARTS:
        values = row[start : start + len(names)]
        start += len(names)
        made.append(None if values[0] is None else model.from_db(connection.alias, names, values))
    key, business, plan = made
    business.pricing_plan = plan  # None when the business has none (the join found no row)
    key.business = business
    return key


def _malformed(token: str) -> str:
    """Why a bearer token is no API key: a courier's token says what it is, and where it works."""
    if token.startswith(COURIER_TOKEN_PREFIX):
        return (
            "This is a courier token, not an API key: courier tokens work only in the courier "
            "API (/api/v1/courier/). Send the business's API key (svc_test_… or svc_live_…)."
        )
    return "The API key is malformed."


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
            raise exceptions.AuthenticationFailed(_malformed(token))
        digest = digest_of(token)
        # The call's rate-limit hit: counted by the statement that reads the key where the
        # counters are in PostgreSQL (a round trip fewer on every call: docs/decisions.md,
        # "Rate counters live in an unlogged table, or in Redis"), else right after it;
        # never for a key that is not found.
        hit = throttling.hit_ahead(request)
        joined = hit if hit is not None and counters.counts_with_rows() else None
        key, window = unrevoked_key(digest, joined)
        # The digest was found through a unique index; compare in constant time anyway.
        if key is None or not hmac.compare_digest(key.digest, digest):
            raise exceptions.AuthenticationFailed("The API key is unknown or revoked.")
        if hit is not None:
            throttling.counted(request, hit, key.pk, window)
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
