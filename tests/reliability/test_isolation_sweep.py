"""Isolation sweep (docs/contract.md §1, §3, §5): every endpoint, asked by one business and
environment about another's identifiers, answers 404 / NOT_FOUND and never shows data.

Four scopes (alice and bob, each in sandbox and live) hold the same client_order_ids in a
byte-identical batch sent with the same client_batch_id and the same Idempotency-Key, so
a lookup that forgets the business or the environment finds the wrong drop and shows it.
Every (caller, owner) pair is swept; the owner's drops, events, ledger and wallet are
compared before and after each call that could change them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db import transaction
from django.test import Client

from accounts.models import ApiKey, Membership
from billing.models import LedgerEntry, Wallet
from console.provisioning import provision_business
from core.formats import money
from geo.demo import seed_region
from orders.models import DeliveryEvent, Drop
from tests.factories import UserFactory, batch, drop, group
from tests.fixtures import OPEN_HOURS, Api, Tenant

pytestmark = pytest.mark.django_db

SCOPES = ("alice-sandbox", "alice-live", "bob-sandbox", "bob-live")
PAIRS = [
    pytest.param(caller, owner, id=f"{caller}-asks-about-{owner}")
    for caller in SCOPES
    for owner in SCOPES
    if caller != owner
]
BUSINESS_PAIRS = [
    pytest.param("alice", "bob", id="alice-asks-about-bob"),
    pytest.param("bob", "alice", id="bob-asks-about-alice"),
]
SHARED_IDS = ("SHARED-1", "SHARED-2", "SHARED-3")
# Sent by all four scopes, byte for byte: each must be processed as its own first batch.
SHARED_BATCH = batch(
    group(drop("SHARED-1"), drop("SHARED-2")),
    group(drop("SHARED-3")),
    client_batch_id="SHARED-BATCH",
)
SHARED_IDEMPOTENCY_KEY = "5b0c2a7e-0000-4000-8000-000000000001"
# Distinct balances, so a wallet shown to the wrong scope cannot pass for the right one.
BALANCES = {
    "alice-sandbox": "1000.00",
    "alice-live": "2000.00",
    "bob-sandbox": "3000.00",
    "bob-live": "4000.00",
}


@dataclass
class Scope:
    """One business in one environment, with what it created."""

    label: str
    tenant: Tenant
    environment: str
    batch_ids: list[str] = field(default_factory=list)
    drop_ids: dict[str, str] = field(default_factory=dict)  # client_order_id -> drop_id
    order_ids: set[str] = field(default_factory=set)
    replayed: list[bool] = field(default_factory=list)

    @property
    def business(self):
        return self.tenant.business

    @property
    def key(self) -> str:
        return self.tenant.key(self.environment)

    @property
    def api_key(self) -> ApiKey:
        return ApiKey.objects.get(business=self.business, environment=self.environment)

    @property
    def only_id(self) -> str:
        """A client_order_id that only this scope has."""
        return f"ONLY-{self.label}"

    @property
    def only_idempotency_key(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, self.label))

    def ids(self) -> set[str]:
        return {*self.batch_ids, *self.drop_ids.values(), *self.order_ids}

    def hidden_from(self, caller: Scope) -> set[str]:
        """What `caller` must never see of this scope: its ids, and, for another
        business, who it is."""
        private = {*self.ids(), self.api_key.hint}
        if caller.business != self.business:
            private |= {str(self.business.pk), self.business.name}
        return private

    def balance(self) -> Decimal:
        return Wallet.objects.get(business=self.business, environment=self.environment).balance

    def snapshot(self) -> dict:
        """Everything of this scope that a call could change."""
        drops = Drop.objects.filter(business=self.business, environment=self.environment)
        ledger = LedgerEntry.objects.filter(
            wallet__business=self.business, wallet__environment=self.environment
        )
        return {
            "drops": sorted(drops.values_list("id", "status", "updated_at")),
            "events": DeliveryEvent.objects.filter(drop__in=drops).count(),
            "ledger": sorted(ledger.values_list("id", "kind", "amount")),
            "balance": self.balance(),
        }


def accepted_batch(api, scope: Scope, body: dict, idempotency_key: str):
    reply = api.bulk(body, scope.key, idempotency_key)
    assert reply.status_code == 200, reply.content
    data = reply.json()["data"]
    assert data["counts"]["rejected"] == 0, data
    scope.replayed.append(reply.get("Idempotent-Replayed") == "true")
    scope.batch_ids.append(data["batch_id"])
    for entry in data["orders"]:
        scope.drop_ids[entry["client_order_id"]] = entry["drop_id"]
        scope.order_ids.add(entry["pass_order_id"])


def seed_world() -> dict[str, Scope]:
    api = Api()
    seed_region()
    tenants = {}
    for name in ("alice", "bob"):
        provisioned = provision_business(
            name=f"{name.title()} Shop",
            email=f"{name}@example.com",
            sandbox_balance=Decimal(BALANCES[f"{name}-sandbox"]),
            live_balance=Decimal(BALANCES[f"{name}-live"]),
        )
        tenants[name] = Tenant(provisioned.business, provisioned.sandbox_key, provisioned.live_key)
    scopes = {}
    for label in SCOPES:
        name, environment = label.split("-")
        scope = scopes[label] = Scope(label, tenants[name], environment)
        accepted_batch(api, scope, SHARED_BATCH, SHARED_IDEMPOTENCY_KEY)
        only = batch(group(drop(scope.only_id)), client_batch_id=f"ONLY-BATCH-{label}")
        accepted_batch(api, scope, only, scope.only_idempotency_key)
    return scopes


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker) -> Iterator[dict[str, Scope]]:
    """The four scopes, seeded once for the module inside a transaction that is rolled back
    at its end, as Django's TestCase.setUpTestData does: each test runs in a savepoint
    within it (pytestmark django_db), so no test sees another's changes."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            # An hour before the `clock` fixture's time: open, and earlier than any test.
            with time_machine.travel(OPEN_HOURS - timedelta(hours=1), tick=True):
                scopes = seed_world()
            yield scopes
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def dashboard_of():
    """A logged-in dashboard client for a user of `business`."""

    def login(business) -> Client:
        user = UserFactory()
        Membership.objects.create(user=user, business=business, is_owner=True)
        web = Client()
        web.force_login(user)
        return web

    return login


