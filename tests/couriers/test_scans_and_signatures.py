"""Scans and signatures (docs/contract.md §24): a drop that asks for a scan moves only with its
label's code; one that asks for a signature is delivered only with the recipient's PNG, kept
and served like the delivery photo through a signed /pod/ URL."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import orjson
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from billing.models import LedgerEntry
from couriers.pages import MOVE_MESSAGES
from orders.models import DeliveryEvent, Drop, DropStatus
from tests.couriers.conftest import PASSWORD, assigned_drops
from tests.factories import batch, drop, group
from tracking.proof import MAX_SIGNATURE_BYTES
from tracking.scenarios import SAMPLE_SIGNATURE, run_due_scenarios
from tracking.selectors import entries_by_drop_id

S = DropStatus
# A real PNG (the sandbox's sample photo): what a canvas's toBlob("image/png") makes is one.
PNG = (settings.BASE_DIR / "tracking" / "assets" / "sandbox-proof.png").read_bytes()


BOTH = {"scan": True, "signature": True}


def code_of(response) -> str:
    return response.json()["error"]["code"]


def scanned(**extra) -> dict:
    return {**drop(), "dropoff_verification": {"scan": True}, **extra}


def signed_for(**extra) -> dict:
    return {**drop(), "dropoff_verification": {"signature": True}, **extra}


def send(api, client, drop_id, signature: bytes | None = None, name="signature.png", **fields):
    """A move as the app sends it: a multipart form, the signature as a file."""
    body = {"to": "DELIVERED", **fields}
    if signature is not None:
        body["signature"] = SimpleUploadedFile(name, signature, content_type="image/png")
    return api.client.post(
        f"/api/v1/courier/drops/{drop_id}/move", body, HTTP_AUTHORIZATION=f"Bearer {client.token}"
    )


def nothing_moved(one: Drop, status: str, events: int) -> None:
    fresh = Drop.objects.get(pk=one.pk)
    assert fresh.status == status
    assert DeliveryEvent.objects.filter(drop=one).count() == events
    assert fresh.cod_collected_at is None and not fresh.pod_signature


# --- Scans ---------------------------------------------------------------------------------


def test_the_route_says_which_stops_need_a_scan_or_a_signature(open_for_business, alice, api, dara):
    courier, client = dara
    drops = assigned_drops(api, alice, courier, scanned(), signed_for())
    one, two = sorted(drops, key=lambda d: not d.needs_scan)  # the scanned one first
    stops = {s["drop_id"]: s for s in client.get("/route").json()["data"]["route"]["stops"]}
    needs = {
        (stops[str(d.pk)]["needs_scan"], stops[str(d.pk)]["needs_signature"]) for d in (one, two)
    }
    assert needs == {(True, False), (False, True)}
    assert one.needs_scan and two.needs_signature and not two.needs_scan


def test_a_missing_or_wrong_code_is_422_scan_mismatch_and_nothing_moves(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, scanned(cod={"amount": "4.00"}))
    events, ledger = DeliveryEvent.objects.filter(drop=one).count(), LedgerEntry.objects.count()

    for body in ({}, {"scan": ""}, {"scan": "WRONG0000"}, {"scan": one.short_code[:-1]}):
        answer = client.move(one.pk, to="PICKED_UP", **body)
        assert answer.status_code == 422 and code_of(answer) == "SCAN_MISMATCH", body
        nothing_moved(one, S.ASSIGNED, events)

    # Any case, spaces anywhere: the code as a courier types it from the label.
    typed = " ".join(one.short_code.lower()[i : i + 4] for i in range(0, len(one.short_code), 4))
    assert client.move(one.pk, to="PICKED_UP", scan=typed).status_code == 200

    # Delivering asks for the code again; a refused delivery takes no cash and no money.
    answer = client.move(one.pk, to="DELIVERED", cod_collected=True)
    assert answer.status_code == 422 and code_of(answer) == "SCAN_MISMATCH"
    nothing_moved(one, S.PICKED_UP, events + 1)
    assert LedgerEntry.objects.count() == ledger
    answer = client.move(one.pk, to="DELIVERED", cod_collected=True, scan=one.short_code)
    assert answer.status_code == 200, answer.content
    assert Drop.objects.get(pk=one.pk).status == S.DELIVERED


def test_a_drop_without_a_scan_moves_without_a_code(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop())
    assert client.move(one.pk, to="PICKED_UP").status_code == 200
    assert client.move(one.pk, to="DELIVERED").status_code == 200


def test_an_illegal_move_of_a_scanned_drop_is_still_409_with_the_route(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, scanned())
    answer = client.move(one.pk, to="DELIVERED")  # not picked up yet
    assert answer.status_code == 409 and code_of(answer) == "ILLEGAL_TRANSITION"


@pytest.mark.parametrize("scan", [1234, ["A"], {"code": "A"}, "X" * 41])
def test_a_scan_that_is_not_a_code_is_400(open_for_business, alice, api, dara, scan):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, scanned())
    answer = client.move(one.pk, to="PICKED_UP", scan=scan)
    assert answer.status_code == 400 and code_of(answer) == "VALIDATION_ERROR"
    assert [d["field"] for d in answer.json()["error"]["details"]] == ["scan"]


# --- Signatures ----------------------------------------------------------------------------


def test_a_delivery_without_the_signature_is_422_signature_required(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, signed_for())
    assert client.move(one.pk, to="PICKED_UP").status_code == 200  # no signature to pick up
    events = DeliveryEvent.objects.filter(drop=one).count()
    answer = send(api, client, one.pk)
    assert answer.status_code == 422 and code_of(answer) == "SIGNATURE_REQUIRED"
    nothing_moved(one, S.PICKED_UP, events)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"GIF89a" + b"\x00" * 64, "The signature must be a PNG image."),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "The signature must be a PNG image."),
        (PNG[:8] + b"\x00" * MAX_SIGNATURE_BYTES, "The signature is over 1 MB."),
    ],
    ids=["gif", "svg", "over-1-MB"],
)
def test_a_signature_not_a_png_or_too_big_is_400_and_nothing_moves(
    open_for_business, alice, api, dara, content, said
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, signed_for())
    client.move(one.pk, to="PICKED_UP")
    events = DeliveryEvent.objects.filter(drop=one).count()
    answer = send(api, client, one.pk, signature=content)
    assert answer.status_code == 400 and code_of(answer) == "VALIDATION_ERROR"
    assert answer.json()["error"]["details"] == [{"field": "signature", "message": said}]
    nothing_moved(one, S.PICKED_UP, events)


def test_a_signed_delivery_is_served_through_its_signed_url(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, signed_for())
    client.move(one.pk, to="PICKED_UP")
    answer = send(api, client, one.pk, signature=PNG, name="x.svg", received_by="Dara")
    assert answer.status_code == 200, answer.content

    (entry,) = api.track([one.client_order_id], alice.sandbox_key).json()["data"]["orders"]
    proof = entry["proof_of_delivery"]
    assert proof["method"] == "signature" and proof["photo_url"] is None
    assert proof["received_by"] == "Dara"
    path = urlsplit(proof["signature_url"]).path
    served = Client().get(path)
    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    assert b"".join(served.streaming_content) == PNG
    assert Drop.objects.get(pk=one.pk).pod_signature.name.endswith(".png")  # never .svg

    signed = path.removeprefix("/pod/")
    tampered = signed[:-1] + ("A" if signed[-1] != "A" else "B")
    assert Client().get("/pod/" + tampered).status_code == 404
    # The signature's URL names the signature only: as a photo's it would be forged.
    other_id = str(assigned_drops(api, alice, courier, drop())[0].pk)
    forged = other_id + signed[len(str(one.pk)) :]
    assert Client().get("/pod/" + forged).status_code == 404


def test_a_refused_signed_delivery_keeps_no_signature(open_for_business, alice, api, dara):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, signed_for(cod={"amount": "2.00"}))
    client.move(one.pk, to="PICKED_UP")
    answer = send(api, client, one.pk, signature=PNG)  # no cod_collected
    assert answer.status_code == 422 and code_of(answer) == "COD_NOT_COLLECTED"
    assert not Drop.objects.get(pk=one.pk).pod_signature


def test_another_courier_can_neither_move_nor_see_the_drop(
    open_for_business, alice, api, dara, sophea
):
    courier, _ = dara
    _, other = sophea
    (one,) = assigned_drops(api, alice, courier, {**drop(), "dropoff_verification": BOTH})
    answer = other.move(one.pk, to="PICKED_UP", scan=one.short_code)
    assert answer.status_code == 404 and code_of(answer) == "NOT_FOUND"
    answer = send(api, other, one.pk, signature=PNG, scan=one.short_code)
    assert answer.status_code == 404
    assert Drop.objects.get(pk=one.pk).status == S.ASSIGNED
    assert other.get("/route").json()["data"]["route"] is None


# --- The request: dropoff_verification's scan and signature ---------------------------------


def test_both_flags_and_the_pin_can_be_asked_together(open_for_business, alice, api, dara):
    courier, client = dara
    asked = {"pin": True, "scan": True, "signature": True}
    (one,) = assigned_drops(api, alice, courier, {**drop(), "dropoff_verification": asked})
    assert one.dropoff_pin and one.needs_scan and one.needs_signature
    client.move(one.pk, to="PICKED_UP", scan=one.short_code)
    answer = send(api, client, one.pk, signature=PNG, scan=one.short_code)
    assert answer.status_code == 422 and code_of(answer) == "WRONG_PIN"
    answer = send(api, client, one.pk, signature=PNG, scan=one.short_code, pin=one.dropoff_pin)
    assert answer.status_code == 200, answer.content
    (entry,) = api.track([one.client_order_id], alice.sandbox_key).json()["data"]["orders"]
    # The PIN says most; the signature is kept and served beside it.
    assert entry["proof_of_delivery"]["method"] == "pin"
    assert entry["proof_of_delivery"]["signature_url"]


@pytest.mark.parametrize(
    "verification",
    [{"scan": "yes"}, {"scan": 1}, {"signature": None}, {"signature": "true"}, {"sign": True}],
)
def test_a_malformed_scan_or_signature_flag_is_400(open_for_business, alice, api, verification):
    body = batch(group({**drop(), "dropoff_verification": verification}))
    answer = api.bulk(body, alice.sandbox_key)
    assert answer.status_code == 400 and code_of(answer) == "VALIDATION_ERROR"
    (detail,) = answer.json()["error"]["details"]
    assert detail["field"].startswith("orders[0].dropoff[0].dropoff_verification")
    assert Drop.objects.count() == 0


def test_the_openapi_document_names_the_flags_and_the_signature(db):
    schemas = Client().get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    assert {"pin", "scan", "signature"} <= set(schemas["DropoffVerification"]["properties"])
    assert "signature_url" in schemas["ProofOfDelivery"]["properties"]
    method = schemas["ProofOfDelivery"]["properties"]["method"]
    ref = method.get("$ref") or method["allOf"][0]["$ref"] if "enum" not in method else None
    enum = method["enum"] if ref is None else schemas[ref.rsplit("/", 1)[1]]["enum"]
    assert "signature" in enum


def test_the_order_page_and_the_recipient_s_page_show_the_signature(
    open_for_business, alice, alice_web, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, signed_for())
    client.move(one.pk, to="PICKED_UP")
    assert send(api, client, one.pk, signature=PNG).status_code == 200
    (entry,) = api.track([one.client_order_id], alice.sandbox_key).json()["data"]["orders"]

    order_page = alice_web.get(f"/orders/{one.pk}/").content.decode()
    recipient_page = Client().get(urlsplit(entry["tracking_url"]).path).content.decode()

    assert "The recipient signed for it." in order_page
    assert "Signed for at the door" in recipient_page
    for page in (order_page, recipient_page):
        tag = page.split('class="proof-signature"', 1)[1].split(">", 1)[0]
        assert 'alt="The recipient\'s signature"' in tag
        src = tag.split('src="', 1)[1].split('"', 1)[0]
        assert src.startswith("/pod/")
        opened = Client().get(src)
        assert opened.status_code == 200 and b"".join(opened.streaming_content) == PNG


def test_the_sandbox_test_driver_signs_where_a_drop_asks_for_a_signature(
    open_for_business, alice, api, clock, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    asked = {**signed_for(), "sandbox_scenario": "deliver"}
    plain = {**drop(), "sandbox_scenario": "deliver"}
    answer = api.bulk(batch(group(asked, plain)), alice.sandbox_key)
    ids = [o["drop_id"] for o in answer.json()["data"]["orders"]]
    for _ in range(4):
        clock.shift(timedelta(seconds=settings.SANDBOX_STEP_SECONDS))
        run_due_scenarios()

    entries = entries_by_drop_id(ids)
    signed, unsigned = (entries[i]["proof_of_delivery"] for i in ids)
    assert signed["method"] == "signature" and signed["signature_url"]
    assert unsigned["method"] == "photo" and unsigned["signature_url"] is None
    served = Client().get(urlsplit(signed["signature_url"]).path)
    assert b"".join(served.streaming_content).startswith(PNG[:8])
    assert Drop.objects.get(pk=ids[0]).pod_signature.name == SAMPLE_SIGNATURE


def test_the_app_s_plain_form_takes_a_typed_code_and_says_why_it_refuses(
    open_for_business, alice, api, dara
):
    """Without JavaScript: the code typed in the form; a signature cannot be drawn, so a
    delivery that asks for one is refused with the reason at the stop."""
    courier, _ = dara
    (one,) = assigned_drops(api, alice, courier, {**drop(), "dropoff_verification": BOTH})
    phone = Client()
    phone.post("/courier/sign-in", {"phone": courier.phone, "password": PASSWORD})
    page = phone.get("/courier/").content.decode()
    assert 'name="scan"' in page and "data-signature-pad" not in page  # signed at delivery

    refused = phone.post(f"/courier/drops/{one.pk}/move", {"to": "PICKED_UP", "scan": "NOPE"})
    assert refused.status_code == 422
    assert MOVE_MESSAGES["SCAN_MISMATCH"] in refused.content.decode()
    taken = phone.post(f"/courier/drops/{one.pk}/move", {"to": "PICKED_UP", "scan": one.short_code})
    assert taken.status_code == 302
    page = phone.get("/courier/").content.decode()
    assert 'name="scan"' in page and "data-signature-pad" in page
    refused = phone.post(
        f"/courier/drops/{one.pk}/move", {"to": "DELIVERED", "scan": one.short_code}
    )
    assert refused.status_code == 422
    assert MOVE_MESSAGES["SIGNATURE_REQUIRED"] in refused.content.decode()
    signed = SimpleUploadedFile("signature.png", PNG, content_type="image/png")
    body = {"to": "DELIVERED", "scan": one.short_code, "signature": signed}
    assert phone.post(f"/courier/drops/{one.pk}/move", body).status_code == 302
    assert Drop.objects.get(pk=one.pk).pod_method == "signature"


def test_the_flags_are_fixed_at_creation_sent_back_unchanged_they_are_ignored(
    open_for_business, alice, api
):
    answer = api.bulk(
        batch(group({**drop("FX-1"), "dropoff_verification": {"scan": True}})), alice.sandbox_key
    )
    drop_id = answer.json()["data"]["orders"][0]["drop_id"]

    def patch(body):
        return api.client.patch(
            f"/api/v1/orders/{drop_id}",
            orjson.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {alice.sandbox_key}",
        )

    for same in ({"scan": True}, {"pin": False, "scan": True, "signature": False}):
        assert patch({"dropoff_verification": same}).status_code == 200
    for changed in ({}, {"scan": False}, {"scan": True, "signature": True}, {"pin": True}):
        answer = patch({"dropoff_verification": changed})
        assert answer.status_code == 409 and code_of(answer) == "NOT_EDITABLE", changed
    fixed = Drop.objects.get(pk=drop_id)
    assert fixed.needs_scan and not fixed.needs_signature and fixed.dropoff_pin is None
