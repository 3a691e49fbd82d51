"""The order page's Cancel: a confirmation first, then the API's cancel service
(refunded, an event by the dashboard user); and its proof of delivery, said as it was taken."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from billing.models import Wallet
from orders.models import DeliveryEvent, Drop, DropStatus, ProofMethod
from tests.tracking.helpers import advance, drop_in, place

S = DropStatus


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


def sandbox_balance(tenant) -> Decimal:
    return Wallet.objects.get(business=tenant.business, environment="sandbox").balance


def test_cancel_asks_first_then_cancels_and_refunds(open_for_business, alice, alice_web, api):
    before = sandbox_balance(alice)
    ids = place(api, alice.sandbox_key, "CANCEL-1")
    drop_id = ids["CANCEL-1"]
    assert sandbox_balance(alice) < before

    page = alice_web.get(f"/orders/{drop_id}/").content.decode()
    assert f'href="/orders/{drop_id}/cancel/"' in page
    confirm = alice_web.get(f"/orders/{drop_id}/cancel/")
    assert confirm.status_code == 200
    assert 'Cancel <span class="mono">CANCEL-1</span>?' in confirm.content.decode()
    assert Drop.objects.get(pk=drop_id).status == S.PENDING  # asking changes nothing

    response = alice_web.post(f"/orders/{drop_id}/cancel/")

    assert response.status_code == 302 and response["Location"] == f"/orders/{drop_id}/"
    assert Drop.objects.get(pk=drop_id).status == S.CANCELLED
    assert sandbox_balance(alice) == before  # refunded, as the API's cancel does
    event = DeliveryEvent.objects.get(drop_id=drop_id, status=S.CANCELLED)
    assert event.actor == f"dashboard {alice_web.user.get_username()}"
    shown = alice_web.get(response["Location"]).content.decode()
    assert "CANCEL-1 is cancelled; its price is refunded." in shown
    assert "/cancel/" not in shown  # nothing left to cancel


def test_an_order_past_pickup_offers_no_cancel_and_refuses_one(
    open_for_business, alice, alice_web, api
):
    ids = place(api, alice.sandbox_key, "CANCEL-2")
    advance(api, alice.sandbox_key, "CANCEL-2", to="PICKED_UP")
    drop_id = ids["CANCEL-2"]

    assert "/cancel/" not in alice_web.get(f"/orders/{drop_id}/").content.decode()
    response = alice_web.post(f"/orders/{drop_id}/cancel/", follow=True)

    assert Drop.objects.get(pk=drop_id).status == S.PICKED_UP
    assert "only an order not yet picked up can be cancelled" in response.content.decode()


def test_a_finished_drops_page_never_cancels_a_newer_drop_with_its_id(
    open_for_business, alice, alice_web, api
):
    old = drop_in(S.DELIVERED, business=alice.business, client_order_id="REUSED-1")
    new = drop_in(S.PENDING, business=alice.business, client_order_id="REUSED-1")

    alice_web.post(f"/orders/{old.pk}/cancel/")

    assert Drop.objects.get(pk=new.pk).status == S.PENDING


def test_a_stranger_cannot_cancel(open_for_business, alice, bob_web, api):
    ids = place(api, alice.sandbox_key, "CANCEL-3")
    assert bob_web.get(f"/orders/{ids['CANCEL-3']}/cancel/").status_code == 404
    assert bob_web.post(f"/orders/{ids['CANCEL-3']}/cancel/").status_code == 404
    assert Drop.objects.get(pk=ids["CANCEL-3"]).status == S.PENDING


def proof_of(page: str) -> str:
    start = page.index('data-testid="proof"')
    return page[start : page.index("</dd>", start)]


def test_a_delivery_without_proof_says_none_was_taken(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "PROOF-1")
    advance(api, alice.sandbox_key, "PROOF-1", to="DELIVERED")  # the test driver: no PIN asked

    page = alice_web.get(f"/orders/{ids['PROOF-1']}/").content.decode()

    assert "None taken: no PIN was asked for and no photo was taken." in proof_of(page)
    assert "<dd>None" not in page and "<img" not in proof_of(page)


def test_a_pin_delivery_with_a_photo_shows_both_and_the_photo_opens(
    open_for_business, alice, alice_web, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path
    row = drop_in(S.DELIVERED, business=alice.business)
    name = default_storage.save("proof/door.png", ContentFile(b"\x89PNG\r\n\x1a\nfake"))
    Drop.objects.filter(pk=row.pk).update(
        pod_method=ProofMethod.PIN, pod_received_by="Her neighbour", pod_photo=name
    )

    proof = proof_of(alice_web.get(f"/orders/{row.pk}/").content.decode())

    assert "The recipient gave the delivery PIN." in proof
    assert 'Received by <span data-testid="received-by">Her neighbour</span>' in proof
    photo = proof.split('<img src="', 1)[1].split('"', 1)[0]
    assert photo.startswith("/pod/")  # same origin, signed
    opened = alice_web.get(photo)
    assert opened.status_code == 200 and opened["Content-Type"] == "image/png"


def test_an_undelivered_drop_shows_no_proof(open_for_business, alice, alice_web, api):
    ids = place(api, alice.sandbox_key, "PROOF-2")
    assert 'data-testid="proof"' not in alice_web.get(f"/orders/{ids['PROOF-2']}/").content.decode()
