"""Shared fixtures: the demo region at a time it is open, provisioned businesses, an API client.

alice is the business under test; bob is a stranger whose data alice must never see.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest
import time_machine
from django.test import Client

from accounts.models import Business, Membership
from console.provisioning import provision_business
from geo.demo import seed_region
from tests.factories import UserFactory

# Monday 2026-11-23 10:00 in Phnom Penh (UTC+7): inside the demo area's 07:00–21:00.
OPEN_HOURS = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    """The clock, moved to business hours and ticking; `clock.move_to(...)` moves it."""
    with time_machine.travel(OPEN_HOURS, tick=True) as traveller:
        yield traveller


@pytest.fixture
def region(db):
    return seed_region()


@pytest.fixture
def open_for_business(region, clock):
    return clock


@dataclass
class Tenant:
    business: Business
    sandbox_key: str | None
    live_key: str | None

    def key(self, environment: str = "sandbox") -> str:
        return self.sandbox_key if environment == "sandbox" else self.live_key


@pytest.fixture
def make_tenant(db):
    counter = iter(range(1, 10_000))

    def make(*, recipient_language: str = "en", **options) -> Tenant:
        """A provisioned business. Its recipients' language is English unless a test asks
        for another (the product's default is Khmer, docs/contract.md §26): the suite reads
        the English words of pages and messages."""
        n = next(counter)
        options.setdefault("name", f"Tenant {n}")
        options.setdefault("email", f"tenant{n}-{uuid.uuid4().hex[:6]}@example.com")
        for money in ("live_balance", "sandbox_balance", "base_fee", "per_km_fee", "included_km"):
            if money in options:
                options[money] = Decimal(str(options[money]))
        result = provision_business(**options)
        result.business.recipient_language = recipient_language
        result.business.save(update_fields=["recipient_language"])
        return Tenant(result.business, result.sandbox_key, result.live_key)

    return make


@pytest.fixture
def alice(make_tenant) -> Tenant:
    return make_tenant(name="Alice Shop", live_balance="100.00")


@pytest.fixture
def bob(make_tenant) -> Tenant:
    return make_tenant(name="Bob Shop", live_balance="100.00")


class Api:
    """A thin JSON client for /api/v1 (Django's test client: safe to use from threads)."""

    def __init__(self) -> None:
        self.client = Client()

    def _headers(self, key: str | None, extra: dict | None = None) -> dict:
        headers = {}
        if key:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
        for name, value in (extra or {}).items():
            headers["HTTP_" + name.upper().replace("-", "_")] = value
        return headers

    def post(
        self, path: str, body, key: str | None, headers: dict | None = None, raw: bool = False
    ):
        data = body if raw else orjson.dumps(body)
        return self.client.post(
            f"/api/v1{path}", data, content_type="application/json", **self._headers(key, headers)
        )

    def get(self, path: str, key: str | None, headers: dict | None = None):
        return self.client.get(f"/api/v1{path}", **self._headers(key, headers))

    def bulk(self, body, key: str, idempotency_key: str | None = None, headers: dict | None = None):
        extra = {"Idempotency-Key": idempotency_key or str(uuid.uuid4()), **(headers or {})}
        return self.post("/orders/bulk", body, key, extra)

    def track(self, identifiers, key: str):
        return self.post("/orders/tracking", {"identifiers": identifiers}, key)


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def member():
    """A logged-in client for a dashboard user of `business`."""

    def make(business: Business) -> Client:
        user = UserFactory()
        Membership.objects.create(user=user, business=business, is_owner=True)
        client = Client()
        client.force_login(user)
        client.user = user
        return client

    return make


@pytest.fixture
def alice_web(alice, member) -> Client:
    return member(alice.business)


@pytest.fixture
def bob_web(bob, member) -> Client:
    return member(bob.business)
