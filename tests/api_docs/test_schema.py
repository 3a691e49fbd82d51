"""The OpenAPI schema and its docs page: clean, complete, public, and served from our own files."""

from __future__ import annotations

import io
import re
import uuid

import orjson
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client

OPERATIONS = {
    ("/api/v1/orders/bulk", "post"),
    ("/api/v1/orders/quote", "post"),
    ("/api/v1/orders", "get"),
    ("/api/v1/batches", "get"),
    ("/api/v1/batches/{batch_id}", "get"),
    ("/api/v1/orders/tracking", "post"),
    ("/api/v1/orders/cancel", "post"),
    ("/api/v1/orders/{drop_id}", "patch"),
    ("/api/v1/orders/{drop_id}/label.pdf", "get"),
    ("/api/v1/sandbox/orders/advance", "post"),
    ("/api/v1/account", "get"),
    ("/api/v1/account/cod/credit-wallet", "post"),
    ("/api/v1/service-areas", "get"),
    ("/api/v1/vehicle-types", "get"),
    ("/api/v1/events", "get"),
    ("/api/v1/webhook-endpoints", "get"),
    ("/api/v1/webhook-endpoints", "post"),
    ("/api/v1/webhook-endpoints/{endpoint_id}", "get"),
    ("/api/v1/webhook-endpoints/{endpoint_id}", "patch"),
    ("/api/v1/webhook-endpoints/{endpoint_id}", "delete"),
    ("/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret", "post"),
    ("/api/v1/webhook-endpoints/{endpoint_id}/test", "post"),
    ("/api/v1/webhook-endpoints/{endpoint_id}/deliveries", "get"),
    ("/api/v1/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/resend", "post"),
}
# The courier API (docs/contract.md §20): its own tag and its own security scheme.
COURIER_OPERATIONS = {
    ("/api/v1/courier/session", "post"),
    ("/api/v1/courier/session", "delete"),
    ("/api/v1/courier/status", "post"),
    ("/api/v1/courier/route", "get"),
    ("/api/v1/courier/location", "post"),
    ("/api/v1/courier/drops/{drop_id}/move", "post"),
    ("/api/v1/courier/offer", "get"),
    ("/api/v1/courier/offers/{offer_id}/accept", "post"),
    ("/api/v1/courier/offers/{offer_id}/decline", "post"),
    ("/api/v1/courier/earnings", "get"),
    ("/api/v1/courier/history", "get"),
    ("/api/v1/courier/cash", "get"),
}


def served_schema() -> dict:
    response = Client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return orjson.loads(response.content)


def error_codes(schema: dict, path: str, method: str, status: str) -> list[str]:
    ref = schema["paths"][path][method]["responses"][status]["content"]["application/json"]
    envelope = schema["components"]["schemas"][ref["schema"]["$ref"].rsplit("/", 1)[1]]
    error = envelope["properties"]["error"]["$ref"].rsplit("/", 1)[1]
    return schema["components"]["schemas"][error]["properties"]["code"]["allOf"][0]["enum"]


def test_spectacular_validate_fail_on_warn_is_clean(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    # Raises SchemaGenerationError on any warning or error; validation runs against the spec.
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--file",
        str(tmp_path / "schema.yaml"),
        stdout=out,
        stderr=err,
    )
    assert "Warning" not in err.getvalue() and "Error" not in err.getvalue(), err.getvalue()
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3.")


