"""Short codes and labels in the OpenAPI schema (docs/contract.md §24): `short_code` in the
accepted result and the tracking entry, and GET /orders/{drop_id}/label.pdf as a PDF."""

from __future__ import annotations

from tests.api_docs.test_schema import error_codes, served_schema

LABEL = ("/api/v1/orders/{drop_id}/label.pdf", "get")
PATTERN = "^[0-9A-Z]{8,12}$"


def test_the_accepted_result_and_the_tracking_entry_carry_the_short_code():
    components = served_schema()["components"]["schemas"]
    for name in ("AcceptedOrder", "TrackedOrder"):
        assert components[name]["properties"]["short_code"]["pattern"] == PATTERN, name
    assert "short_code" in components["TrackedOrder"]["required"]
    # Answers stored before short codes existed replay without one, byte for byte.
    assert "short_code" not in components["AcceptedOrder"]["required"]


def test_the_label_is_described_as_a_pdf_with_its_404():
    schema = served_schema()
    operation = schema["paths"][LABEL[0]][LABEL[1]]
    assert set(operation["responses"]["200"]["content"]) == {"application/pdf"}
    assert "drop_id" in {parameter["name"] for parameter in operation["parameters"]}
    assert error_codes(schema, *LABEL, "404") == ["NOT_FOUND"]
