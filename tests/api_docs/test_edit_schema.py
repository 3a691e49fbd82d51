"""PATCH /orders/{drop_id} in the OpenAPI schema (docs/contract.md §17): its body, and every
answer the view gives, 422's failure_reason included."""

from __future__ import annotations

from tests.api_docs.test_schema import error_codes, served_schema
from tracking.edit_inputs import FIELDS

EDIT = ("/api/v1/orders/{drop_id}", "patch")


def test_the_edit_is_described_with_its_body_and_every_refusal():
    schema = served_schema()
    operation = schema["paths"][EDIT[0]][EDIT[1]]
    body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    fields = components[body.rsplit("/", 1)[1]]["properties"]
    # Every field the parser knows, by its top-level name; nothing it would refuse as unknown.
    assert set(fields) == {name.split(".")[0] for name in FIELDS}
    assert set(components["EditedRecipient"]["properties"]) == {
        "name",
        "phone",
        "lat",
        "long",
        "address",
    }
    assert "drop_id" in {parameter["name"] for parameter in operation["parameters"]}
    assert error_codes(schema, *EDIT, "404") == ["NOT_FOUND"]
    assert error_codes(schema, *EDIT, "409") == ["NOT_EDITABLE"]
    assert set(error_codes(schema, *EDIT, "400")) == {"VALIDATION_ERROR", "MALFORMED_JSON"}
    rejected = components["EditRejectedError"]
    assert set(rejected["required"]) == {
        "code",
        "failure_reason",
        "message",
        "details",
        "request_id",
    }
    reasons = rejected["properties"]["failure_reason"]["allOf"][0]["enum"]
    assert reasons == [
        "INVALID_PHONE",
        "INVALID_COORDINATES",
        "GEOCODE_FAILED",
        "OUT_OF_SERVICE_AREA",
        "INVALID_TIME_WINDOW",
        "PARCEL_TOO_LARGE",
        "INVALID_COD",
        "INSUFFICIENT_BALANCE",
    ]
    entry = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    data = components[entry.rsplit("/", 1)[1]]["properties"]["data"]["$ref"]
    assert data.endswith("/TrackedOrder")


def test_order_updated_is_an_event_type_receivers_can_subscribe_to():
    schema = served_schema()
    assert "order.updated" in schema["components"]["schemas"]["EventType"]["enum"]