def test_schema_is_public_yaml_by_default_and_json_on_request():
    response = Client().get("/api/v1/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    assert response["X-Request-Id"]
    # A key is not needed, and a bad one is not even looked at.
    response = Client().get("/api/v1/schema/?format=json", HTTP_AUTHORIZATION="Bearer nonsense")
    assert response.status_code == 200
    assert orjson.loads(response.content)["openapi"].startswith("3.")


def test_schema_describes_every_endpoint_and_nothing_else():
    schema = served_schema()
    operations = {(path, method) for path, item in schema["paths"].items() for method in item}
    # The catch-all 404 route and the docs pages are not in it.
    assert operations == OPERATIONS | COURIER_OPERATIONS


def test_the_courier_api_is_its_own_section_with_courier_tokens():
    schema = served_schema()
    scheme = schema["components"]["securitySchemes"]["CourierToken"]
    assert scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "crr_<40 chars>"
    for path, method in COURIER_OPERATIONS:
        op = schema["paths"][path][method]
        assert op["tags"] == ["courier"]
        if (path, method) == ("/api/v1/courier/session", "post"):
            assert op.get("security", []) in ([], [{}])  # signing in needs no token
        else:
            assert op["security"] == [{"CourierToken": []}]


def test_bearer_auth_and_headers_are_described():
    schema = served_schema()
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    for path, method in OPERATIONS:
        op = schema["paths"][path][method]
        assert op["security"] == [{"ApiKey": []}]
        # 200, or 201 where something is created (POST /webhook-endpoints).
        ok = op["responses"].get("200") or op["responses"]["201"]
        assert "X-Request-Id" in ok["headers"]
        assert "Retry-After" in op["responses"]["429"]["headers"]
        assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(ok["headers"])
    bulk = schema["paths"]["/api/v1/orders/bulk"]["post"]
    (key,) = [p for p in bulk["parameters"] if p["name"] == "Idempotency-Key"]
    assert key["in"] == "header" and key["required"] is True
    assert "Idempotent-Replayed" in bulk["responses"]["200"]["headers"]


def test_idempotency_key_is_a_string_with_a_uuid_pattern():
    # `format: uuid` made openapi-python-client pass a UUID object, which httpx refuses.
    bulk = served_schema()["paths"]["/api/v1/orders/bulk"]["post"]
    (key,) = [p for p in bulk["parameters"] if p["name"] == "Idempotency-Key"]
    assert key["schema"] == {"type": "string", "pattern": key["schema"]["pattern"]}
    pattern = re.compile(key["schema"]["pattern"])
    for value in (str(uuid.uuid4()), str(uuid.uuid4()).upper()):
        assert pattern.fullmatch(value) and uuid.UUID(value)  # the server takes it too
    for value in ("", "not-a-uuid", str(uuid.uuid4())[:-1], f"{uuid.uuid4()}0"):
        assert not pattern.fullmatch(value)


def test_phones_and_coordinates_of_a_batch_have_types():
    # Untyped, a generated client typed them Any. Wrong values still reject only their drop.
    components = served_schema()["components"]["schemas"]
    for place in ("Pickup", "Recipient"):
        fields = components[place]["properties"]
        assert fields["phone"]["type"] == "string"
        assert "nullable" not in fields["phone"]  # a null phone is never valid
        for axis in ("lat", "long"):
            assert fields[axis]["type"] == "number"
            assert fields[axis]["nullable"] is True  # null counts as absent
        assert {"phone", "lat", "long"}.isdisjoint(components[place]["required"])


def test_error_codes_per_endpoint():
    schema = served_schema()
    bulk = ("/api/v1/orders/bulk", "post")
    assert set(error_codes(schema, *bulk, "400")) == {
        "VALIDATION_ERROR",
        "MALFORMED_JSON",
        "IDEMPOTENCY_KEY_MISSING",
        "IDEMPOTENCY_KEY_INVALID",
    }
    assert set(error_codes(schema, *bulk, "409")) == {
        "IDEMPOTENCY_KEY_REUSED",
        "CLIENT_BATCH_ID_REUSED",
        "QUOTE_EXPIRED",
        "QUOTE_USED",
        "QUOTE_MISMATCH",
    }
    assert set(error_codes(schema, *bulk, "404")) == {"NOT_FOUND"}  # an unknown quote_id
    quote = ("/api/v1/orders/quote", "post")
    assert set(error_codes(schema, *quote, "400")) == {"VALIDATION_ERROR", "MALFORMED_JSON"}
    tracking = ("/api/v1/orders/tracking", "post")
    assert set(error_codes(schema, *tracking, "400")) == {"VALIDATION_ERROR", "MALFORMED_JSON"}
    assert "409" not in schema["paths"][tracking[0]]["post"]["responses"]
    advance = ("/api/v1/sandbox/orders/advance", "post")
    assert "SANDBOX_ONLY" in error_codes(schema, *advance, "403")
    assert error_codes(schema, "/api/v1/batches/{batch_id}", "get", "404") == ["NOT_FOUND"]
    endpoints = "/api/v1/webhook-endpoints"
    assert error_codes(schema, endpoints, "post", "409") == ["ENDPOINT_LIMIT_REACHED"]
    assert error_codes(schema, f"{endpoints}/{{endpoint_id}}/test", "post", "409") == [
        "ENDPOINT_DISABLED"
    ]
    assert error_codes(schema, "/api/v1/events", "get", "400") == ["VALIDATION_ERROR"]
    for listing in ("/api/v1/orders", "/api/v1/batches"):  # a bad parameter or cursor
        assert error_codes(schema, listing, "get", "400") == ["VALIDATION_ERROR"]
    for path, method in OPERATIONS:
        if "{endpoint_id}" in path:
            assert error_codes(schema, path, method, "404") == ["NOT_FOUND"]
    for path, method in OPERATIONS:
        assert error_codes(schema, path, method, "401") == ["UNAUTHENTICATED"]
        assert error_codes(schema, path, method, "405") == ["METHOD_NOT_ALLOWED"]
        assert error_codes(schema, path, method, "413") == ["PAYLOAD_TOO_LARGE"]
        assert error_codes(schema, path, method, "429") == ["RATE_LIMITED"]
        if "requestBody" in schema["paths"][path][method]:
            assert error_codes(schema, path, method, "415") == ["UNSUPPORTED_MEDIA_TYPE"]


def test_order_results_are_accepted_or_rejected():
    components = served_schema()["components"]["schemas"]
    assert set(components["OrderResult"]["discriminator"]["mapping"]) == {"accepted", "rejected"}
    assert {"pass_order_id", "drop_id", "price"} <= set(components["AcceptedOrder"]["required"])
    assert "failure_reason" in components["RejectedOrder"]["required"]
    assert components["FailureReason"]["enum"] == [
        "INVALID_PHONE",
        "INVALID_COORDINATES",
        "GEOCODE_FAILED",
        "OUT_OF_SERVICE_AREA",
        "SCHEDULE_IN_PAST",
        "OUTSIDE_OPERATING_HOURS",
        "INVALID_TIME_WINDOW",
        "PARCEL_TOO_LARGE",
        "INVALID_COD",
        "DUPLICATE_CLIENT_ORDER_ID",
        "INSUFFICIENT_BALANCE",
    ]


def test_vehicles_parcels_cod_and_price_breakdowns_are_described():
    """docs/contract.md §18: on the bulk body, in results and quotes, in the tracking entry."""
    components = served_schema()["components"]["schemas"]
    assert "vehicle" in components["PickupGroup"]["properties"]
    assert {"parcel", "cod"} <= set(components["Drop"]["properties"])
    assert set(components["Parcel"]["properties"]) == {"size", "weight_kg", "description", "value"}
    assert components["CashOnDelivery"]["required"] == ["amount"]
    assert set(components["PriceBreakdown"]["required"]) == {"delivery", "cod_fee"}
    for result in ("AcceptedOrder", "QuotableOrder", "TrackedOrder"):
        assert "price_breakdown" in components[result]["required"], result
    assert {"parcel", "cod"} <= set(components["TrackedOrder"]["required"])
    assert "vehicle" in components["TrackedPickup"]["required"]
    assert components["ParcelSize"]["enum"] == ["S", "M", "L", "XL"]
    assert components["CodStatus"]["enum"] == [
        "pending",
        "collected",
        "not_collected",
    ]


def test_windows_notes_and_undeliverable_action_are_described():
    """docs/contract.md §17: on the drop of a bulk body, in the tracking entry, as a filter."""
    schema = served_schema()
    components = schema["components"]["schemas"]
    drop = components["Drop"]["properties"]
    assert {"dropoff_window", "notes", "undeliverable_action"} <= set(drop)
    assert set(components["DropoffWindow"]["required"]) == {"start", "end"}
    entry = components["TrackedOrder"]
    assert {"dropoff_window", "window_status", "notes", "undeliverable_action"} <= set(
        entry["required"]
    )
    assert components["WindowStatus"]["enum"] == ["on_track", "at_risk", "met", "missed"]
    assert components["UndeliverableAction"]["enum"] == ["return", "dispose"]
    listing = schema["paths"]["/api/v1/orders"]["get"]["parameters"]
    assert "window_status" in {parameter["name"] for parameter in listing}


def test_docs_page_is_public_and_its_assets_are_ours():
    client = Client()
    response = client.get("/api/v1/docs/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "/api/v1/schema/" in page
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert any(a.endswith("swagger-ui.css") for a in assets)
    for asset in assets:
        assert asset.startswith("/static/"), f"{asset} is not served by us (no CDN)"
        assert finders.find(asset.removeprefix("/static/")), asset
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert b"".join(served.streaming_content)
