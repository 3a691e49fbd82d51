"""The dashboard in Khmer names what it shows in Khmer too (docs/contract.md §26,
docs/dashboard.md "Language"): statuses, environments, parcel sizes, the seeded vehicle
types, the dashboard's own messages, and a sentence with a link said in one piece. The API
keeps its codes and English words (tests/core/test_languages.py)."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from dashboard.models import PickupPlace
from orders.models import Drop
from tests.factories import PHONE, SHOP
from tests.tracking.helpers import place

pytestmark = pytest.mark.django_db

# Our catalogue's words, written out: the test must fail if a name is left in English.
PENDING = "កំពុងរង់ចាំ"
DELIVERED = "បានដល់ហើយ"
SANDBOX = "សាកល្បង (sandbox)"
SMALL = "តូច (ស្រោមសំបុត្រ ប្រអប់ទូរសព្ទ)"
MOTORBIKE = "ម៉ូតូ"


@pytest.fixture
def khmer_web(alice_web):
    """alice's browser after the switch to Khmer (its cookie)."""
    alice_web.cookies[settings.LANGUAGE_COOKIE_NAME] = "km"
    return alice_web


def text_of(page: str, name: str) -> str:
    found = re.search(rf'data-testid="{name}"[^>]*>(.*?)</(?:span|dd)>', page, re.S)
    assert found, name
    return re.sub(r"<[^>]+>", " ", found[1]).strip()


def said(response) -> list[str]:
    """The messages the page shows (base.html's message list), in order."""
    return [str(message) for message in response.context["messages"]]


def test_an_order_page_in_khmer_names_its_status_environment_parcel_and_vehicle(
    open_for_business, alice, khmer_web, api
):
    ids = place(api, alice.sandbox_key, "KM-1")
    page = khmer_web.get(f"/orders/{ids['KM-1']}/").content.decode()

    assert text_of(page, "drop-status") == PENDING
    assert f'<span class="env env-sandbox">{SANDBOX}</span>' in page
    assert text_of(page, "parcel").startswith(f"{SMALL}, ")
    assert re.sub(r"\s+", " ", text_of(page, "vehicle")) == f"{MOTORBIKE} (motorbike)"
    events = page[page.index('data-testid="events"') :]
    assert f">{PENDING}</td>" in events


def test_the_orders_list_in_khmer_names_the_statuses(open_for_business, alice, khmer_web, api):
    place(api, alice.sandbox_key, "KM-2")
    page = khmer_web.get("/orders/").content.decode()

    assert f'<span class="status status-pending">{PENDING}</span>' in page
    assert f'<span class="env env-sandbox">{SANDBOX}</span>' in page
    # The filter's boxes too: every status by its name.
    assert re.search(rf'value="DELIVERED"[^>]*>\s*{DELIVERED}</label>', page)


def test_the_orders_list_says_no_match_and_its_link_in_one_khmer_sentence(khmer_web):
    page = khmer_web.get("/orders/", {"q": "nothing-like-this"}).content.decode()

    assert 'សាកប្រើតម្រងតិចជាងនេះ ឬ<a href="/orders/">សម្អាតវា</a>។' in page


def test_new_delivery_in_khmer_names_the_vehicles(open_for_business, alice, khmer_web):
    PickupPlace.objects.create(business=alice.business, name="Shop", phone=PHONE, **SHOP)
    page = khmer_web.get("/orders/new/").content.decode()

    assert f'value="motorbike">{MOTORBIKE}៖ កញ្ចប់រហូតដល់ទំហំ M, 20' in page
    assert "Motorbike" not in page


def test_the_test_driver_says_a_move_in_khmer(open_for_business, alice, khmer_web, api):
    place(api, alice.sandbox_key, "KM-3")

    moved = khmer_web.post(
        "/sandbox/advance/", {"client_order_id": "KM-3", "to": "DELIVERED"}, follow=True
    )
    assert said(moved) == [f"KM-3 ឥឡូវស្ថិតក្នុងស្ថានភាព {DELIVERED}។"]

    refused = khmer_web.post("/sandbox/advance/", {"client_order_id": "KM-3", "to": ""})
    assert refused.status_code == 400
    assert f"វាស្ថិតក្នុងស្ថានភាព {DELIVERED} ដូច្នេះមិនអាចទៅមុខទៀតបានទេ។" in (refused.content.decode())
    unknown = khmer_web.post("/sandbox/advance/", {"client_order_id": "NOPE-1", "to": ""})
    assert "គ្មានការកម្មង់ sandbox ដែលមានលេខសម្គាល់នេះទេ។" in unknown.content.decode()


def test_a_started_scenario_is_said_in_khmer(open_for_business, alice, khmer_web):
    response = khmer_web.post(
        "/sandbox/scenario/", {"scenario": "deliver", "pin": "on"}, follow=True
    )

    pin = Drop.objects.get(business=alice.business).dropoff_pin
    assert said(response) == [
        f"សេណារីយ៉ូ deliver បានចាប់ផ្ដើម៖ អ្នកបើកបរសាកល្បងដើរមួយជំហានរៀងរាល់ 10 វិនាទី។ PIN របស់អ្នកទទួលគឺ {pin}។"
    ]


def test_a_sandbox_top_up_is_said_in_khmer(alice, khmer_web):
    response = khmer_web.post("/wallet/sandbox-top-up/", {"amount": "5.00"}, follow=True)

    [message] = said(response)
    assert message.startswith("បានបញ្ចូល 5.00 ទៅកាបូប sandbox (")
