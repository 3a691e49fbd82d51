"""Wallet accounts (docs/contract.md §4 reason 8, §7): debits in submission order, an exact
ledger."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from billing import services as billing_services
from billing.models import EntryKind, LedgerEntry, Wallet
from billing.services import BillingError, post_wallet_entry, sandbox_top_up
from orders.models import Batch, BatchStatus, DeliveryEvent, Drop, DropStatus, Order
from tests.billing.helpers import (
    assert_debited_per_batch,
    assert_ledger_consistent,
    batch_debit,
    outcomes,
    prices,
    wallet_of,
)
from tests.factories import SHOP, batch, drop, group, many_drops

# With base 1.00 + 1.00/km: a drop at the shop costs 1.00, at HOME (1.66 km) 2.66,
# at FAR (5.56 km) 6.56.
FAR = {"lat": 11.6064, "long": 104.9282}


@pytest.fixture
def per_km_tenant(make_tenant):
    def make(balance: str):
        return make_tenant(base_fee="1.00", per_km_fee="1.00", sandbox_balance=balance)

    return make


def debits():
    return LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).order_by("id")


def test_balance_running_out_midway_accepts_earlier_drops_and_rejects_later_in_order(
    open_for_business, per_km_tenant, api
):
    tenant = per_km_tenant("5.00")
    body = batch(
        group(drop("W-1"), drop("W-2", **SHOP), drop("W-3", **FAR)),
        group(drop("W-4"), drop("W-5", **SHOP), drop("W-6", **SHOP)),
    )

    response = api.bulk(body, tenant.sandbox_key)

    assert response.status_code == 200
    data = response.json()["data"]
    # 5.00 − 2.66 − 1.00 = 1.34: W-3 (6.56) and W-4 (2.66) don't fit, the cheaper W-5 does.
    assert outcomes(response) == [
        "accepted",
        "accepted",
        "INSUFFICIENT_BALANCE",
        "INSUFFICIENT_BALANCE",
        "accepted",
        "INSUFFICIENT_BALANCE",
    ]
    assert prices(response) == ["2.66", "1.00", None, None, "1.00", None]
    assert data["status"] == BatchStatus.PARTIAL
    assert data["counts"] == {"total": 6, "accepted": 3, "rejected": 3}
    rejected = [o for o in data["orders"] if o["status"] == "rejected"]
    assert all(o["message"] and "drop_id" not in o for o in rejected)
    assert sorted(Drop.objects.values_list("client_order_id", flat=True)) == ["W-1", "W-2", "W-5"]
    assert assert_ledger_consistent(tenant) == Decimal("0.34")
    # One debit for the batch: W-1 + W-2 + W-5 = 2.66 + 1.00 + 1.00.
    debit = batch_debit(data["batch_id"])
    assert list(debits()) == [debit]
    assert (debit.amount, debit.balance_after, debit.note) == (
        Decimal("-4.66"),
        Decimal("0.34"),
        "3 drops",
    )


def test_drop_rejected_for_balance_leaves_its_client_order_id_free_after_a_top_up(
    open_for_business, per_km_tenant, api
):
    tenant = per_km_tenant("2.00")
    first = api.bulk(batch(group(drop("T-1"))), tenant.sandbox_key)
    assert outcomes(first) == ["INSUFFICIENT_BALANCE"]

    sandbox_top_up(business=tenant.business, amount=Decimal("5.00"))
    second = api.bulk(batch(group(drop("T-1"))), tenant.sandbox_key)

    assert outcomes(second) == ["accepted"]
    assert assert_ledger_consistent(tenant) == Decimal("4.34")


def test_empty_wallet_fails_the_batch_and_persists_nothing_of_its_drops(
    open_for_business, per_km_tenant, api
):
    tenant = per_km_tenant("0.00")

    response = api.bulk(batch(group(drop("E-1"), drop("E-2", **SHOP))), tenant.sandbox_key)

    assert response.status_code == 200
    assert response.json()["data"]["status"] == BatchStatus.FAILED
    assert outcomes(response) == ["INSUFFICIENT_BALANCE", "INSUFFICIENT_BALANCE"]
    assert Order.objects.count() == Drop.objects.count() == DeliveryEvent.objects.count() == 0
    assert not debits().exists()
    assert Batch.objects.get().status == BatchStatus.FAILED  # still stored for replay
    assert assert_ledger_consistent(tenant) == Decimal("0.00")


def test_balance_equal_to_the_price_is_enough_and_a_cent_short_is_not(
    open_for_business, per_km_tenant, api
):
    exact, short = per_km_tenant("2.66"), per_km_tenant("2.65")

    assert outcomes(api.bulk(batch(group(drop("X-1"))), exact.sandbox_key)) == ["accepted"]
    assert outcomes(api.bulk(batch(group(drop("X-1"))), short.sandbox_key)) == [
        "INSUFFICIENT_BALANCE"
    ]

    assert assert_ledger_consistent(exact) == Decimal("0.00")
    assert assert_ledger_consistent(short) == Decimal("2.65")


def test_earlier_rules_win_over_insufficient_balance_and_rejected_drops_cost_nothing(
    open_for_business, per_km_tenant, api
):
    tenant = per_km_tenant("1.00")

    response = api.bulk(
        batch(
            group(drop("R-1", phone="12345"), drop("R-2", lat=0, long=0), drop("R-3", **SHOP)),
            group(drop("R-3", **SHOP), drop("R-4", **SHOP)),
        ),
        tenant.sandbox_key,
    )

    assert outcomes(response) == [
        "INVALID_PHONE",
        "INVALID_COORDINATES",
        "accepted",
        "DUPLICATE_CLIENT_ORDER_ID",
        "INSUFFICIENT_BALANCE",
    ]
    assert assert_ledger_consistent(tenant) == Decimal("0.00")
    assert debits().count() == 1


def test_the_order_debit_references_its_batch_and_is_minus_its_drops_prices(
    open_for_business, alice, api
):
    response = api.bulk(
        batch(group(drop("L-1"), drop("L-2", **FAR)), group(drop("L-3", **SHOP))),
        alice.sandbox_key,
    )

    data = response.json()["data"]
    accepted = data["orders"]
    entries = list(debits())
    assert entries == [batch_debit(data["batch_id"])]
    (entry,) = entries
    assert str(entry.batch_id) == data["batch_id"]
    assert entry.drop_id is None
    assert entry.amount == -sum(Decimal(o["price"]) for o in accepted)
    assert entry.note == "3 drops"
    assert sorted(
        str(pk) for pk in Drop.objects.filter(batch_id=entry.batch_id).values_list("pk", flat=True)
    ) == sorted(o["drop_id"] for o in accepted)
    assert entry.actor is None
    assert entry.wallet == wallet_of(alice, "sandbox")
    assert assert_ledger_consistent(alice) == Decimal("100.00") + entry.amount


def test_sandbox_batches_debit_only_the_sandbox_wallet(open_for_business, alice, api):
    api.bulk(batch(group(drop("V-1"))), alice.sandbox_key)

    assert assert_ledger_consistent(alice, "sandbox") == Decimal("97.17")
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


def test_replay_with_the_same_key_never_charges_twice(open_for_business, alice, api):
    body, key = batch(group(drop("K-1"), drop("K-2"))), str(uuid.uuid4())
    first = api.bulk(body, alice.sandbox_key, key)
    balance = wallet_of(alice).balance

    again = [api.bulk(body, alice.sandbox_key, key) for _ in range(3)]

    assert all(r.headers["Idempotent-Replayed"] == "true" for r in again)
    assert {r.content for r in again} == {first.content}
    assert wallet_of(alice).balance == balance == Decimal("100.00") - 2 * Decimal("2.83")
    assert list(debits()) == [batch_debit(first.json()["data"]["batch_id"])]
    assert debits().get().amount == -2 * Decimal("2.83")
    assert_ledger_consistent(alice)


def test_replay_by_client_batch_id_under_another_key_never_charges_twice(
    open_for_business, alice, api
):
    body = batch(group(drop("K-1")), client_batch_id="B-once")
    first = api.bulk(body, alice.sandbox_key)

    second = api.bulk(body, alice.sandbox_key)  # a fresh Idempotency-Key

    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content == first.content
    assert debits().count() == 1
    assert assert_ledger_consistent(alice) == Decimal("97.17")


def test_conflicting_reuses_are_409_and_charge_nothing(open_for_business, alice, api):
    key = str(uuid.uuid4())
    api.bulk(batch(group(drop("K-1")), client_batch_id="B-1"), alice.sandbox_key, key)

    other_body_same_key = api.bulk(batch(group(drop("K-2"))), alice.sandbox_key, key)
    other_body_same_batch_id = api.bulk(
        batch(group(drop("K-3")), client_batch_id="B-1"), alice.sandbox_key
    )

    assert other_body_same_key.status_code == other_body_same_batch_id.status_code == 409
    assert debits().count() == 1
    assert assert_ledger_consistent(alice) == Decimal("97.17")


def test_database_refuses_a_negative_balance(alice):
    wallet = wallet_of(alice)

    with pytest.raises(IntegrityError), transaction.atomic():
        Wallet.objects.filter(pk=wallet.pk).update(balance=-1)

    assert wallet_of(alice).balance == Decimal("100.00")


def test_database_refuses_a_ledger_entry_with_a_negative_balance_after(alice):
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.create(
            wallet=wallet_of(alice),
            kind=EntryKind.ADJUSTMENT,
            amount=Decimal("-200.00"),
            balance_after=Decimal("-100.00"),
        )


def test_crash_mid_batch_leaves_nothing_behind_and_the_retry_is_processed_fresh(
    open_for_business, alice, api, monkeypatch
):
    body, key = batch(group(drop("C-1"), drop("C-2"))), str(uuid.uuid4())

    def crash(*args, **kwargs):
        raise RuntimeError("the disk is full")

    with monkeypatch.context() as patched:
        # The ledger write runs after the drops are written in the same transaction.
        patched.setattr(billing_services, "append_entries", crash)
        crashed = api.bulk(body, alice.sandbox_key, key)

    assert crashed.status_code == 500
    assert crashed.json()["error"]["code"] == "INTERNAL_ERROR"

    assert (
        Batch.objects.count()
        == Drop.objects.count()
        == LedgerEntry.objects.filter(kind=EntryKind.ORDER_DEBIT).count()
        == 0
    )
    assert wallet_of(alice).balance == Decimal("100.00")
    retry = api.bulk(body, alice.sandbox_key, key)
    assert retry.status_code == 200
    assert "Idempotent-Replayed" not in retry.headers
    assert outcomes(retry) == ["accepted", "accepted"]
    assert assert_ledger_consistent(alice) == Decimal("94.34")
    assert list(debits()) == [batch_debit(retry.json()["data"]["batch_id"])]


def test_debits_of_a_batch_cost_the_same_queries_for_1_and_for_40_drops(
    open_for_business, make_tenant, api
):
    tenant = make_tenant(sandbox_balance="1000.00")
    api.bulk(many_drops(1, "WARM"), tenant.sandbox_key)  # last_used_at and caches settle

    with CaptureQueriesContext(connection) as one:
        api.bulk(many_drops(1, "ONE"), tenant.sandbox_key)
    with CaptureQueriesContext(connection) as forty:
        api.bulk(many_drops(40, "FORTY"), tenant.sandbox_key)

    # One debit per batch, whatever its size.
    assert len(assert_debited_per_batch(tenant)) == debits().count() == 3
    assert batch_debit(Batch.objects.get(accepted=40).pk).note == "40 drops"
    assert len(forty) == len(one)


# --- direct wallet entries: operators' top-ups and adjustments, the sandbox self top-up


def test_top_up_and_adjustments_append_entries_with_actor_and_note(alice, django_user_model):
    operator = django_user_model.objects.create_user(username="ops@example.com")

    top_up = post_wallet_entry(
        business=alice.business,
        environment="live",
        amount=Decimal("25.50"),
        actor=operator,
        note="Bank transfer 42",
    )
    adjustment = post_wallet_entry(
        business=alice.business,
        environment="live",
        amount=Decimal("-125.50"),
        kind=EntryKind.ADJUSTMENT,
        actor=operator,
        note="Goodwill reversal",
    )

    assert (top_up.kind, top_up.amount, top_up.balance_after) == (
        EntryKind.TOP_UP,
        Decimal("25.50"),
        Decimal("125.50"),
    )
    assert (adjustment.amount, adjustment.balance_after) == (Decimal("-125.50"), Decimal("0.00"))
    assert {top_up.actor, adjustment.actor} == {operator}
    assert top_up.note == "Bank transfer 42"
    assert assert_ledger_consistent(alice, "live") == Decimal("0.00")


@pytest.mark.parametrize(
    ("kind", "amount"),
    [
        (EntryKind.ADJUSTMENT, "-100.01"),
        (EntryKind.TOP_UP, "0.00"),
        (EntryKind.TOP_UP, "-5.00"),
    ],
)
def test_entry_that_would_overdraw_or_a_non_positive_top_up_is_refused(alice, kind, amount):
    entries = LedgerEntry.objects.count()

    with pytest.raises(BillingError):
        post_wallet_entry(
            business=alice.business, environment="live", amount=Decimal(amount), kind=kind
        )

    assert LedgerEntry.objects.count() == entries
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


def test_entry_amounts_are_rounded_half_up_to_cents(alice):
    entry = post_wallet_entry(business=alice.business, environment="live", amount=Decimal("0.125"))

    assert entry.amount == Decimal("0.13")
    assert assert_ledger_consistent(alice, "live") == Decimal("100.13")


@pytest.mark.parametrize("amount", ["0.01", "10000.00"])
def test_sandbox_top_up_accepts_amounts_within_its_bounds(alice, amount):
    entry = sandbox_top_up(business=alice.business, amount=Decimal(amount))

    assert (entry.kind, entry.amount) == (EntryKind.TOP_UP, Decimal(amount))
    assert entry.wallet == wallet_of(alice, "sandbox")
    assert assert_ledger_consistent(alice, "sandbox") == Decimal("100.00") + Decimal(amount)
    assert assert_ledger_consistent(alice, "live") == Decimal("100.00")


@pytest.mark.parametrize("amount", ["0.00", "0.009", "-1.00", "10000.01", "NaN", "Infinity"])
def test_sandbox_top_up_refuses_amounts_outside_its_bounds(alice, amount):
    entries = LedgerEntry.objects.count()

    with pytest.raises(BillingError):
        sandbox_top_up(business=alice.business, amount=Decimal(amount))

    assert LedgerEntry.objects.count() == entries
    assert wallet_of(alice, "sandbox").balance == Decimal("100.00")


# --- cancellation gives the money back


def cancel(api, tenant, *identifiers):
    return api.post("/orders/cancel", {"identifiers": list(identifiers)}, tenant.sandbox_key)


def test_cancelling_refunds_the_wallet_to_the_cent_with_a_refund_entry(
    open_for_business, alice, api
):
    api.bulk(batch(group(drop("Z-1"), drop("Z-2", **FAR), drop("Z-3", **SHOP))), alice.sandbox_key)
    before = wallet_of(alice).balance

    response = cancel(api, alice, "Z-2", "Z-3")

    assert response.status_code == 200
    assert [o["status"] for o in response.json()["data"]["orders"]] == ["CANCELLED"] * 2
    refunds = LedgerEntry.objects.filter(kind=EntryKind.REFUND).order_by("id")
    by_drop = {e.drop.client_order_id: e for e in refunds}
    assert set(by_drop) == {"Z-2", "Z-3"}
    for identifier, entry in by_drop.items():
        assert entry.amount == Drop.objects.get(client_order_id=identifier).price
    assert assert_ledger_consistent(alice) == before + Decimal("4.78") + Decimal("2.00")
    assert assert_ledger_consistent(alice) == Decimal("100.00") - Decimal("2.83")


def test_cancelling_twice_refunds_once(open_for_business, alice, api):
    api.bulk(batch(group(drop("Z-1"))), alice.sandbox_key)
    cancel(api, alice, "Z-1")

    again = cancel(api, alice, "Z-1").json()["data"]["orders"][0]

    assert again["status"] == "CANCELLED" and "error" not in again  # a retry, answered as done
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND).count() == 1
    assert assert_ledger_consistent(alice) == Decimal("100.00")


def test_drop_past_pickup_is_not_cancellable_and_not_refunded(open_for_business, alice, api):
    api.bulk(batch(group(drop("Z-1"))), alice.sandbox_key)
    api.post(
        "/sandbox/orders/advance", {"identifiers": ["Z-1"], "to": "PICKED_UP"}, alice.sandbox_key
    )

    answer = cancel(api, alice, "Z-1").json()["data"]["orders"][0]

    assert answer["error"]["code"] == "NOT_CANCELLABLE"
    assert Drop.objects.get().status == DropStatus.PICKED_UP
    assert not LedgerEntry.objects.filter(kind=EntryKind.REFUND).exists()
    assert assert_ledger_consistent(alice) == Decimal("97.17")


def test_a_drop_refused_for_its_balance_is_no_duplicate_of_a_later_drop_of_its_batch(
    open_for_business, make_tenant, api
):
    """Rule 10 names an *earlier* accepted drop of the batch (docs/contract.md §4): the far
    drop, too dear, comes first; the near one with the same id, affordable, comes after and
    is accepted. Found by the ledger state machine (tests/billing/test_ledger_state_machine.py)."""
    tenant = make_tenant(sandbox_balance="3.00", base_fee="2", per_km_fee="0.5")
    body = batch(
        group(
            drop("TWICE-1", lat=11.661, long=104.85),  # ~14 km: 9.00, above the balance
            drop("TWICE-1", lat=11.5696, long=104.921),  # ~2 km: under 3.00
        )
    )

    orders = api.bulk(body, tenant.sandbox_key).json()["data"]["orders"]

    assert [o.get("failure_reason", o["status"]) for o in orders] == [
        "INSUFFICIENT_BALANCE",
        "accepted",
    ]