def assert_not_found(reply) -> None:
    assert reply.status_code == 404, reply.content
    assert reply["Content-Type"] == "application/json"
    body = reply.json()
    assert body["success"] is False
    assert body["error"]["code"] == "NOT_FOUND"


def assert_nothing_of(owner: Scope, caller: Scope, content: bytes, echoed=frozenset()) -> None:
    """None of owner's secrets in the body, except identifiers the caller sent, which may
    come back once as the `client_order_id` of a NOT_FOUND entry."""
    text = content.decode()
    shown = {
        value: text.count(value)
        for value in owner.hidden_from(caller)
        if text.count(value) != (1 if value in echoed else 0)
    }
    assert not shown, f"{caller.label} was shown {owner.label}'s {shown}"


def entries_of(reply) -> dict[str, dict]:
    assert reply.status_code == 200, reply.content
    return {entry["client_order_id"]: entry for entry in reply.json()["data"]["orders"]}


def not_found_entry(identifier: str, *, with_error: bool) -> dict:
    entry = {"client_order_id": identifier, "status": "NOT_FOUND"}
    if with_error:
        entry["error"] = {"code": "NOT_FOUND", "message": "No order with this client_order_id."}
    return entry


# --- the same ids, the same batch, the same keys: four separate scopes ---------------------


def test_the_same_batch_key_and_ids_make_four_separate_batches(world):
    for scope in world.values():
        assert scope.replayed == [False, False], scope.label
    for a in world.values():
        for b in world.values():
            if a is not b:
                assert not a.ids() & b.ids(), (a.label, b.label)
    assert Drop.objects.filter(client_order_id="SHARED-1").count() == 4


