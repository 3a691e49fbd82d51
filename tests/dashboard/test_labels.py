"""Labels from the dashboard (docs/dashboard.md, Labels): a batch's accepted drops or the
orders ticked on the orders page as one PDF, an A6 label per page, the business's own only."""

from __future__ import annotations

import pytest

from orders.models import Drop
from tests.factories import batch, drop, group
from tests.helpers import read_label_pages

A6_MM = (100.0, 150.0)


@pytest.fixture
def shop(open_for_business, make_tenant, member):
    tenant = make_tenant(name="Label Shop", sandbox_balance="500.00")
    return tenant, member(tenant.business)


def send(api, key: str, *drops: dict) -> dict:
    response = api.bulk(batch(group(*drops)), key)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_a_batch_pdf_has_a_page_per_accepted_drop_in_submission_order(shop, api):
    tenant, web = shop
    sent = send(
        api,
        tenant.sandbox_key,
        drop("B-1"),
        drop("B-2", phone="nope"),  # rejected: no label
        drop("B-3"),
        drop("B-4"),
    )
    codes = [entry["short_code"] for entry in sent["orders"] if entry["status"] == "accepted"]
    assert len(codes) == 3

    page = web.get(f"/batches/{sent['batch_id']}/").content.decode()
    assert f'href="/batches/{sent["batch_id"]}/labels.pdf"' in page and "Labels (PDF)" in page
    response = web.get(f"/batches/{sent['batch_id']}/labels.pdf")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    pages = read_label_pages(response.content)
    assert [size for size, _ in pages] == [A6_MM] * 3
    assert [read for _, read in pages] == [{"Code128": c, "QRCode": c} for c in codes]


def test_another_business_batch_has_no_labels(shop, api, make_tenant, member):
    tenant, _ = shop
    sent = send(api, tenant.sandbox_key, drop("B-1"))
    stranger = member(make_tenant(name="Stranger").business)
    assert stranger.get(f"/batches/{sent['batch_id']}/labels.pdf").status_code == 404


def test_the_orders_ticked_come_as_one_pdf_in_the_order_ticked(shop, api, make_tenant):
    tenant, web = shop
    sent = send(api, tenant.sandbox_key, drop("S-1"), drop("S-2"), drop("S-3"))
    by_id = {entry["client_order_id"]: entry for entry in sent["orders"]}
    listing = web.get("/orders/").content.decode()
    assert 'id="order-labels"' in listing
    assert f'name="drop" value="{by_id["S-2"]["drop_id"]}" form="order-labels"' in listing
    other = make_tenant(name="Other Shop")
    [foreign] = send(api, other.sandbox_key, drop("X-1"))["orders"]

    ticked = [by_id["S-3"]["drop_id"], foreign["drop_id"], by_id["S-1"]["drop_id"]]
    response = web.post("/orders/labels.pdf", {"drop": ticked})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    read = [codes for _, codes in read_label_pages(response.content)]
    # Another business's drop is left out, never printed.
    expected = [by_id["S-3"]["short_code"], by_id["S-1"]["short_code"]]
    assert read == [{"Code128": c, "QRCode": c} for c in expected]
    assert foreign["short_code"] not in str(read)


def test_nothing_ticked_goes_back_to_the_orders_with_a_message(shop, api):
    tenant, web = shop
    send(api, tenant.sandbox_key, drop("S-1"))
    response = web.post(
        "/orders/labels.pdf", {}, HTTP_REFERER="http://testserver/orders/?status=PENDING"
    )
    assert response.status_code == 302
    assert response["Location"] == "/orders/?status=PENDING"
    page = web.get(response["Location"]).content.decode()
    assert "Tick the orders to print labels for" in page


def test_a_ticked_value_that_is_no_drop_id_is_a_400(shop):
    _, web = shop
    assert web.post("/orders/labels.pdf", {"drop": ["nope"]}).status_code == 400


def test_labels_need_a_signed_in_member(shop, api, client):
    tenant, _ = shop
    sent = send(api, tenant.sandbox_key, drop("S-1"))
    response = client.get(f"/batches/{sent['batch_id']}/labels.pdf")
    assert response.status_code == 302 and "login" in response["Location"]
    assert Drop.objects.count() == 1


def test_an_order_page_shows_its_short_code_and_its_label(shop, api, make_tenant, member):
    tenant, web = shop
    [entry] = send(api, tenant.sandbox_key, drop("O-1"))["orders"]
    page = web.get(f"/orders/{entry['drop_id']}/").content.decode()
    assert f'data-testid="short-code">{entry["short_code"]}<' in page
    assert f'href="/orders/{entry["drop_id"]}/label.pdf"' in page

    response = web.get(f"/orders/{entry['drop_id']}/label.pdf")
    assert response["Content-Type"] == "application/pdf"
    [(size, read)] = read_label_pages(response.content)
    assert size == A6_MM and read == {"Code128": entry["short_code"], "QRCode": entry["short_code"]}
    stranger = member(make_tenant(name="Stranger").business)
    assert stranger.get(f"/orders/{entry['drop_id']}/label.pdf").status_code == 404
