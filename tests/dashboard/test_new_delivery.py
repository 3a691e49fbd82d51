"""New delivery (docs/dashboard.md): saved pickup places, a booking by hand through the batch
pipeline exactly once per form, refusals in words beside their field, the live quote, the
address lookups as one types, the result, and Book again."""

from __future__ import annotations

import re
import threading
import uuid
from decimal import Decimal

import pytest
from django.db import connections
from django.test import Client

from billing.models import LedgerEntry, Wallet
from dashboard.booking import booked_batch_id
from dashboard.models import PickupPlace
from dashboard.views import booking as booking_views
from orders.models import Batch, Drop, IdempotencyRecord
from tests.factories import HOME, PHONE, SHOP

pytestmark = pytest.mark.usefixtures("open_for_business")

TOKEN = re.compile(r'name="form_token" value="([0-9a-f-]+)"')


@pytest.fixture
def shop(alice) -> PickupPlace:
    return PickupPlace.objects.create(
        business=alice.business, name="Shop", phone=PHONE, address="Street 51", **SHOP
    )


def drop_row(n: int = 0, **fields) -> dict[str, str]:
    row = {
        "name": "Dara",
        "phone": "012 345 679",  # as dialled in Cambodia
        "address": "",
        "lat": str(HOME["lat"]),
        "long": str(HOME["long"]),
        "parcel_size": "S",
        **fields,
    }
    return {f"drops-{n}-{key}": value for key, value in row.items()}


def form(shop, *rows: dict[str, str], token: str | None = None, **fields) -> dict[str, str]:
    rows = rows or (drop_row(),)
    data = {
        "form_token": token or str(uuid.uuid4()),
        "environment": "sandbox",
        "pickup_place": str(shop.pk),
        "vehicle": "motorbike",
        "scenario": "manual",
        "drops-TOTAL_FORMS": str(len(rows)),
        "drops-INITIAL_FORMS": "0",
        "drops-MIN_NUM_FORMS": "1",
        "drops-MAX_NUM_FORMS": "20",
        "book": "1",
        **fields,
    }
    for row in rows:
        data |= row
    return data


# --- Pickup places ---------------------------------------------------------------------------


def test_a_pickup_place_is_added_with_its_address_found_on_the_map(alice, alice_web):
    response = alice_web.post(
        "/pickup-places/new/",
        {"name": "Market stall", "phone": "012 345 678", "address": "Central Market, Phnom Penh"},
    )
    assert response.status_code == 302, response.content
    place = PickupPlace.objects.get(business=alice.business)
    assert (place.phone, place.lat, place.long) == ("+85512345678", 11.5696, 104.9210)
    assert "Market stall" in alice_web.get("/pickup-places/").content.decode()


def test_a_pickup_place_whose_address_is_not_found_asks_for_the_pin(alice_web):
    response = alice_web.post(
        "/pickup-places/new/", {"name": "Nowhere", "phone": PHONE, "address": "Zzyzx Road 9"}
    )
    assert response.status_code == 400
    assert "We could not find this address: place the pin." in response.content.decode()
    assert not PickupPlace.objects.exists()


def test_a_pickup_place_is_edited_and_deleted(shop, alice_web):
    response = alice_web.post(
        f"/pickup-places/{shop.pk}/",
        {"name": "Shop 2", "phone": PHONE, "address": "x", "lat": "11.56", "long": "104.92"},
    )
    assert response.status_code == 302
    shop.refresh_from_db()
    assert (shop.name, shop.lat) == ("Shop 2", 11.56)
    assert alice_web.post(f"/pickup-places/{shop.pk}/delete/").status_code == 302
    assert not PickupPlace.objects.exists()


def test_another_business_pickup_places_are_404(shop, bob_web):
    assert bob_web.get(f"/pickup-places/{shop.pk}/").status_code == 404
    assert bob_web.post(f"/pickup-places/{shop.pk}/delete/").status_code == 404
    assert "Street 51" not in bob_web.get("/pickup-places/").content.decode()
    assert str(shop.pk) not in bob_web.get("/orders/new/").content.decode()
    # Nor can a booking name it.
    response = bob_web.post("/orders/new/", form(shop))
    assert response.status_code == 400
    assert not Drop.objects.exists()


# --- Booking ---------------------------------------------------------------------------------


