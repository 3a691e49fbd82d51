"""The orders page's CSV export: the filtered listing, every page of it, as CSV lines.

It walks tracking/listing.py page by page (the same keyset cursor as GET /orders), so a
page of EXPORT_PAGE_SIZE rows costs the listing's three queries and one for the batches'
names, whatever the rows hold; nothing is read per row. Columns: docs/dashboard.md.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

from orders.models import Batch
from tracking.listing import MAX_LIMIT, DropFilters, list_drops

MAX_EXPORT_ROWS = 100_000
EXPORT_PAGE_SIZE = MAX_LIMIT
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Excel reads a UTF-8 file without it as the local code page, and Khmer names as noise.
BYTE_ORDER_MARK = "\ufeff"

COLUMNS = [
    "drop_id",
    "client_order_id",
    "external_waybill",
    "environment",
    "status",
    "batch_id",
    "client_batch_id",
    "created_at",
    "updated_at",
    "pickup_name",
    "pickup_phone",
    "pickup_address",
    "pickup_lat",
    "pickup_long",
    "pickup_scheduled_at",
    "recipient_name",
    "recipient_phone",
    "dropoff_address",
    "dropoff_lat",
    "dropoff_long",
    "price",
    "currency",
    "driver_name",
    "eta_dropoff_at",
    "delivered_at",
    "proof_method",
    "received_by",
    "failure_reason",
    "failed_at",
    "tracking_url",
    # docs/contract.md §18, appended so that the earlier columns keep their places.
    "vehicle",
    "parcel_size",
    "parcel_weight_kg",
    "parcel_description",
    "parcel_value",
    "delivery_price",
    "cod_fee",
    "cod_amount",
    "cod_status",
    "cod_collected_at",
]


def safe_cell(value: object) -> str:
    """The cell's text, with a leading ' if a spreadsheet would read it as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _address(address: dict | None) -> str:
    if not address:
        return ""
    return ", ".join(str(part) for part in address.values() if part)


def row_of(entry: dict, client_batch_ids: dict[str, str]) -> list[str]:
    """One CSV row of a tracking entry (times as the API gives them: UTC, ISO 8601, Z)."""
    pickup, dropoff = entry["pickup"], entry["dropoff"]
    proof, failure = entry["proof_of_delivery"] or {}, entry["failure"] or {}
    parcel, cod = entry["parcel"], entry["cod"] or {}
    values = [
        entry["drop_id"],
        entry["client_order_id"],
        entry["external_waybill"],
        entry["environment"],
        entry["status"],
        entry["batch_id"],
        client_batch_ids.get(entry["batch_id"]),
        entry["created_at"],
        entry["updated_at"],
        pickup["name"],
        pickup["phone"],
        _address(pickup["address"]),
        pickup["lat"],
        pickup["long"],
        pickup["scheduled_at"],
        dropoff["name"],
        dropoff["phone"],
        _address(dropoff["address"]),
        dropoff["lat"],
        dropoff["long"],
        entry["price"],
        entry["currency"],
        (entry["driver"] or {}).get("name"),
        (entry["eta"] or {}).get("dropoff_at"),
        proof.get("at"),
        proof.get("method"),
        proof.get("received_by"),
        failure.get("reason"),
        failure.get("at"),
        entry["tracking_url"],
        pickup["vehicle"],
        parcel["size"],
        parcel["weight_kg"],
        parcel["description"],
        parcel["value"],
        entry["price_breakdown"]["delivery"],
        entry["price_breakdown"]["cod_fee"],
        cod.get("amount"),
        cod.get("status"),
        cod.get("collected_at"),
    ]
    return [safe_cell(value) for value in values]


def _lines(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue()


def header() -> str:
    return BYTE_ORDER_MARK + _lines([COLUMNS])


def export_lines(*, business, environments: Sequence[str], filters: DropFilters) -> Iterator[str]:
    """The CSV text, one chunk per listing page: the header, the rows, and a last line
    saying so if MAX_EXPORT_ROWS cut the export short."""
    yield header()
    cursor, written = None, 0
    while True:
        page = list_drops(
            business=business,
            environments=environments,
            filters=filters,
            limit=min(EXPORT_PAGE_SIZE, MAX_EXPORT_ROWS - written),
            cursor=cursor,
        )
        batch_ids = {entry["batch_id"] for entry in page.orders}
        names = dict(
            Batch.objects.filter(business=business, pk__in=batch_ids).values_list(
                "id", "client_batch_id"
            )
        )
        client_batch_ids = {str(pk): name for pk, name in names.items()}
        yield _lines([row_of(entry, client_batch_ids) for entry in page.orders])
        written += len(page.orders)
        if not page.has_more:
            return
        if written >= MAX_EXPORT_ROWS:
            yield _lines(
                [[f"# Cut at {MAX_EXPORT_ROWS} rows: more orders match these filters. "
                  "Narrow them (e.g. by dates) and export again for the rest."]]
            )  # fmt: skip
            return
        cursor = page.next_cursor
