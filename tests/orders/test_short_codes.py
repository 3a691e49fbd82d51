"""Every accepted drop has a short code (docs/contract.md §24): 8–12 of [0-9A-Z], unique per
environment (the database's unique index), in the bulk answer and the tracking entry; a batch
that draws a code some drop already has draws again instead of failing; the drops that
existed before codes got one each from the migration."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal

import psycopg
import pytest
from django.db import IntegrityError, transaction

import orders.services
from billing.models import LedgerEntry
from orders.models import Drop
from orders.short_codes import new_short_codes
from tests.factories import batch, drop, group
from tests.helpers import SCRIPT_WITH_A_TENANT, run_django_script

SHORT_CODE = re.compile(r"[0-9A-Z]{8,12}")


def accepted(api, key: str, *drops: dict) -> list[dict]:
    response = api.bulk(batch(group(*drops)), key)
    assert response.status_code == 200, response.content
    return response.json()["data"]["orders"]


def test_new_codes_are_8_to_12_of_digits_and_capitals_and_differ():
    codes = new_short_codes(10_000)
    assert len(codes) == 10_000
    assert all(SHORT_CODE.fullmatch(code) for code in codes)
    assert len(set(codes)) == 10_000
    assert new_short_codes(0) == [] and len(new_short_codes(1)) == 1


def test_every_accepted_drop_has_its_own_code_in_answer_row_and_tracking(
    open_for_business, make_tenant, api
):
    alice = make_tenant(name="Alice Shop", sandbox_balance="1000.00")
    answer = accepted(api, alice.sandbox_key, *[drop(f"S-{i}") for i in range(120)])
    stored = dict(Drop.objects.values_list("client_order_id", "short_code"))
    assert {e["client_order_id"]: e["short_code"] for e in answer} == stored
    assert all(SHORT_CODE.fullmatch(code) for code in stored.values())
    assert len(set(stored.values())) == 120  # across runs of the batch too (100 per run)

    tracked = api.track(["S-0", "S-119"], alice.sandbox_key).json()["data"]["orders"]
    assert [entry["short_code"] for entry in tracked] == [stored["S-0"], stored["S-119"]]
    listed = api.get("/orders?limit=200", alice.sandbox_key).json()["data"]["orders"]
    assert {entry["client_order_id"]: entry["short_code"] for entry in listed} == stored


def test_a_code_is_unique_within_an_environment_but_not_across_them(
    open_for_business, alice, bob, api
):
    [sandbox] = accepted(api, alice.sandbox_key, drop("U-1"))
    [other_sandbox] = accepted(api, bob.sandbox_key, drop("U-2"))
    [live] = accepted(api, alice.live_key, drop("U-3"))

    with pytest.raises(IntegrityError, match="drop_short_code_once"), transaction.atomic():
        Drop.objects.filter(pk=other_sandbox["drop_id"]).update(short_code=sandbox["short_code"])
    # The same code in the other environment names another drop there: allowed.
    Drop.objects.filter(pk=live["drop_id"]).update(short_code=sandbox["short_code"])


def test_a_batch_that_draws_a_taken_code_draws_again(
    open_for_business, alice, bob, api, monkeypatch
):
    [taken] = accepted(api, bob.sandbox_key, drop("T-1"))
    draws = []

    def first_draw_repeats_a_taken_code(count: int) -> list[str]:
        codes = new_short_codes(count)
        if not draws:  # the first run of the first try: its second drop repeats Bob's code
            codes[1] = taken["short_code"]
        draws.append(codes)
        return codes

    monkeypatch.setattr(orders.services, "new_short_codes", first_draw_repeats_a_taken_code)
    answer = accepted(api, alice.sandbox_key, drop("A-1"), drop("A-2"), drop("A-3"))

    assert [e["status"] for e in answer] == ["accepted"] * 3
    assert len(draws) == 2  # the refused try, then a fresh draw
    codes = [e["short_code"] for e in answer]
    assert codes == draws[1] and taken["short_code"] not in codes
    stored = dict(Drop.objects.filter(business=alice.business).values_list("pk", "short_code"))
    assert sorted(stored.values()) == sorted(codes)
    # Charged once for its three drops: the refused try's charges went with it.
    [debit] = LedgerEntry.objects.filter(batch__business=alice.business)
    assert -debit.amount == sum(Decimal(e["price"]) for e in answer)


def test_a_taken_code_and_a_taken_client_order_id_together_still_answer_right(
    open_for_business, alice, bob, api, monkeypatch
):
    [taken] = accepted(api, bob.sandbox_key, drop("T-1"))
    accepted(api, alice.sandbox_key, drop("DUP"))
    draws = []

    def first_draw_repeats_a_taken_code(count: int) -> list[str]:
        codes = new_short_codes(count)
        if not draws:
            codes[0] = taken["short_code"]
        draws.append(codes)
        return codes

    monkeypatch.setattr(orders.services, "new_short_codes", first_draw_repeats_a_taken_code)
    answer = accepted(api, alice.sandbox_key, drop("NEW"), drop("DUP"))
    assert [(e["client_order_id"], e["status"]) for e in answer] == [
        ("NEW", "accepted"),
        ("DUP", "rejected"),
    ]
    assert answer[1]["failure_reason"] == "DUPLICATE_CLIENT_ORDER_ID"
    assert answer[0]["short_code"] != taken["short_code"]


# --- The migration: every drop of before gets its own code ---------------------------------

BACKFILL_SCRIPT = (
    SCRIPT_WITH_A_TENANT
    + r"""