def test_the_form_carries_a_fresh_token_and_books_through_the_pipeline(alice, shop, alice_web):
    page = alice_web.get("/orders/new/").content.decode()
    token = TOKEN.search(page)[1]
    assert token != TOKEN.search(alice_web.get("/orders/new/").content.decode())[1]
    data = form(
        shop,
        drop_row(0, cod_amount="12.5", ask_pin="on", notes="Blue gate",
                 window_start="2026-11-23T15:00", window_end="2026-11-23T17:00"),
        drop_row(1, name="Sokha", address="Royal Palace, Phnom Penh", lat="", long=""),
        token=token,
    )  # fmt: skip
    response = alice_web.post("/orders/new/", data)
    assert response.status_code == 302, response.content.decode()
    batch = Batch.objects.get(business=alice.business)
    assert response["Location"] == f"/orders/new/{batch.pk}/"
    assert batch.client_batch_id == f"dashboard-{token}"
    assert IdempotencyRecord.objects.get(batch=batch).key == uuid.UUID(token)
    first, second = Drop.objects.order_by("client_order_id")
    assert first.recipient_phone == "+85512345679"
    assert (first.cod_amount, first.notes, len(first.dropoff_pin)) == (
        Decimal("12.50"),
        "Blue gate",
        4,
    )
    assert first.window_start is not None and first.sandbox_scenario == "manual"
    assert (second.lat, second.long, second.resolved) == (11.5637, 104.9311, True)
    result = alice_web.get(response["Location"]).content.decode()
    assert first.dropoff_pin in result
    assert "/t/" in result and f"/batches/{batch.pk}/labels.pdf" in result
    assert f"/orders/{first.pk}/" in result


def test_the_dragged_pin_wins_over_the_typed_address(alice, shop, alice_web):
    row = drop_row(address="Central Market, Phnom Penh", lat="11.5601", long="104.9101")
    assert alice_web.post("/orders/new/", form(shop, row)).status_code == 302
    drop = Drop.objects.get()
    assert (drop.lat, drop.long, drop.resolved) == (11.5601, 104.9101, False)
    assert drop.address == {"complete_address": "Central Market, Phnom Penh"}


def test_a_reload_of_the_same_form_books_nothing_twice(alice, shop, alice_web):
    data = form(shop)
    first = alice_web.post("/orders/new/", data)
    again = alice_web.post("/orders/new/", data)
    assert first.status_code == again.status_code == 302
    assert first["Location"] == again["Location"]
    assert Drop.objects.count() == 1 and Batch.objects.count() == 1


def test_the_same_form_changed_and_sent_again_books_nothing_more(alice, shop, alice_web):
    token = str(uuid.uuid4())
    first = alice_web.post("/orders/new/", form(shop, token=token))
    changed = alice_web.post("/orders/new/", form(shop, drop_row(name="Other"), token=token))
    assert changed.status_code == 302 and changed["Location"] == first["Location"]
    assert Drop.objects.count() == 1
    assert "This form was booked already" in alice_web.get(changed["Location"]).content.decode()


def test_a_twin_submission_that_looked_before_the_first_was_booked_replays_it(
    alice, shop, alice_web, monkeypatch
):
    """A double click's two requests both look for the form's booking before either has
    committed; the slower one's quote then meets the first one's drops (their references are
    taken). It shows the booking, as a reload does, never a refusal of the form's own drops."""
    data = form(shop)
    first = alice_web.post("/orders/new/", data)
    looks = []

    def looked_too_early(**where):
        looks.append(where)
        return None if len(looks) == 1 else booked_batch_id(**where)

    monkeypatch.setattr(booking_views, "booked_batch_id", looked_too_early)
    twin = alice_web.post("/orders/new/", data)
    assert twin.status_code == 302 and twin["Location"] == first["Location"]
    assert Drop.objects.count() == 1 and Batch.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_submissions_of_one_form_book_one_batch_and_one_charge(
    alice, member, open_for_business
):
    shop = PickupPlace.objects.create(business=alice.business, name="Shop", phone=PHONE, **SHOP)
    web = member(alice.business)
    data = form(shop)
    balance_before = Wallet.objects.get(business=alice.business, environment="sandbox").balance
    entries_before = list(LedgerEntry.objects.values_list("pk", flat=True))
    barrier = threading.Barrier(2)
    answers: list = []

    def submit():
        client = Client()
        client.force_login(web.user)
        barrier.wait()
        try:
            answers.append(client.post("/orders/new/", data))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.status_code for a in answers] == [302, 302]
    assert answers[0]["Location"] == answers[1]["Location"]
    assert Batch.objects.count() == 1 and Drop.objects.count() == 1
    # One charge: the wallet went down by the drop's price once, in one ledger entry.
    wallet = Wallet.objects.get(business=alice.business, environment="sandbox")
    assert wallet.balance == balance_before - Drop.objects.get().price
    assert LedgerEntry.objects.filter(wallet=wallet).exclude(pk__in=entries_before).count() == 1


