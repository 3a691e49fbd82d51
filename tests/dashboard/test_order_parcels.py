"""The order page shows the pickup's vehicle, the parcel, the cash on delivery and the COD
fee inside the price (docs/contract.md §18, docs/dashboard.md)."""

from __future__ import annotations

import html
import re

from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, cancel


def fact(page: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}"[^>]*>(.*?)</dd>', page, re.S)
    assert found, testid
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", found[1]))).strip()


def placed(api, key: str) -> dict[str, str]:
    body = batch(
        {
            **group(
                {
                    **drop("SOFA"),
                    "parcel": {
                        "size": "XL",
                        "weight_kg": 80.5,
                        "description": "Sofa",
                        "value": "300",
                    },
                    "cod": {"amount": "12.50"},
                },
                drop("PLAIN"),
            ),
            "vehicle": "van",
        }
    )
    orders = api.bulk(body, key).json()["data"]["orders"]
    return {o["client_order_id"]: o["drop_id"] for o in orders}


def test_the_order_page_shows_vehicle_parcel_and_cash(open_for_business, alice, alice_web, api):
    ids = placed(api, alice.sandbox_key)
    page = alice_web.get(f"/orders/{ids['SOFA']}/").content.decode()
    assert fact(page, "vehicle") == "Van (van)"  # its name, and the code the API takes
    assert fact(page, "parcel") == "Extra large (furniture), 80.5 kg: Sofa worth 300.00 USD"
    assert fact(page, "cod") == "12.50 USD: to collect at the door"
    assert fact(page, "price").endswith("USD including a COD fee of 0.13")

    plain = alice_web.get(f"/orders/{ids['PLAIN']}/").content.decode()
    assert fact(plain, "parcel") == "Small (an envelope, a phone box), 1 kg"
    assert fact(plain, "cod") == "none"
    assert "COD fee" not in fact(plain, "price")


def test_the_cash_is_collected_with_the_delivery_or_not_at_all(
    open_for_business, alice, alice_web, api
):
    ids = placed(api, alice.sandbox_key)
    advance(api, alice.sandbox_key, "SOFA", to="DELIVERED")
    page = alice_web.get(f"/orders/{ids['SOFA']}/").content.decode()
    assert fact(page, "cod").startswith("12.50 USD: collected")

    body = batch(group({**drop("LATER"), "cod": {"amount": "5.00"}}))
    later = api.bulk(body, alice.sandbox_key).json()["data"]["orders"][0]["drop_id"]
    cancel(api, alice.sandbox_key, "LATER")
    page = alice_web.get(f"/orders/{later}/").content.decode()
    assert fact(page, "cod") == "5.00 USD: not collected"
