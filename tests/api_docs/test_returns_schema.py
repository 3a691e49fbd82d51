"""OpenAPI for returns and what a wallet owes (docs/contract.md §19): the statuses, the
tracking entry's `return`, the sandbox driver's targets, the account's `owed`."""

from __future__ import annotations

import orjson
from django.test import Client


def served_schema() -> dict:
    response = Client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return orjson.loads(response.content)


def ref_of(prop: dict) -> str:
    """The component a property points to, whether nullable (oneOf/allOf) or not."""
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[1]
    for key in ("allOf", "oneOf", "anyOf"):
        for option in prop.get(key, []):
            if "$ref" in option:
                return option["$ref"].rsplit("/", 1)[1]
    raise AssertionError(prop)


def test_the_return_statuses_receipt_and_targets_are_described():
    schema = served_schema()
    components = schema["components"]["schemas"]
    statuses = components["TrackedOrder"]["properties"]["status"]
    assert {"RETURNING", "RETURNED"} <= set(components[ref_of(statuses)]["enum"])
    entry = components["TrackedOrder"]
    assert "return" in entry["required"]
    receipt = entry["properties"]["return"]
    assert receipt.get("nullable") or {"type": "null"} in receipt.get("oneOf", [])
    assert set(components[ref_of(receipt)]["properties"]) == {"at", "received_by"}
    assert "RETURNING" in entry["properties"]["failure"]["description"]
    advance = components["AdvanceRequest"]["properties"]["to"]
    assert {"RETURNING", "RETURNED"} <= set(components[ref_of(advance)]["enum"])


def test_the_account_describes_owed_and_the_return_fee():
    components = served_schema()["components"]["schemas"]
    wallet = components["Wallet"]
    assert set(wallet["required"]) == {"balance", "owed"}
    assert "INSUFFICIENT_BALANCE" in wallet["properties"]["owed"]["description"]
    assert "return_fee_percent" in components["Pricing"]["properties"]
