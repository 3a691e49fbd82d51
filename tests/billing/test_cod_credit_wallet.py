"""POST /account/cod/credit-wallet and GET /account's `cod` (docs/contract.md §18): owed cash
moves into the wallet with a TOP_UP in one transaction, never more than is owed."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.cod import CodRefused, remit_cod
from billing.models import CodEntry, CodKind, EntryKind, LedgerEntry
from events.endpoints import create_endpoint
from events.models import Delivery, Event, EventType
from tests.billing.cod_helpers import assert_cod_consistent, delivered_cod, owed_of
from tests.billing.helpers import assert_ledger_consistent, wallet_of

CREDIT = "/account/cod/credit-wallet"


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert (body["statusCode"], body["success"]) == (status, False)
    return body["error"]


def test_crediting_the_wallet_moves_owed_cash_with_a_top_up(
    open_for_business, alice, api, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    endpoint = create_endpoint(
        business=alice.business,
        environment="sandbox",
        url="http://127.0.0.1:9/hook",
        event_types=["cod.credited"],
    ).endpoint
    delivered_cod(api, alice, {"C-1": "20.00", "C-2": "5.50"})
    before = wallet_of(alice).balance

    response = api.post(CREDIT, {"amount": "12.5"}, alice.sandbox_key)

    assert response.status_code == 200, response.content
    cod = {"owed": "13.00", "collected_total": "25.50", "remitted_total": "0.00"}
    cod["credited_total"] = "12.50"
    balance = before + Decimal("12.50")
    assert response.json()["data"] == {
        "credited": "12.50",
        "cod": cod,
        "wallet": {"balance": str(balance), "owed": "0.00"},
    }
    assert api.get("/account", alice.sandbox_key).json()["data"]["cod"] == cod
    credit = CodEntry.objects.get(kind=CodKind.CREDITED_TO_WALLET)
    top_up = LedgerEntry.objects.get(kind=EntryKind.TOP_UP, note="From cash on delivery")
    assert (credit.amount, top_up.amount) == (Decimal("-12.50"), Decimal("12.50"))
    assert credit.created_at == top_up.created_at  # one transaction, one moment
    event = Event.objects.get(type=EventType.COD_CREDITED)
    assert (event.business_id, event.environment) == (alice.business.pk, "sandbox")
    assert event.data == {
        "amount": "12.50",
        "owed": "13.00",
        "wallet": {"balance": str(balance), "owed": "0.00"},
        "currency": "USD",
        "at": event.data["at"],
    }
    # The endpoint subscribed to cod.credited gets that event, and only it.
    assert list(Delivery.objects.filter(endpoint=endpoint).values_list("event_id", flat=True)) == [
        event.pk
    ]
    assert_cod_consistent()
    assert assert_ledger_consistent(alice) == balance


def test_more_than_is_owed_is_409_and_moves_nothing(open_for_business, alice, api):
    delivered_cod(api, alice, {"C-1": "10.00"})
    before = wallet_of(alice).balance

    error = error_of(api.post(CREDIT, {"amount": "10.01"}, alice.sandbox_key), 409)

    assert error["code"] == "COD_EXCEEDS_OWED"
    assert "10.00" in error["message"]
    assert wallet_of(alice).balance == before
    assert owed_of(alice) == Decimal("10.00")
    assert not Event.objects.filter(type=EventType.COD_CREDITED).exists()
    # The live account holds nothing: the sandbox cash is not the live key's to move.
    assert error_of(api.post(CREDIT, {"amount": "1.00"}, alice.live_key), 409)["code"] == (
        "COD_EXCEEDS_OWED"
    )
    assert api.post(CREDIT, {"amount": "10.00"}, alice.sandbox_key).status_code == 200
    assert owed_of(alice) == 0


def test_another_business_never_moves_or_sees_this_cash(open_for_business, alice, bob, api):
    delivered_cod(api, alice, {"C-1": "10.00"})

    assert error_of(api.post(CREDIT, {"amount": "1.00"}, bob.sandbox_key), 409)["code"] == (
        "COD_EXCEEDS_OWED"
    )
    assert api.get("/account", bob.sandbox_key).json()["data"]["cod"]["owed"] == "0.00"
    assert api.get("/account", alice.sandbox_key).json()["data"]["cod"]["owed"] == "10.00"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "amount"),
        ({"amount": "0.00"}, "amount"),
        ({"amount": "-1.00"}, "amount"),
        ({"amount": "1.234"}, "amount"),
        ({"amount": 5}, "amount"),
        ({"amount": "NaN"}, "amount"),
        ({"amount": "12345678901.00"}, "amount"),
        ({"amount": "1.00", "note": "x"}, "note"),
        ([], ""),
    ],
)
def test_a_bad_body_is_400_naming_the_field(open_for_business, alice, api, body, field):
    delivered_cod(api, alice, {"C-1": "10.00"})

    error = error_of(api.post(CREDIT, body, alice.sandbox_key), 400)

    assert error["code"] == "VALIDATION_ERROR"
    assert [d["field"] for d in error["details"]] == [field]
    assert owed_of(alice) == Decimal("10.00")


def test_an_invoiced_account_has_no_wallet_to_credit(open_for_business, make_tenant, api):
    tenant = make_tenant(billing="invoiced")
    delivered_cod(api, tenant, {"C-1": "10.00"})

    error = error_of(api.post(CREDIT, {"amount": "1.00"}, tenant.sandbox_key), 409)

    assert error["code"] == "COD_NOT_CREDITABLE"
    assert owed_of(tenant) == Decimal("10.00")


def test_a_payout_needs_a_reference_and_sends_cod_remitted(open_for_business, alice, api):
    delivered_cod(api, alice, {"C-1": "40.00"}, environment="live")
    business = alice.business

    with pytest.raises(CodRefused):
        remit_cod(business=business, environment="live", amount=Decimal("5"), reference="  ")
    with pytest.raises(CodRefused):
        remit_cod(business=business, environment="live", amount=Decimal("40.01"), reference="T-1")
    remit_cod(business=business, environment="live", amount=Decimal("30"), reference="TRF-881")

    assert owed_of(alice, "live") == Decimal("10.00")
    payout = CodEntry.objects.get(kind=CodKind.REMITTED)
    assert (payout.amount, payout.reference) == (Decimal("-30.00"), "TRF-881")
    event = Event.objects.get(type=EventType.COD_REMITTED)
    assert (event.environment, event.data["amount"], event.data["reference"]) == (
        "live",
        "30.00",
        "TRF-881",
    )
    assert event.data["owed"] == "10.00"
    cod = api.get("/account", alice.live_key).json()["data"]["cod"]
    assert cod == {
        "owed": "10.00",
        "collected_total": "40.00",
        "remitted_total": "30.00",
        "credited_total": "0.00",
    }
    assert_cod_consistent()
