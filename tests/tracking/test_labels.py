"""GET /orders/<drop_id>/label.pdf (docs/contract.md §24): an A6 PDF whose Code 128 barcode
and QR code read back as the drop's short code, for the key's business and environment only."""

from __future__ import annotations

import uuid

import pytest

from orders.models import Drop
from tests.factories import batch, drop, group
from tests.helpers import assert_error, read_label_pages

A6_MM = (100.0, 150.0)


def accepted(api, key: str, *drops: dict) -> list[dict]:
    response = api.bulk(batch(group(*drops)), key)
    assert response.status_code == 200, response.content
    return response.json()["data"]["orders"]


def label(api, key: str | None, drop_id: str, headers: dict | None = None):
    return api.get(f"/orders/{drop_id}/label.pdf", key, headers)


def test_a_drop_label_is_an_a6_pdf_whose_barcode_and_qr_read_as_its_short_code(
    open_for_business, alice, api
):
    [entry] = accepted(api, alice.sandbox_key, drop("L-1", name="Dara Sok"))
    code = Drop.objects.get(pk=entry["drop_id"]).short_code
    assert entry["short_code"] == code

    response = label(api, alice.sandbox_key, entry["drop_id"])

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF-")
    [(size, read)] = read_label_pages(response.content)
    assert size == A6_MM
    assert read == {"Code128": code, "QRCode": code}


def test_a_label_shows_the_business_first_name_area_and_code_as_text(open_for_business, alice, api):
    import pypdfium2

    [entry] = accepted(api, alice.sandbox_key, drop("L-1", name="Dara Sok"))
    pdf = label(api, alice.sandbox_key, entry["drop_id"]).content
    document = pypdfium2.PdfDocument(pdf)
    text = document[0].get_textpage().get_text_range()
    document.close()
    assert "Alice Shop" in text
    assert "Dara" in text and "Sok" not in text  # the first name only
    assert "Phnom Penh" in text  # the service area the drop is in
    assert entry["short_code"] in text
    assert "L-1" in text


@pytest.mark.parametrize("accept", ["application/json", "text/html", "image/png"])
def test_any_accept_header_still_gets_the_pdf(open_for_business, alice, api, accept):
    [entry] = accepted(api, alice.sandbox_key, drop("L-1"))
    response = label(api, alice.sandbox_key, entry["drop_id"], {"Accept": accept})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"


def test_another_business_drop_has_no_label(open_for_business, alice, bob, api):
    [entry] = accepted(api, alice.sandbox_key, drop("L-1"))
    response = label(api, bob.sandbox_key, entry["drop_id"], {"Accept": "application/pdf"})
    assert_error(response, 404, "NOT_FOUND")
    assert response["Content-Type"].startswith("application/json")


def test_the_other_environment_drop_has_no_label(open_for_business, alice, api):
    [entry] = accepted(api, alice.sandbox_key, drop("L-1"))
    assert_error(label(api, alice.live_key, entry["drop_id"]), 404, "NOT_FOUND")


def test_an_unknown_drop_has_no_label(open_for_business, alice, api):
    assert_error(label(api, alice.sandbox_key, str(uuid.uuid4())), 404, "NOT_FOUND")


def test_a_label_needs_a_key(open_for_business, alice, api):
    [entry] = accepted(api, alice.sandbox_key, drop("L-1"))
    assert_error(label(api, None, entry["drop_id"]), 401, "UNAUTHENTICATED")
