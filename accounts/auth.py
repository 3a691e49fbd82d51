"""DRF authentication by API key: `Authorization: Bearer svc_test_…|svc_live_…`."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.keys import COURIER_TOKEN_PREFIX, ENVIRONMENT_OF_MARKER, KEY_PATTERN, digest_of
from accounts.models import ApiKey, Business
from core import counters, throttling
from core.api import view_of
from core.reads import compiled_once, row_compiled_once

LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """Who is calling: a business, in one environment, through one key."""

    business: Business
    environment: str
    key: ApiKey
    is_authenticated: bool = True
    # The rows of the view's BesideKey, read by the key's statement; None when it asked
    # for none or they were not read so (the view reads them itself).
    beside: list[tuple] | None = None


@dataclass(frozen=True, slots=True)
class BesideKey:
    """A read a view asks to be made by the statement that reads the caller's key (and
    counts its call), saving a round trip on a call whose own work is one small read
    (docs/decisions.md, "Issue 34"). Asked of the view's `read_beside_key(request,
    environment)` before its permissions are checked: its rows reach the view only once
    they pass (KeyPrincipal.beside), and they are read only on PostgreSQL with the counters
    there (core.counters.count_with_row); elsewhere the view reads them itself.
    """

    key: Hashable  # names the SQL, kept once compiled (core.reads.compiled_once)
    params: Sequence  # the values Django binds, in its order
    queryset: Callable[[], QuerySet]  # a values_list, filtered by KEY_BUSINESS
    columns: int  # how many the values_list has


# The key, its business and the business's pricing plan, read as one row on PostgreSQL: the
# SQL Django compiles for them is kept (core.reads.row_compiled_once), and the three models
# are made from the row as Django's select_related makes them (Model.from_db). Compiling the
# three-table join and walking its related selections cost Django ~1 ms a request, more
# than the database takes to answer (docs/decisions.md, issue 18).
_PLAN = Business._meta.get_field("pricing_plan").related_model
_PATHS = ((ApiKey, ""), (Business, "business__"), (_PLAN, "business__pricing_plan__"))
_PARTS = [(model, [f.attname for f in model._meta.concrete_fields]) for model, _ in _PATHS]
_COLUMNS = [
    prefix + name for (_, prefix), (_, names) in zip(_PATHS, _PARTS, strict=True) for name in names
]
_READ = ("api key by digest",)
# The calling key's business in a BesideKey's queryset: the id the key's statement found.
KEY_BUSINESS = RawSQL(f"{counters.SUBJECT}.c{_COLUMNS.index('business_id')}", ())


def unrevoked_key(
    digest: str, hit: throttling.Hit | None = None
) -> tuple[ApiKey | None, counters.Window | None]:
    """The unrevoked key with this digest, with its business and plan loaded (else None),
    and `hit` counted on the key's counter by the same statement (core.counters.count_with_row):
    the counter's window, None when `hit` is None or no key was found."""
    key, window, _ = _read_key(digest, hit)
    return key, window


def _read_key(
    digest: str, hit: throttling.Hit | None, beside: BesideKey | None = None
) -> tuple[ApiKey | None, counters.Window | None, list[tuple] | None]:
    """unrevoked_key's, and the rows of `beside` when `hit` is counted by the statement."""
    if connection.vendor != "postgresql":  # the embedded default: the ORM's own types
        key = (
            ApiKey.objects.select_related("business__pricing_plan")
            .filter(digest=digest, revoked_at__isnull=True)
            .first()
        )
        return key, None, None

    def read():
        return (
            ApiKey.objects.filter(digest=digest, revoked_at__isnull=True)
            .order_by("pk")
            .values_list(*_COLUMNS)[:1]
        )

    if hit is None:
        row, window, rows = row_compiled_once(_READ, [digest], read), None, None
    else:
        sql, params = compiled_once(_READ, [digest], read)
        also = None if beside is None else (*compiled_once(*_fields(beside)), beside.columns)
        found = counters.count_with_row(
            hit.prefix, hit.rate.period, sql, params, width=len(_COLUMNS), now=hit.now, beside=also
        )
        row, window, rows = found.row, found.window, found.beside
    return (None if row is None else _key_of(row)), window, rows


def _fields(beside: BesideKey) -> tuple:
    return ("beside the key", beside.key), beside.params, beside.queryset


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
        environment = ENVIRONMENT_OF_MARKER[token[:9]]
        # The call's rate-limit hit: counted by the statement that reads the key where the
        # counters are in PostgreSQL (a round trip fewer on every call: docs/decisions.md,
        # issue 34), else right after it; never for a key that is not found. That statement
        # also makes the view's first read when it asks (BesideKey).
        hit = throttling.hit_ahead(request)
        joined = hit if hit is not None and counters.counts_with_rows() else None
        beside = None if joined is None else _beside_of(request, environment)
        key, window, rows = _read_key(digest, joined, beside)
        # The digest was found through a unique index; compare in constant time anyway.
        if key is None or not hmac.compare_digest(key.digest, digest):
            raise exceptions.AuthenticationFailed("The API key is unknown or revoked.")
        if hit is not None:
            throttling.counted(request, hit, key.pk, window)
        # Whether this account may call at all is for the permission classes
        # (accounts.permissions): authentication only says who is calling.
        self._touch(key)
        principal = KeyPrincipal(
            business=key.business, environment=environment, key=key, beside=rows
        )
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


def _beside_of(request, environment: str) -> BesideKey | None:
    """The read the request's view asks to be made beside the key, if any."""
    asked = getattr(view_of(request), "read_beside_key", None)
    return None if asked is None else asked(request, environment)