def test_a_rejected_drop_says_why_beside_its_field_and_keeps_the_form(alice, shop, alice_web):
    far = drop_row(1, name="Far away", lat="13.4125", long="103.8670")  # Siem Reap
    cod = drop_row(2, name="Too much", cod_amount="900")
    response = alice_web.post("/orders/new/", form(shop, drop_row(), far, cod))
    page = response.content.decode()
    assert response.status_code == 400
    assert not Drop.objects.exists() and not Batch.objects.exists()
    assert "This address is outside the area we deliver to." in _near(page, "drops-1-address")
    assert "This cash amount cannot be collected" in _near(page, "drops-2-cod_amount")
    assert 'value="Far away"' in page and 'value="900"' in page


def test_a_bad_phone_is_refused_in_words_beside_the_phone(alice, shop, alice_web):
    response = alice_web.post("/orders/new/", form(shop, drop_row(phone="12")))
    assert response.status_code == 400
    assert "This phone number is not valid" in _near(response.content.decode(), "drops-0-phone")


def _near(page: str, field_id: str) -> str:
    """The field's own block of the page: its label to the next field."""
    start = page.index(f'for="id_{field_id}"')
    return page[start : page.index('<div class="field', start + 1)]


def test_without_javascript_a_drop_row_is_added_and_removed_keeping_what_was_typed(shop, alice_web):
    data = form(shop, drop_row(name="Kept"))
    data.pop("book")
    added = alice_web.post("/orders/new/", {**data, "add_drop": "1"}).content.decode()
    assert 'value="Kept"' in added and 'name="drops-1-name"' in added
    assert 'name="drops-TOTAL_FORMS" value="2"' in added
    two = form(shop, drop_row(0, name="First"), drop_row(1, name="Second"))
    two.pop("book")
    removed = alice_web.post("/orders/new/", {**two, "remove_drop": "0"}).content.decode()
    assert 'value="Second"' in removed and 'value="First"' not in removed
    assert not Drop.objects.exists()


def test_a_live_booking_is_refused_before_live_access(shop, alice_web, alice):
    alice.business.stage = "APPROVED"
    alice.business.save()
    response = alice_web.post("/orders/new/", form(shop, environment="live"))
    assert response.status_code == 400
    assert not Drop.objects.exists()


# --- The live quote --------------------------------------------------------------------------


def test_the_quote_prices_each_drop_and_the_total_as_the_api_does(alice, shop, alice_web, api):
    data = form(
        shop, drop_row(0), drop_row(1, lat="13.4125", long="103.8670"), drop_row(2, name="")
    )
    response = alice_web.post("/orders/new/quote/", data)
    assert response.status_code == 200, response.content
    answer = response.json()["data"]
    first, far, incomplete = answer["drops"]
    assert first["status"] == "quotable" and answer["total_price"] == first["price"]
    assert far == {
        "status": "rejected",
        "field": "address",
        "failure_reason": "OUT_OF_SERVICE_AREA",
        "message": "This address is outside the area we deliver to.",
    }
    assert incomplete == {"status": "incomplete"}
    assert not Drop.objects.exists()
    # The same price as POST /orders/quote for the same drop.
    body = {
        "client_batch_id": "q",
        "orders": [{"pickup": shop.pickup_body(), "dropoff": [{
            "client_order_id": "x", "sandbox_scenario": "manual",
            "dropoff": {"name": "Dara", "phone": "+85512345679", **HOME}}]}],
    }  # fmt: skip
    quoted = api.post("/orders/quote", body, alice.sandbox_key).json()["data"]
    assert quoted["orders"][0]["price"] == first["price"]


def test_the_quote_changes_with_the_pin(shop, alice_web):
    near = alice_web.post("/orders/new/quote/", form(shop)).json()["data"]["total_price"]
    moved = drop_row(lat="11.62", long="104.98")
    far = alice_web.post("/orders/new/quote/", form(shop, moved)).json()["data"]["total_price"]
    assert Decimal(far) > Decimal(near)