# --- reads ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_a_batch_of_another_business_or_environment_is_not_found(world, api, caller, owner):
    me, them = world[caller], world[owner]
    for batch_id in them.batch_ids:
        reply = api.get(f"/batches/{batch_id}", me.key)
        assert_not_found(reply)
        assert_nothing_of(them, me, reply.content)
    for batch_id in me.batch_ids:  # the caller's own batch, same client ids: only its own
        reply = api.get(f"/batches/{batch_id}", me.key)
        assert reply.status_code == 200, reply.content
        assert_nothing_of(them, me, reply.content)


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_tracking_finds_only_the_callers_own_drops(world, api, caller, owner):
    me, them = world[caller], world[owner]
    foreign = sorted(them.ids())  # service ids are not identifiers, and not the caller's
    reply = api.track([*SHARED_IDS, them.only_id, *foreign], me.key)

    entries = entries_of(reply)
    for client_order_id in SHARED_IDS:
        assert entries[client_order_id]["drop_id"] == me.drop_ids[client_order_id]
        assert entries[client_order_id]["environment"] == me.environment
    for identifier in [them.only_id, *foreign]:
        assert entries[identifier] == not_found_entry(identifier, with_error=False)
    assert_nothing_of(them, me, reply.content, echoed=set(foreign))


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_the_account_shows_only_the_callers_business_and_environment(world, api, caller, owner):
    me, them = world[caller], world[owner]
    reply = api.get("/account", me.key)

    assert reply.status_code == 200, reply.content
    data = reply.json()["data"]
    assert data["business"] == {"id": str(me.business.pk), "name": me.business.name}
    assert data["environment"] == me.environment
    assert data["wallet"] == {"balance": money(me.balance()), "owed": "0.00"}
    assert me.balance() != them.balance()
    assert_nothing_of(them, me, reply.content)


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_service_areas_carry_nothing_of_any_account(world, api, caller, owner):
    me, them = world[caller], world[owner]
    reply = api.get("/service-areas", me.key)

    assert reply.status_code == 200, reply.content
    assert reply.content == api.get("/service-areas", them.key).content
    assert_nothing_of(them, me, reply.content)


# --- writes -------------------------------------------------------------------------------


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_cancel_never_touches_another_scopes_drops(world, api, caller, owner):
    me, them = world[caller], world[owner]
    before = them.snapshot()
    foreign = sorted(them.drop_ids.values())
    identifiers = ["SHARED-1", them.only_id, *foreign]

    reply = api.post("/orders/cancel", {"identifiers": identifiers}, me.key)

    entries = entries_of(reply)
    # The shared id is the caller's own drop, and that one is cancelled: the call acted.
    assert entries["SHARED-1"]["drop_id"] == me.drop_ids["SHARED-1"]
    assert entries["SHARED-1"]["status"] == "CANCELLED"
    for identifier in [them.only_id, *foreign]:
        assert entries[identifier] == not_found_entry(identifier, with_error=True)
    assert them.snapshot() == before
    assert Drop.objects.get(pk=them.drop_ids["SHARED-1"]).status == "PENDING"
    assert_nothing_of(them, me, reply.content, echoed=set(foreign))


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_the_sandbox_driver_never_moves_another_scopes_drops(world, api, caller, owner):
    me, them = world[caller], world[owner]
    before, mine_before = them.snapshot(), me.snapshot()
    body = {"identifiers": ["SHARED-2", them.only_id], "to": "DELIVERED"}

    reply = api.post("/sandbox/orders/advance", body, me.key)

    if me.environment == "live":
        assert reply.status_code == 403, reply.content
        assert reply.json()["error"]["code"] == "SANDBOX_ONLY"
        assert me.snapshot() == mine_before
    else:
        entries = entries_of(reply)
        assert entries["SHARED-2"]["drop_id"] == me.drop_ids["SHARED-2"]
        assert entries["SHARED-2"]["status"] == "DELIVERED"
        assert entries[them.only_id] == not_found_entry(them.only_id, with_error=True)
    assert them.snapshot() == before
    assert_nothing_of(them, me, reply.content)


