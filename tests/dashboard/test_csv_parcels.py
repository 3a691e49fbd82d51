"""Spreadsheet uploads with a vehicle, a parcel and cash on delivery (docs/csv.md,
docs/contract.md §18): the columns become the bulk body's fields, and their problems are
named by row and column."""

from __future__ import annotations

import csv
import html
import io
import re
from decimal import Decimal

from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.csv_orders import COLUMNS
from orders.models import Batch, Drop, Order
from tests.factories import HOME, PHONE, RECIPIENT_PHONE, SHOP


def order_row(client_order_id: str, **cells: str) -> dict[str, str]:
    return {
        "client_order_id": client_order_id,
        "recipient_name": "Dara",
        "recipient_phone": RECIPIENT_PHONE,
        "dropoff_lat": str(HOME["lat"]),
        "dropoff_long": str(HOME["long"]),
        "pickup_name": "Sokha's Shop",
        "pickup_phone": PHONE,
        "pickup_lat": str(SHOP["lat"]),
        "pickup_long": str(SHOP["long"]),
        **cells,
    }


def upload(web, *rows: dict[str, str], status: int = 200):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    file = SimpleUploadedFile("orders.csv", out.getvalue().encode(), content_type="text/csv")
    response = web.post("/orders/upload/", {"file": file, "environment": "sandbox"})
    assert response.status_code == status
    return html.unescape(re.sub(r"<[^>]+>|\s+", " ", response.content.decode()))


def test_vehicle_parcel_and_cod_columns_reach_the_drops(open_for_business, alice, alice_web):
    upload(
        alice_web,
        order_row(
            "P-1",
            parcel_size="M",
            parcel_weight_kg="2.5",
            parcel_description="Shoes",
            parcel_value="40",
            cod_amount="25.00",
        ),
        order_row("P-2"),
        # The same pickup with another vehicle is another pickup group.
        order_row("P-3", vehicle="van", parcel_size="XL", parcel_weight_kg="90"),
    )
    drops = {d.client_order_id: d for d in Drop.objects.filter(business=alice.business)}
    one = drops["P-1"]
    assert (one.parcel_size, one.parcel_weight_kg, one.parcel_description, one.parcel_value) == (
        "M",
        Decimal("2.500"),
        "Shoes",
        Decimal("40.00"),
    )
    assert (one.cod_amount, one.cod_fee) == (Decimal("25.00"), Decimal("0.25"))
    assert (drops["P-2"].parcel_size, drops["P-2"].cod_amount) == ("S", None)
    assert one.order_id == drops["P-2"].order_id != drops["P-3"].order_id
    vehicles = dict(Order.objects.values_list("id", "vehicle"))
    assert (vehicles[one.order_id], vehicles[drops["P-3"].order_id]) == ("motorbike", "van")


def test_bad_cells_are_named_by_row_and_column(open_for_business, alice, alice_web):
    page = upload(
        alice_web,
        order_row("B-1", parcel_weight_kg="2,5"),
        order_row("B-2", parcel_size="huge"),
        order_row("B-3", pickup_name="Other", vehicle="rocket"),
        order_row("B-4", parcel_value="lots"),
        status=400,
    )
    assert "Row 2, column parcel_weight_kg: “2,5” is not a number" in page
    assert "Row 3, column parcel_size: Must be one of S, M, L, XL." in page
    assert "Row 4, column vehicle: 'rocket' is not an active vehicle type" in page
    assert "Row 5, column parcel_value: Must be a money string" in page
    assert not Batch.objects.exists()


def test_a_parcel_too_large_or_an_invalid_cod_rejects_its_row(open_for_business, alice, alice_web):
    page = upload(
        alice_web,
        order_row("R-1", parcel_size="L"),
        order_row("R-2", cod_amount="12.345"),
        order_row("R-3", cod_amount="10"),
    )
    assert "PARCEL_TOO_LARGE" in page and "INVALID_COD" in page
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["R-3"]


def test_a_recipient_language_column_reaches_the_drops_and_a_bad_one_is_a_row_error(
    open_for_business, alice, alice_web
):
    upload(alice_web, order_row("L-1", recipient_language="km"), order_row("L-2"))
    languages = dict(Drop.objects.values_list("client_order_id", "recipient_language"))
    assert languages == {"L-1": "km", "L-2": None}
    page = upload(alice_web, order_row("L-3", recipient_language="fr"), status=400)
    assert "Row 2, column recipient_language:" in page
    assert not Drop.objects.filter(client_order_id="L-3").exists()