def test_the_quote_answers_bad_input_with_a_4xx_envelope(alice_web, shop):
    response = alice_web.post("/orders/new/quote/", {"form_token": "nope"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert alice_web.get("/orders/new/quote/").status_code == 405


def test_the_quote_needs_the_csrf_token(alice, shop, member):
    web = member(alice.business)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(web.user)
    assert strict.post("/orders/new/quote/", form(shop)).status_code == 403


# --- Lookups as one types --------------------------------------------------------------------


def test_an_address_typed_is_found_on_the_map(alice_web):
    found = alice_web.get("/orders/new/geocode/", {"address": "Aeon Mall Phnom Penh"}).json()
    assert found["data"] == {"found": True, "lat": 11.5486, "long": 104.9322}
    missing = alice_web.get("/orders/new/geocode/", {"address": "Zzyzx"}).json()["data"]
    assert missing["found"] is False
    assert alice_web.get("/orders/new/geocode/").status_code == 400


def test_the_address_book_offers_the_business_own_recipients_only(
    alice, bob, shop, alice_web, bob_web, api
):
    alice_web.post("/orders/new/", form(shop, drop_row(name="Dara Sok", address="Home of Dara")))
    bob_shop = PickupPlace.objects.create(business=bob.business, name="B", phone=PHONE, **SHOP)
    bob_web.post("/orders/new/", form(bob_shop, drop_row(name="Dara Bob", phone="+85512345670")))
    by_name = alice_web.get("/orders/new/recipients/", {"q": "dara", "environment": "sandbox"})
    assert [r["name"] for r in by_name.json()["data"]["recipients"]] == ["Dara Sok"]
    assert by_name.json()["data"]["recipients"][0]["address"] == "Home of Dara"
    by_phone = alice_web.get("/orders/new/recipients/", {"q": "012 345", "environment": "sandbox"})
    assert [r["phone"] for r in by_phone.json()["data"]["recipients"]] == ["+85512345679"]
    bobs = bob_web.get("/orders/new/recipients/", {"q": "Dara", "environment": "sandbox"})
    assert [r["name"] for r in bobs.json()["data"]["recipients"]] == ["Dara Bob"]
    assert bob_web.get("/orders/new/recipients/", {"q": "Sok"}).json()["data"]["recipients"] == []
    live = alice_web.get("/orders/new/recipients/", {"q": "dara", "environment": "live"})
    assert live.json()["data"]["recipients"] == []


def test_book_again_opens_new_delivery_filled_from_the_order(alice, shop, alice_web, bob_web):
    alice_web.post("/orders/new/", form(shop, drop_row(name="Again", cod_amount="5", notes="Gate")))
    drop = Drop.objects.get()
    assert f"/orders/new/?again={drop.pk}" in alice_web.get(f"/orders/{drop.pk}/").content.decode()
    page = alice_web.get(f"/orders/new/?again={drop.pk}").content.decode()
    assert 'value="Again"' in page and 'value="+85512345679"' in page and "Gate" in page
    assert 'value="5.00"' in page and f'value="{shop.pk}" selected' in page
    assert bob_web.get(f"/orders/new/?again={drop.pk}").status_code == 404


# --- The recipient's language (docs/contract.md §26) -----------------------------------------


def test_each_drop_row_offers_the_recipients_language_with_the_business_setting_first(
    alice, shop, alice_web
):
    alice.business.recipient_language = "en"
    alice.business.save(update_fields=["recipient_language"])
    page = alice_web.get("/orders/new/").content.decode()
    assert re.search(r'<select name="drops-0-recipient_language"[^>]*>', page)
    assert '<option value="en" selected>English</option>' in page
    assert '<option value="km">ភាសាខ្មែរ</option>' in page


def test_a_drop_booked_in_khmer_keeps_its_recipients_language(alice, shop, alice_web):
    alice.business.recipient_language = "en"
    alice.business.save(update_fields=["recipient_language"])
    rows = drop_row(0, recipient_language="km"), drop_row(1, name="Sokha")
    response = alice_web.post("/orders/new/", form(shop, *rows))
    assert response.status_code == 302, response.content.decode()
    languages = dict(Drop.objects.values_list("recipient_name", "recipient_language"))
    # A row left without a choice is the business's setting, as a drop without one in the API.
    assert languages == {"Dara": "km", "Sokha": None}
    page = alice_web.get(f"/orders/new/?again={Drop.objects.get(recipient_name='Dara').pk}")
    assert '<option value="km" selected>' in page.content.decode()


def test_an_unknown_recipients_language_is_refused_beside_its_field(alice, shop, alice_web):
    response = alice_web.post("/orders/new/", form(shop, drop_row(recipient_language="fr")))
    assert response.status_code == 400
    assert "fr is not one of the available choices" in _near(
        response.content.decode(), "drops-0-recipient_language"
    )
    assert not Drop.objects.exists()
