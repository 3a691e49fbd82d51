"""Cash is collected with the DELIVERED move, exactly once per drop (docs/contract.md §18)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from billing.models import CodAccount, CodEntry, CodKind
from orders.models import Drop, DropStatus
from tests.billing.cod_helpers import assert_cod_consistent, owed_of, place_cod
from tests.fixtures import Api
from tests.helpers import run_concurrently
from tests.tracking.helpers import advance, entries, place


def test_delivering_a_cod_drop_collects_its_cash_once_with_the_move(open_for_business, make_tenant):
    tenant = make_tenant()
    api, key = Api(), tenant.sandbox_key
    ids = place_cod(api, key, {"COD-1": "12.50", "COD-2": "7.25"})
    plain = place(api, key, "PLAIN-1")

    moved = entries(advance(api, key, "COD-1", "PLAIN-1", "COD-2", to="DELIVERED"))

    assert {e["status"] for e in moved.values()} == {DropStatus.DELIVERED}
    collected = CodEntry.objects.filter(kind=CodKind.COLLECTED).order_by("id")
    assert sorted((str(e.drop_id), e.amount) for e in collected) == sorted(
        [(ids["COD-1"], Decimal("12.50")), (ids["COD-2"], Decimal("7.25"))]
    )
    assert owed_of(tenant) == Decimal("19.75")
    delivered = {d.client_order_id: d for d in Drop.objects.all()}
    event_at = delivered["COD-1"].updated_at
    assert delivered["COD-1"].cod_collected_at == event_at == collected[0].created_at
    assert delivered["PLAIN-1"].cod_collected_at is None
    assert not CodEntry.objects.filter(drop_id=plain["PLAIN-1"]).exists()
    assert owed_of(tenant, "live") == 0  # the other environment holds nothing
    assert_cod_consistent()


def test_a_failed_or_cancelled_cod_drop_collects_nothing(open_for_business, make_tenant):
    tenant = make_tenant()
    api, key = Api(), tenant.sandbox_key
    place_cod(api, key, {"FAILS": "10.00", "CANCELLED": "5.00"})

    entries(advance(api, key, "FAILS", to="FAILED"))
    entries(api.post("/orders/cancel", {"identifiers": ["CANCELLED"]}, key))

    assert not CodEntry.objects.exists()
    assert Drop.objects.filter(cod_collected_at__isnull=False).count() == 0
    assert owed_of(tenant) == 0


@pytest.mark.django_db(transaction=True)
def test_a_drop_delivered_by_two_movers_at_once_is_collected_once(open_for_business, make_tenant):
    tenant = make_tenant()
    key = tenant.sandbox_key
    place_cod(Api(), key, {"RACE": "30.00"})
    entries(advance(Api(), key, "RACE", to="PICKED_UP"))

    responses = run_concurrently(4, lambda api, i: advance(api, key, "RACE", to="DELIVERED"))

    assert all(r.status_code == 200 for r in responses)
    assert CodEntry.objects.filter(kind=CodKind.COLLECTED).count() == 1
    assert owed_of(tenant) == Decimal("30.00")
    assert_cod_consistent()


def test_the_database_refuses_a_second_collection_and_a_negative_owed(
    open_for_business, make_tenant
):
    """The CHECKs and the unique index hold even against code that skips the service."""
    tenant = make_tenant()
    api, key = Api(), tenant.sandbox_key
    ids = place_cod(api, key, {"ONCE": "4.00"})
    entries(advance(api, key, "ONCE", to="DELIVERED"))
    account = CodAccount.objects.get(business=tenant.business, environment="sandbox")
    now = timezone.now()

    with pytest.raises(IntegrityError), transaction.atomic():
        CodEntry.objects.create(
            account=account, kind=CodKind.COLLECTED, amount=Decimal("4.00"),
            owed_after=Decimal("8.00"), drop_id=ids["ONCE"], created_at=now,
        )  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        CodEntry.objects.create(
            account=account, kind=CodKind.REMITTED, amount=Decimal("-5.00"),
            owed_after=Decimal("-1.00"), reference="X", created_at=now,
        )  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        CodAccount.objects.filter(pk=account.pk).update(owed=Decimal("-0.01"))
    with pytest.raises(IntegrityError), transaction.atomic():
        CodEntry.objects.create(
            account=account,
            kind=CodKind.REMITTED,
            amount=Decimal("1.00"),
            owed_after=Decimal("5.00"),
            reference="X",
            created_at=now,
        )  # fmt: skip  (a payout is a negative entry)
