"""Returns on the business dashboard (docs/contract.md §19): the order page's timeline and
receipt, the orders filter by RETURNING and RETURNED, and the sandbox console's targets."""

from __future__ import annotations

import re

import pytest

from orders.models import Drop, DropStatus, UndeliverableAction
from tests.tracking.helpers import advance, place

S = DropStatus


@pytest.fixture
def returned(open_for_business, alice, api) -> dict[str, str]:
    """R-1 back at the pickup, W-1 on its way back, P-1 still pending."""
    ids = place(api, alice.sandbox_key, "R-1", "W-1", "P-1")
    advance(api, alice.sandbox_key, "R-1", to=S.RETURNED)
    advance(api, alice.sandbox_key, "W-1", to=S.RETURNING)
    return ids


def text_of(response) -> str:
    assert response.status_code == 200
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_the_order_page_shows_the_way_back_and_who_received_the_parcel(returned, alice_web):
    page = text_of(alice_web.get(f"/orders/{returned['R-1']}/"))

    assert re.search(r"Returned .*, received by Sandbox pickup desk", page)
    raw = alice_web.get(f"/orders/{returned['R-1']}/").content.decode()
    timeline = re.findall(r'<td data-label="Status">([^<]+)</td>', raw)
    assert timeline[-3:] == ["Failed", "Returning", "Returned"]


def test_the_orders_list_filters_by_the_return_statuses(returned, alice_web):
    page = alice_web.get("/orders/?environment=sandbox").content.decode()
    assert 'value="RETURNING"' in page and 'value="RETURNED"' in page

    back = alice_web.get("/orders/?environment=sandbox&status=RETURNED").content.decode()
    on_the_way = alice_web.get(
        "/orders/?environment=sandbox&status=RETURNING&status=RETURNED"
    ).content.decode()

    assert "R-1" in back and "W-1" not in back and "P-1" not in back
    assert "R-1" in on_the_way and "W-1" in on_the_way and "P-1" not in on_the_way


def test_the_sandbox_console_walks_a_drop_back(open_for_business, alice, alice_web, api):
    place(api, alice.sandbox_key, "C-1")
    console = alice_web.get("/sandbox/").content.decode()
    assert '<option value="RETURNING">' in console and '<option value="RETURNED">' in console

    response = alice_web.post(
        "/sandbox/advance/", {"client_order_id": "C-1", "to": "RETURNED"}, follow=True
    )

    assert response.status_code == 200
    tracked = api.track(["C-1"], alice.sandbox_key).json()["data"]["orders"][0]
    assert tracked["status"] == S.RETURNED


def test_the_sandbox_console_says_why_a_drop_to_dispose_of_never_returns(
    open_for_business, alice, alice_web, api
):
    ids = place(api, alice.sandbox_key, "D-1")
    Drop.objects.filter(pk=ids["D-1"]).update(undeliverable_action=UndeliverableAction.DISPOSE)

    response = alice_web.post("/sandbox/advance/", {"client_order_id": "D-1", "to": "RETURNED"})

    assert (
        "D-1</span>: it is to be disposed of if undeliverable, so it never moves to returned."
        in (" ".join(response.content.decode().split()))
    )
    assert Drop.objects.get(pk=ids["D-1"]).status == S.PENDING
