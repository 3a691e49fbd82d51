"""The schema's word on GET /batches items and on a used quote."""

from __future__ import annotations

from tests.api_docs.test_schema import error_codes, served_schema


def test_batch_summaries_carry_created_at(db):
    schema = served_schema()
    summary = schema["components"]["schemas"]["BatchSummary"]
    assert summary["properties"]["created_at"]["format"] == "date-time"
    assert "created_at" in summary["required"]


def test_bulk_documents_quote_used(db):
    schema = served_schema()
    assert "QUOTE_USED" in error_codes(schema, "/api/v1/orders/bulk", "post", "409")
    conflict = schema["paths"]["/api/v1/orders/bulk"]["post"]["responses"]["409"]
    assert (
        "QUOTE_USED: the quote_id's quote already backs another batch" in (conflict["description"])
    )