@pytest.mark.parametrize(("caller", "owner"), PAIRS)
def test_duplicate_check_client_batch_id_and_idempotency_key_are_scoped(
    world, api, clock, caller, owner
):
    """The owner's active client_order_id, client_batch_id and Idempotency-Key, reused by
    the caller with another body: processed as the caller's own first batch."""
    me, them = world[caller], world[owner]
    before = them.snapshot()
    body = batch(
        group(drop(them.only_id), drop("SHARED-3")),
        client_batch_id=f"ONLY-BATCH-{them.label}",
    )

    reply = api.bulk(body, me.key, them.only_idempotency_key)

    assert reply.status_code == 200, reply.content
    assert "Idempotent-Replayed" not in reply
    data = reply.json()["data"]
    assert data["batch_id"] not in them.batch_ids
    first, second = data["orders"]
    assert first["status"] == "accepted", first
    assert first["drop_id"] not in them.ids()
    # The caller's own active SHARED-3 still counts: the check is scoped, not switched off.
    assert second["failure_reason"] == "DUPLICATE_CLIENT_ORDER_ID"
    assert them.snapshot() == before
    assert_nothing_of(them, me, reply.content)


# --- the dashboard: pages that take an id, and the lists ---------------------------------


@pytest.mark.parametrize(("viewer", "owner"), BUSINESS_PAIRS)
def test_dashboard_pages_of_another_business_are_404(world, dashboard_of, viewer, owner):
    mine = world[f"{viewer}-sandbox"]
    theirs = [world[f"{owner}-sandbox"], world[f"{owner}-live"]]
    before = [scope.snapshot() for scope in theirs]
    web = dashboard_of(mine.business)
    private = {value for scope in theirs for value in scope.hidden_from(mine)}
    private |= {scope.only_id for scope in theirs}

    def assert_private(content: bytes, echoed: str | None = None) -> None:
        text = content.decode()
        assert not {value for value in private - {echoed} if value in text}

    paths = [
        *[f"/orders/{drop_id}/" for scope in theirs for drop_id in scope.drop_ids.values()],
        *[f"/batches/{batch_id}/" for scope in theirs for batch_id in scope.batch_ids],
        *[f"/keys/{scope.api_key.pk}/revoke/" for scope in theirs],
    ]
    for path in paths:
        reply = web.get(path)
        assert reply.status_code == 404, path
        assert_private(reply.content)
    for scope in theirs:
        reply = web.post(f"/keys/{scope.api_key.pk}/revoke/")
        assert reply.status_code == 404
        assert scope.api_key.is_active

    # The lists show the viewer's own rows (the same client ids), never the owner's.
    for path in [
        "/",
        "/orders/",
        "/orders/?q=SHARED",
        "/orders/?q=ONLY",
        "/batches/",
        "/keys/",
        "/wallet/?environment=sandbox",
        "/wallet/?environment=live",
        "/sandbox/",
        f"/orders/{mine.drop_ids['SHARED-1']}/",
        f"/batches/{mine.batch_ids[0]}/",
    ]:
        reply = web.get(path)
        assert reply.status_code == 200, path
        assert_private(reply.content)
    assert mine.drop_ids["SHARED-1"] in web.get("/orders/?q=SHARED").content.decode()

    # The sandbox console's driver takes a client_order_id: the owner's only one is unknown,
    # a shared one moves the viewer's own drop.
    refused = web.post("/sandbox/advance/", {"client_order_id": theirs[0].only_id})
    assert refused.status_code == 400
    assert_private(refused.content, echoed=theirs[0].only_id)
    moved = web.post("/sandbox/advance/", {"client_order_id": "SHARED-1", "to": "DELIVERED"})
    assert moved.status_code == 302
    assert moved["Location"] == f"/orders/{mine.drop_ids['SHARED-1']}/"
    assert Drop.objects.get(pk=mine.drop_ids["SHARED-1"]).status == "DELIVERED"
    assert [scope.snapshot() for scope in theirs] == before
