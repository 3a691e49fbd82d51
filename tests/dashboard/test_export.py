"""The orders page's CSV export: the filtered list, every page, escaped, bounded, streamed."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext

from dashboard import exports
from dashboard.exports import COLUMNS, MAX_EXPORT_ROWS, safe_cell
from orders.models import Drop
from tests.dashboard.helpers import created_at, local
from tests.factories import batch, drop, group
from tests.tracking.helpers import advance, place

ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")


@pytest.fixture(autouse=True)
def _fresh_cache(db):
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def shop(open_for_business, make_tenant, member):
    tenant = make_tenant(name="Export Shop", sandbox_balance="1000.00", live_balance="100.00")
    return tenant, member(tenant.business)


def export(web, query: str = "") -> tuple[StreamingHttpResponse, list[list[str]]]:
    response = web.get(f"/orders/export/{query}")
    assert response.status_code == 200, response.content
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff")  # for Excel: the file is UTF-8
    return response, list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))


def by_id(table: list[list[str]]) -> dict[str, dict[str, str]]:
    header, *body = table
    assert header == COLUMNS
    return {row[1]: dict(zip(header, row, strict=True)) for row in body}


def test_the_file_is_the_filtered_list_with_the_documented_columns(shop, api):
    tenant, web = shop
    key = tenant.sandbox_key
    body = batch(
        group(drop("EX-1", waybill="WB-1", name="Sokha Chan"), drop("EX-2")),
        client_batch_id="EXPORT-BATCH",
    )
    assert api.bulk(body, key).status_code == 200
    place(api, key, "ELSE-3")
    advance(api, key, "EX-1", to="DELIVERED")
    response, table = export(web, "?q=ex-&environment=sandbox")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="orders-\d{8}-\d{6}Z\.csv"', response["Content-Disposition"]
    )
    assert isinstance(response, StreamingHttpResponse)
    rows = by_id(table)
    assert sorted(rows) == ["EX-1", "EX-2"]
    delivered = rows["EX-1"]
    stored = Drop.objects.get(client_order_id="EX-1")
    assert delivered["drop_id"] == str(stored.pk)
    assert delivered["external_waybill"] == "WB-1"
    assert delivered["status"] == "DELIVERED"
    assert delivered["client_batch_id"] == "EXPORT-BATCH"
    assert delivered["batch_id"] == str(stored.batch_id)
    assert delivered["recipient_name"] == "Sokha Chan"
    # A leading + would make a spreadsheet compute the phone number: it is kept as text.
    assert delivered["recipient_phone"] == "'+85512345679"
    assert delivered["price"] == f"{stored.price:.2f}" and delivered["currency"] == "USD"
    assert delivered["driver_name"] == "Sandbox Test Driver"
    assert delivered["proof_method"] == "none"
    for column in ("created_at", "updated_at", "delivered_at"):
        assert ISO_Z.match(delivered[column]), (column, delivered[column])
    # 10:00 in Phnom Penh is 03:00 UTC: the file speaks UTC, as the API does.
    assert delivered["created_at"].startswith("2026-11-23T03:0")
    assert rows["EX-2"]["delivered_at"] == "" and rows["EX-2"]["status"] == "PENDING"
    assert rows["EX-2"]["eta_dropoff_at"].endswith("Z")
    assert rows["EX-2"]["tracking_url"].startswith("http")


def test_filters_by_days_status_and_batch_reach_the_file(shop, api):
    tenant, web = shop
    key = tenant.sandbox_key
    place(api, key, "D-OLD", "D-NEW")
    created_at("D-OLD", local(2026, 11, 20, 9, 0))
    advance(api, key, "D-NEW", to="ASSIGNED")
    assert sorted(by_id(export(web, "?created_to=2026-11-21")[1])) == ["D-OLD"]
    assert sorted(by_id(export(web, "?status=ASSIGNED&status=FAILED")[1])) == ["D-NEW"]
    assert by_id(export(web, "?batch=NO-SUCH-BATCH")[1]) == {}


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ('=HYPERLINK("http://evil")', '\'=HYPERLINK("http://evil")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tTAB", "'\tTAB"),
        ("\rCR", "'\rCR"),
        ("plain = text", "plain = text"),
        ("", ""),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_prefixed(text, written):
    assert safe_cell(text) == written
    assert safe_cell(None) == ""


def test_formulas_sent_by_a_client_arrive_as_text(shop, api):
    tenant, web = shop
    body = batch(
        group(
            drop("=CMD|'/c calc'!A1", waybill="@SUM(1+1)", name="+Dara"),
            drop("-ORD", waybill="\tTAB", name='Chan, "Sokha"'),
        )
    )
    assert api.bulk(body, tenant.sandbox_key).json()["data"]["counts"]["accepted"] == 2
    table = export(web)[1]
    cells = [cell for row in table[1:] for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    rows = {row[0]: dict(zip(COLUMNS, row, strict=True)) for row in table[1:]}
    formula = next(r for r in rows.values() if "CMD" in r["client_order_id"])
    assert formula["client_order_id"] == "'=CMD|'/c calc'!A1"
    assert formula["external_waybill"] == "'@SUM(1+1)"
    assert formula["recipient_name"] == "'+Dara"
    other = next(r for r in rows.values() if r["client_order_id"] == "'-ORD")
    assert other["external_waybill"] == "'\tTAB"
    assert other["recipient_name"] == 'Chan, "Sokha"'  # quoted by the CSV writer, intact


def test_every_page_of_the_listing_is_exported(shop, api, monkeypatch):
    tenant, web = shop
    monkeypatch.setattr(exports, "EXPORT_PAGE_SIZE", 4)
    place(api, tenant.sandbox_key, *[f"ALL-{i}" for i in range(11)])
    table = export(web)[1]
    ids = [row[1] for row in table[1:]]
    assert sorted(ids) == sorted(f"ALL-{i}" for i in range(11))
    expected = Drop.objects.filter(business=tenant.business).order_by("-created_at", "-id")
    assert ids == [d.client_order_id for d in expected]  # newest first, as the page


def test_the_export_stops_at_its_bound_and_says_so(shop, api, monkeypatch):
    tenant, web = shop
    monkeypatch.setattr(exports, "EXPORT_PAGE_SIZE", 2)
    monkeypatch.setattr(exports, "MAX_EXPORT_ROWS", 5)
    place(api, tenant.sandbox_key, *[f"CUT-{i}" for i in range(7)])
    table = export(web)[1]
    assert len(table) == 1 + 5 + 1
    assert table[-1][0].startswith("# Cut at 5 rows")
    # Exactly at the bound: nothing was left out, so nothing is said.
    monkeypatch.setattr(exports, "MAX_EXPORT_ROWS", 7)
    table = export(web)[1]
    assert len(table) == 1 + 7 and not table[-1][0].startswith("#")
    assert MAX_EXPORT_ROWS == 100_000


def test_another_business_is_never_exported(shop, api, bob):
    tenant, web = shop
    place(api, tenant.sandbox_key, "MINE-1")
    place(api, bob.sandbox_key, "BOBS-1")
    api.bulk(batch(group(drop("BOBS-LIVE"))), bob.live_key)
    assert sorted(by_id(export(web)[1])) == ["MINE-1"]
    assert by_id(export(web, "?q=BOBS")[1]) == {}


def test_queries_do_not_grow_with_the_rows_of_a_page(shop, api, monkeypatch):
    tenant, web = shop
    monkeypatch.setattr(exports, "EXPORT_PAGE_SIZE", 50)

    def queries_of_export() -> int:
        with CaptureQueriesContext(connection) as queries:
            export(web)
        return len(queries)

    place(api, tenant.sandbox_key, "Q-0")
    one = queries_of_export()
    place(api, tenant.sandbox_key, *[f"Q-{i}" for i in range(1, 40)])
    forty = queries_of_export()
    assert forty == one
    # A second page costs its own few queries: the listing's two (keys, then the drops with
    # their orders beside them: tracking.selectors.DROP_AND_ORDER; the drops have not moved,
    # so there are no events to read: tracking/selectors._moves_of) and the batches' names.
    place(api, tenant.sandbox_key, *[f"Q-{i}" for i in range(40, 60)])
    assert queries_of_export() == one + 3


def test_the_export_needs_a_login(client):
    response = client.get("/orders/export/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_file_carries_vehicle_parcel_price_parts_and_cod(shop, api):
    """docs/contract.md §18: after the earlier columns, which keep their places."""
    tenant, web = shop
    parcel = {"size": "L", "weight_kg": 12.5, "description": "Rice cooker", "value": "30"}
    body = batch(
        {
            **group({**drop("PC-1"), "parcel": parcel, "cod": {"amount": "50.00"}}, drop("PC-2")),
            "vehicle": "tuktuk",
        }
    )
    assert api.bulk(body, tenant.sandbox_key).status_code == 200
    advance(api, tenant.sandbox_key, "PC-1", to="DELIVERED")
    _, table = export(web, "?environment=sandbox")
    assert COLUMNS.index("tracking_url") == 29  # where it was before §18's columns
    rows = by_id(table)
    carried, plain = rows["PC-1"], rows["PC-2"]
    stored = Drop.objects.get(client_order_id="PC-1")
    assert {column: carried[column] for column in COLUMNS[COLUMNS.index("vehicle") :]} == {
        "vehicle": "tuktuk",
        "parcel_size": "L",
        "parcel_weight_kg": "12.5",
        "parcel_description": "Rice cooker",
        "parcel_value": "30.00",
        "delivery_price": f"{stored.price - Decimal('0.50'):.2f}",
        "cod_fee": "0.50",
        "cod_amount": "50.00",
        "cod_status": "collected",
        "cod_collected_at": carried["cod_collected_at"],
    }
    assert ISO_Z.match(carried["cod_collected_at"])
    assert (plain["parcel_size"], plain["cod_fee"], plain["cod_status"]) == ("S", "0.00", "")
