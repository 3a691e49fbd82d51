"""The console's index groups models by what operators look after (console/site.py): couriers,
the vehicle types they ride, their pay plans and the cash desk sit together under "Couriers",
whichever app holds them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.operators import staff_client

pytestmark = pytest.mark.django_db


def sections(client: Client, url: str = "/admin/") -> dict[str, list[str]]:
    """Each section of an index page, by its caption, with the models it lists."""
    page = client.get(url)
    assert page.status_code == 200
    found = {}
    for block in re.findall(r'<div class="app-\w+ module.*?</table>', page.content.decode(), re.S):
        name = re.search(r'class="section"[^>]*>([^<]+)</a>', block).group(1)
        found[name] = re.findall(
            r'<th scope="row" id="[\w-]+">\s*<a href="[^"]+"[^>]*>([^<]+)</a>', block
        )
    return found


@pytest.fixture
def superuser() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_couriers_and_their_vehicle_types_share_one_section(superuser):
    index = sections(superuser)

    assert index["Couriers"] == [
        "Cash desk",
        "Couriers",
        "Hub cash entries",
        "Pay plans",
        "Vehicle types",
    ]
    assert "Couriers" not in index["Orders"]
    assert "Fleet" not in index  # its one model moved: no empty section
    assert "Batches" in index["Orders"] and "Businesses" in index["Accounts"]


def test_the_section_has_its_own_page_and_the_old_ones_lead_there(superuser):
    assert sections(superuser, "/admin/couriers/") == {
        "Couriers": ["Cash desk", "Couriers", "Hub cash entries", "Pay plans", "Vehicle types"]
    }
    # A vehicle type's breadcrumb still names its app: its page shows the section holding it.
    assert sections(superuser, "/admin/fleet/") == {
        "Couriers": ["Cash desk", "Couriers", "Hub cash entries", "Pay plans", "Vehicle types"]
    }
    assert "Couriers" not in sections(superuser, "/admin/orders/")["Orders"]


def test_an_operator_sees_in_the_section_only_what_they_may_open():
    viewer = staff_client("fleet-viewer", perms=["fleet.view_vehicletype"])

    assert sections(viewer) == {"Couriers": ["Vehicle types"]}
    assert viewer.get("/admin/couriers/").status_code == 200
    assert staff_client("nobody").get("/admin/couriers/").status_code == 404
