"""The wallet page's cash on delivery (docs/contract.md §18): what is held, moving it into the
wallet (the API's service and gates), and the sandbox's simulated payout."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from accounts.models import Stage
from billing.models import CodEntry, CodKind, EntryKind, LedgerEntry
from events.models import Event, EventType
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod, owed_of
from tests.billing.helpers import wallet_of

pytestmark = pytest.mark.django_db

CREDIT = reverse("dashboard:cod_credit_wallet")
PAYOUT = reverse("dashboard:sandbox_cod_payout")


def wallet_page(web, environment: str = "sandbox") -> str:
    response = web.get(reverse("dashboard:wallet") + f"?environment={environment}")
    assert response.status_code == 200
    return response.content.decode()


def test_the_wallet_page_shows_the_cash_held_and_its_entries(
    open_for_business, alice, alice_web, api
):
    delivered_cod(api, alice, {"C-1": "12.50", "C-2": "7.50"})

    page = wallet_page(alice_web)

    assert 'data-testid="cod-owed">20.00 USD<' in page
    assert page.count('data-label="Kind">Collected<') == 2
    assert 'data-testid="cod-credit"' in page
    assert 'data-testid="cod-simulate-payout"' in page
    live = wallet_page(alice_web, "live")
    assert 'data-testid="cod-owed">0.00 USD<' in live
    assert 'data-testid="cod-credit"' not in live  # nothing to move
    assert 'data-testid="cod-simulate-payout"' not in live  # live payouts are Finance's


def test_moving_cash_to_the_wallet_from_the_dashboard(open_for_business, alice, alice_web, api):
    delivered_cod(api, alice, {"C-1": "20.00"})
    before = wallet_of(alice).balance

    response = alice_web.post(CREDIT, {"environment": "sandbox", "amount": "15.00"})

    assert response.status_code == 302
    assert owed_of(alice) == Decimal("5.00")
    assert wallet_of(alice).balance == before + Decimal("15.00")
    top_up = LedgerEntry.objects.get(kind=EntryKind.TOP_UP, note="From cash on delivery")
    assert top_up.actor is not None  # the member who moved it
    assert Event.objects.filter(type=EventType.COD_CREDITED).count() == 1
    assert "Moved 15.00 of collected cash" in alice_web.get(response.url).content.decode()

    too_much = alice_web.post(CREDIT, {"environment": "sandbox", "amount": "5.01"})

    assert too_much.status_code == 409
    assert "Only 5.00 is owed." in too_much.content.decode()
    assert owed_of(alice) == Decimal("5.00")
    assert_cod_consistent()


@pytest.mark.parametrize("amount", ["0", "-1", "abc", "1.001", ""])
def test_a_bad_amount_is_refused_on_the_page(open_for_business, alice, alice_web, api, amount):
    delivered_cod(api, alice, {"C-1": "20.00"})

    response = alice_web.post(CREDIT, {"environment": "sandbox", "amount": amount})

    assert response.status_code == 400
    assert 'data-testid="cod"' in response.content.decode()
    assert owed_of(alice) == Decimal("20.00")


def test_a_suspended_account_moves_nothing(open_for_business, alice, alice_web, api):
    delivered_cod(api, alice, {"C-1": "20.00"})
    alice.business.stage = Stage.SUSPENDED
    alice.business.save()

    response = alice_web.post(CREDIT, {"environment": "sandbox", "amount": "5.00"}, follow=True)

    assert "suspended" in response.content.decode()
    assert owed_of(alice) == Decimal("20.00")


def test_another_business_cannot_move_this_cash(open_for_business, alice, bob_web, api):
    delivered_cod(api, alice, {"C-1": "20.00"})

    response = bob_web.post(CREDIT, {"environment": "sandbox", "amount": "5.00"})

    assert response.status_code == 409  # Bob holds nothing; Alice's cash is not his
    assert owed_of(alice) == Decimal("20.00")


def test_the_sandbox_simulates_a_payout_of_everything_held(
    open_for_business, alice, alice_web, api
):
    delivered_cod(api, alice, {"C-1": "20.00", "C-2": "2.25"})

    response = alice_web.post(PAYOUT, follow=True)

    assert "Simulated a payout of 22.25" in response.content.decode()
    payout = CodEntry.objects.get(kind=CodKind.REMITTED)
    assert payout.amount == Decimal("-22.25")
    assert payout.reference.startswith("SANDBOX-")
    assert payout.account.environment == "sandbox"
    event = Event.objects.get(type=EventType.COD_REMITTED)
    assert (event.environment, event.data["amount"]) == ("sandbox", "22.25")
    assert owed_of(alice) == 0
    again = alice_web.post(PAYOUT, follow=True)
    assert "No sandbox cash is owed" in again.content.decode()
    assert CodEntry.objects.filter(kind=CodKind.REMITTED).count() == 1
