"""The sandbox console sends a drop with cash to collect (docs/contract.md §18): the scenario
walks it to DELIVERED, the cash is collected, and the wallet page shows it held."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from billing.models import CodEntry, CodKind
from orders.models import Drop, DropStatus
from tests.billing.cod_helpers import owed_of
from tracking.scenarios import run_due_scenarios


def test_a_scenario_with_cash_to_collect_ends_with_the_cash_held(
    open_for_business, alice, alice_web
):
    response = alice_web.post("/sandbox/scenario/", {"scenario": "deliver", "cod": "12.5"})

    assert response.status_code == 302
    started = Drop.objects.get(business=alice.business)
    assert started.cod_amount == Decimal("12.50")
    assert (
        "The courier collects 12.50 in cash."
        in alice_web.get(response["Location"]).content.decode()
    )
    for _ in range(6):
        open_for_business.shift(timedelta(seconds=10))
        run_due_scenarios()
    assert Drop.objects.get(pk=started.pk).status == DropStatus.DELIVERED
    assert CodEntry.objects.get(kind=CodKind.COLLECTED).drop_id == started.pk
    assert owed_of(alice) == Decimal("12.50")
    wallet = alice_web.get("/wallet/?environment=sandbox").content.decode()
    assert 'data-testid="cod-owed">12.50 USD<' in wallet


def test_without_cash_the_scenario_sends_no_cod(open_for_business, alice, alice_web):
    alice_web.post("/sandbox/scenario/", {"scenario": "deliver", "cod": ""})

    assert Drop.objects.get(business=alice.business).cod_amount is None


@pytest.mark.parametrize("cod", ["0", "-5", "500.01", "1.234", "cash"])
def test_a_bad_amount_starts_nothing(open_for_business, alice, alice_web, cod):
    response = alice_web.post("/sandbox/scenario/", {"scenario": "deliver", "cod": cod})

    assert response.status_code == 400
    assert not Drop.objects.exists()