from django.db import connection
from orders.inputs import parse_batch
from orders.models import Drop
from orders.services import create_batch

body = {"client_batch_id": "b1", "orders": [{"pickup": {"name": "Shop", "phone": "+85512345678",
        "lat": 11.5564, "long": 104.9282}, "dropoff": [
        {"client_order_id": f"C-{i}", "dropoff": {"name": "R", "phone": "+85512345679",
         "lat": 11.5696, "long": 104.921}} for i in range(15)]}]}
import time_machine
from datetime import datetime, UTC
with time_machine.travel(datetime(2026, 11, 23, 3, 0, tzinfo=UTC), tick=False):
    for client_batch_id in ("b1", "b2"):
        body["client_batch_id"] = client_batch_id
        for number, dropped in enumerate(body["orders"][0]["dropoff"]):
            dropped["client_order_id"] = f"{client_batch_id}-{number}"
        create_batch(business=tenant.business, environment="sandbox",
                     idempotency_key=uuid.uuid4(), batch=parse_batch(body), base_url="http://x")
before = sorted(Drop.objects.values_list("id", "client_order_id", "environment", "status"))

# Back to before codes (the column goes), then forward: each drop gets one from the database.
call_command("migrate", "orders", "0020", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM orders_drop")
    kept_back = cursor.fetchone()[0]
call_command("migrate", verbosity=0)
after = sorted(Drop.objects.values_list("id", "client_order_id", "environment", "status"))
codes = list(Drop.objects.values_list("environment", "short_code"))

# Two drops of an environment that share a code are told apart by the migration's round.
repeats_drawn_afresh = None
if connection.vendor == "postgresql":
    import importlib
    step = importlib.import_module("orders.migrations.0021_short_codes")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE orders_drop DROP CONSTRAINT drop_short_code_once")
        cursor.execute("UPDATE orders_drop SET short_code = 'SAMESAMESAME'")
    with connection.schema_editor() as editor:
        step.draw_repeats_afresh(None, editor)
    pairs = list(Drop.objects.values_list("environment", "short_code"))
    repeats_drawn_afresh = len(set(pairs)) == len(pairs)

print(json.dumps({
    "kept": before == after and kept_back == len(before),
    "count": len(codes),
    "distinct": len(set(codes)),
    "codes": [code for _, code in codes],
    "repeats_drawn_afresh": repeats_drawn_afresh,
}, default=str))
"""
)


def _assert_every_drop_got_its_own_code(result: dict, *, drawn_afresh) -> None:
    assert result["kept"]  # the same drops, ids and statuses, before and after
    assert result["count"] == result["distinct"] == 30
    assert all(SHORT_CODE.fullmatch(code) for code in result["codes"])
    assert result["repeats_drawn_afresh"] is drawn_afresh


def test_the_migration_gives_every_existing_drop_its_own_code_on_postgresql(postgres_cluster):
    name = f"codes_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_cluster.url("postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        result = run_django_script(BACKFILL_SCRIPT, postgres_cluster.url(name))
        _assert_every_drop_got_its_own_code(result, drawn_afresh=True)
    finally:
        with psycopg.connect(postgres_cluster.url("postgres"), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_the_migration_gives_every_existing_drop_its_own_code_on_the_sqlite_default(tmp_path):
    result = run_django_script(BACKFILL_SCRIPT, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    _assert_every_drop_got_its_own_code(result, drawn_afresh=None)
