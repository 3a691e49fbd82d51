"""Orders from a spreadsheet: a CSV upload is one batch through the bulk
pipeline, answered row by row; the same file twice is one batch; bad files name row and column."""

from __future__ import annotations

import csv
import html
import io
import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts import services
from dashboard.csv_orders import OrdersFile, Problem, problem_at
from orders.links import tracking_token
from orders.models import Batch, Drop, IdempotencyRecord, Order
from tests.factories import HOME, PHONE, RECIPIENT_PHONE, SHOP

TEMPLATE = Path(settings.BASE_DIR) / "docs" / "sample-orders.csv"
HEADER = TEMPLATE.read_text(encoding="utf-8").splitlines()[0].split(",")
ANGKOR_WAT = {"dropoff_lat": "13.4125", "dropoff_long": "103.8670"}  # outside the demo area
ROW = re.compile(
    r'<tr class="(?P<status>accepted|rejected)" data-row="(?P<row>\d+)">(?P<cells>.*?)</tr>', re.S
)


def order_row(client_order_id: str, **cells: str) -> dict[str, str]:
    """One row of a file: a drop near the demo shop, picked up now from the shop."""
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


def csv_bytes(*rows: dict[str, str], header: list[str] = HEADER, delimiter: str = ",") -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, delimiter=delimiter, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def upload(web: Client, data: bytes, environment: str = "sandbox", name: str = "orders.csv"):
    file = SimpleUploadedFile(name, data, content_type="text/csv")
    return web.post("/orders/upload/", {"file": file, "environment": environment})


def page_of(response) -> str:
    return html.unescape(response.content.decode())


def results(response) -> list[tuple[int, str, str]]:
    """(row, accepted|rejected, the row's text) of the result table, top to bottom."""
    return [
        (int(m["row"]), m["status"], re.sub(r"<[^>]+>|\s+", " ", html.unescape(m["cells"])))
        for m in ROW.finditer(response.content.decode())
    ]


def nothing_stored() -> bool:
    return not (
        Batch.objects.exists() or Drop.objects.exists() or IdempotencyRecord.objects.exists()
    )


# --- Rows in, rows out ---------------------------------------------------------------------


def test_accepted_and_rejected_rows_are_reported_by_row(open_for_business, alice, alice_web):
    data = csv_bytes(
        order_row("CSV-1", external_waybill="WB-1"),
        order_row("CSV-2", recipient_phone="012 345 678"),
        order_row("CSV-3", **ANGKOR_WAT),
        order_row(
            "CSV-4", dropoff_lat="", dropoff_long="", dropoff_address="Royal Palace, Phnom Penh"
        ),
    )

    response = upload(alice_web, data)

    assert response.status_code == 200
    rows = results(response)
    assert [(row, status) for row, status, _ in rows] == [
        (2, "accepted"),
        (3, "rejected"),
        (4, "rejected"),
        (5, "accepted"),
    ]
    assert "CSV-2" in rows[1][2] and "INVALID_PHONE" in rows[1][2]
    assert "OUT_OF_SERVICE_AREA" in rows[2][2]
    accepted = Drop.objects.get(business=alice.business, client_order_id="CSV-1")
    assert accepted.environment == "sandbox" and accepted.external_waybill == "WB-1"
    assert f"{accepted.price} USD" in rows[0][2]
    assert f"/t/{tracking_token(accepted.pk)}" in response.content.decode()
    page = page_of(response)
    assert "4 rows: 2 accepted, 2 rejected." in re.sub(r"<[^>]+>", "", page)
    batch = Batch.objects.get(business=alice.business)
    assert batch.client_batch_id.startswith("csv-") and len(batch.client_batch_id) == 24
    assert f"/batches/{batch.pk}/" in page
    assert Drop.objects.filter(business=alice.business).count() == 2


def test_rows_with_the_same_pickup_are_one_pickup_group_and_stay_in_file_order(
    open_for_business, alice, alice_web
):
    warehouse = {"pickup_name": "Warehouse", "pickup_lat": "11.5486", "pickup_long": "104.9322"}
    data = csv_bytes(
        order_row("G-1"),
        order_row("G-2", **warehouse),
        order_row("G-3"),
        order_row("G-4", **warehouse, pickup_scheduled_at="2099-01-05T10:00:00+07:00"),
    )

    response = upload(alice_web, data)

    assert [row for row, _, _ in results(response)] == [2, 3, 4, 5]
    assert [text.split()[1] for _, _, text in results(response)] == ["G-1", "G-2", "G-3", "G-4"]
    drops = {d.client_order_id: d for d in Drop.objects.filter(business=alice.business)}
    assert drops["G-1"].order_id == drops["G-3"].order_id  # same shop, same time: one pickup
    assert len({drops["G-1"].order_id, drops["G-2"].order_id, drops["G-4"].order_id}) == 3
    assert Order.objects.filter(business=alice.business).count() == 3


def test_the_same_file_twice_is_one_batch_and_the_second_says_so(
    open_for_business, alice, alice_web, member
):
    data = csv_bytes(order_row("TWICE-1"), order_row("TWICE-2", **ANGKOR_WAT))
    first = upload(alice_web, data)
    colleague = member(alice.business)  # any member of the business, same file, same bytes

    again = upload(colleague, data, name="renamed.csv")

    assert again.status_code == 200
    assert "This file was already sent on" in page_of(again)
    assert "already sent" not in page_of(first)
    assert results(again) == results(first)
    assert Batch.objects.filter(business=alice.business).count() == 1
    assert Drop.objects.filter(business=alice.business).count() == 1


def test_a_changed_file_is_a_new_batch(open_for_business, alice, alice_web):
    upload(alice_web, csv_bytes(order_row("CHANGED-1")))

    response = upload(alice_web, csv_bytes(order_row("CHANGED-1"), order_row("CHANGED-2")))

    assert "already sent" not in page_of(response)
    assert Batch.objects.filter(business=alice.business).count() == 2
    [(_, first, text), (_, second, _)] = results(response)
    assert (first, second) == ("rejected", "accepted")
    assert "DUPLICATE_CLIENT_ORDER_ID" in text


def test_the_same_file_in_the_other_environment_is_another_batch(
    open_for_business, alice, alice_web
):
    data = csv_bytes(order_row("BOTH-1"))

    upload(alice_web, data, environment="sandbox")
    live = upload(alice_web, data, environment="live")

    assert "already sent" not in page_of(live)
    assert sorted(Batch.objects.values_list("environment", flat=True)) == ["live", "sandbox"]
    assert Drop.objects.get(environment="live").client_order_id == "BOTH-1"


# --- A file that is not sent ---------------------------------------------------------------


def test_request_level_errors_name_the_row_and_column_and_nothing_is_stored(
    open_for_business, alice, alice_web
):
    data = csv_bytes(
        *[order_row(f"OK-{n}") for n in range(1, 4)],
        order_row(""),  # row 5
        order_row("OK-5", recipient_name="x" * 201),  # row 6
        order_row("OK-6", dropoff_lat="11,5696"),  # row 7
        order_row("OK-7", pickup_scheduled_at="tomorrow 10:00"),  # row 8
        order_row("OK-8", dropoff_pin="maybe"),  # row 9
    )

    response = upload(alice_web, data)

    assert response.status_code == 400
    page = page_of(response)
    assert "The file was not sent" in page
    problems = [
        "Row 5, column client_order_id: Required, but the cell is empty.",
        "Row 6, column recipient_name: Must be at most 200 characters.",
        "Row 7, column dropoff_lat: “11,5696” is not a number",
        "Row 8, column pickup_scheduled_at: Must be an ISO 8601 timestamp with a time zone.",
        "Row 9, column dropoff_pin: Must be yes or no (or empty).",
    ]
    positions = [page.index(problem) for problem in problems]
    assert positions == sorted(positions)  # in file order
    assert nothing_stored()


def test_a_pickup_s_problem_names_every_row_of_its_group(open_for_business, alice_web):
    late = {"pickup_scheduled_at": "2099-01-05 10:00"}  # no time zone
    data = csv_bytes(order_row("P-1", **late), order_row("P-2"), order_row("P-3", **late))

    response = upload(alice_web, data)

    assert response.status_code == 400
    assert "Rows 2 and 4, column pickup_scheduled_at: Must carry a time zone" in page_of(response)
    assert nothing_stored()


def test_a_sandbox_scenario_in_a_live_file_is_refused_by_row(open_for_business, alice_web):
    data = csv_bytes(order_row("S-1"), order_row("S-2", sandbox_scenario="deliver"))

    response = upload(alice_web, data, environment="live")

    assert response.status_code == 400
    assert "Row 3, column sandbox_scenario: sandbox_scenario is for the sandbox only" in page_of(
        response
    )
    assert nothing_stored()


def test_past_a_hundred_problems_the_rest_are_counted(open_for_business, alice_web):
    data = csv_bytes(*[order_row("") for _ in range(150)])

    response = upload(alice_web, data)

    assert response.status_code == 400
    page = page_of(response)
    assert "Fix these 150 problems" in page
    assert page.count("column client_order_id: Required, but the cell is empty.") == 100
    assert "… and 50 more." in page
    assert nothing_stored()


def test_a_row_with_more_cells_than_the_header_is_refused(open_for_business, alice_web):
    head, first = csv_bytes(order_row("R-1")).decode().splitlines()
    data = "\r\n".join([head, first, first + ",Phnom Penh, Cambodia", ""]).encode()

    response = upload(alice_web, data)

    assert response.status_code == 400
    assert f"Row 3: {len(HEADER) + 2} cells, but the header has {len(HEADER)} columns" in page_of(
        response
    )
    assert nothing_stored()


def test_a_semicolon_file_with_bom_and_spelled_out_headers_is_read(
    open_for_business, alice, alice_web
):
    header = [name.replace("_", " ").title() for name in HEADER] + ["Remarks"]
    rows = [
        {name.replace("_", " ").title(): value for name, value in order_row("SEMI-1").items()}
        | {"Remarks": "ring twice", "Dropoff Pin": "YES"}
    ]

    response = upload(alice_web, b"\xef\xbb\xbf" + csv_bytes(*rows, header=header, delimiter=";"))

    assert response.status_code == 200
    assert [(row, status) for row, status, _ in results(response)] == [(2, "accepted")]
    assert "Ignored columns (not ones we read): Remarks." in page_of(response)
    drop = Drop.objects.get(business=alice.business)
    assert drop.client_order_id == "SEMI-1" and drop.dropoff_pin


def test_blank_lines_keep_the_spreadsheet_row_numbers(open_for_business, alice_web):
    head, first = csv_bytes(order_row("B-1")).decode().splitlines()
    second = csv_bytes(order_row("B-2", **ANGKOR_WAT)).decode().splitlines()[1]
    data = "\r\n".join([head, first, "", ",,,", second, ""]).encode()

    response = upload(alice_web, data)

    assert [(row, status) for row, status, _ in results(response)] == [
        (2, "accepted"),
        (5, "rejected"),
    ]


LATIN_1 = csv_bytes(order_row("CAFÉ-1")).decode().encode("latin-1")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "The file is empty."),
        (b"\xef\xbb\xbf\r\n", "The file is empty."),
        (LATIN_1, "The file is not UTF-8 text (the first problem is on line 2)"),
        (b"PK\x03\x04\x14\x00\x06\x00", "This is a spreadsheet workbook (.xlsx or .xls)"),
        (b"client_order_id\x00\x01\x02", "This is not a CSV file: it contains binary data."),
        (",".join(HEADER).encode() + b"\r\n", "The file has a header but no orders under it."),
        (b"\r\nA-1,Dara\r\n", "The first row must be the header"),
        (b"A-1,Dara,+85512345679\r\n", "None of them was found."),
        (
            csv_bytes(order_row("M-1"), header=[c for c in HEADER if c != "recipient_phone"]),
            "The column recipient_phone is missing.",
        ),
        (
            csv_bytes(
                order_row("M-2"),
                header=[
                    c for c in HEADER if c not in ("pickup_lat", "pickup_long", "pickup_address")
                ],
            ),
            "The columns pickup_lat and pickup_long, or pickup_address, are missing",
        ),
        (
            csv_bytes(order_row("M-3"), header=[c for c in HEADER if c != "dropoff_long"]),
            "The column dropoff_lat needs dropoff_long beside it.",
        ),
        (
            csv_bytes(order_row("M-4"), header=[*HEADER, "Client Order ID"]),
            "The column client_order_id appears twice",
        ),
        (b"x" * (5 * 1024 * 1024 + 1), "The file is 5.0 MB; at most 5 MB can be uploaded at once"),
        (
            csv_bytes(order_row("HUGE-1", external_waybill="w" * 200_000)),
            "The file could not be read as CSV near line 2: field larger than field limit",
        ),
    ],
    ids=[
        "empty",
        "only-bom",
        "latin-1",
        "xlsx",
        "binary",
        "header-only",
        "blank-header",
        "no-header",
        "missing-column",
        "no-pickup-place",
        "lat-without-long",
        "twice",
        "too-big",
        "huge-cell",
    ],
)
def test_a_file_that_is_not_a_usable_csv_is_a_form_error(
    open_for_business, alice_web, data, message
):
    response = upload(alice_web, data)

    assert response.status_code == 400
    assert 'data-testid="file-errors"' in response.content.decode()
    assert message in page_of(response)
    assert nothing_stored()


def test_more_rows_than_a_batch_takes_is_a_form_error(open_for_business, alice_web, settings):
    settings.MAX_DROPS_PER_BATCH = 3

    response = upload(alice_web, csv_bytes(*[order_row(f"MANY-{n}") for n in range(4)]))

    assert response.status_code == 400
    assert "The file has 4 orders; at most 3 can be sent at once" in page_of(response)
    assert nothing_stored()


def test_a_bad_upload_form_is_a_400_not_a_500(open_for_business, alice_web):
    no_file = alice_web.post("/orders/upload/", {"environment": "sandbox"})
    bad_environment = upload(alice_web, csv_bytes(order_row("E-1")), environment="moon")

    assert no_file.status_code == bad_environment.status_code == 400
    assert nothing_stored()


# --- Who may upload where ------------------------------------------------------------------


def test_live_is_refused_until_the_business_is_live(open_for_business, make_tenant, member):
    web = member(make_tenant(stage="approved").business)
    page = web.get("/orders/upload/").content.decode()
    assert 'value="sandbox"' in page and 'value="live"' not in page

    response = upload(web, csv_bytes(order_row("LIVE-1")), environment="live")

    assert response.status_code == 403
    assert "Live orders can be uploaded once an operator switches live access on" in page_of(
        response
    )
    assert nothing_stored()
    assert upload(web, csv_bytes(order_row("LIVE-1"))).status_code == 200


@pytest.mark.parametrize("stage", ["registered", "requested"])
def test_before_approval_nothing_can_be_uploaded(open_for_business, make_tenant, member, stage):
    web = member(make_tenant(stage=stage).business)
    assert 'data-testid="upload-form"' not in web.get("/orders/upload/").content.decode()

    response = upload(web, csv_bytes(order_row("EARLY-1")))

    assert response.status_code == 403
    assert "Uploads open once your access request is approved." in page_of(response)
    assert nothing_stored()


def test_a_suspended_business_cannot_upload(open_for_business, alice, alice_web):
    services.suspend(business=alice.business)

    response = upload(alice_web, csv_bytes(order_row("SUSPENDED-1")))

    assert response.status_code == 403
    assert "This account is suspended" in page_of(response)
    assert nothing_stored()


def test_the_upload_page_needs_a_member(open_for_business, alice):
    anonymous = Client()
    assert anonymous.get("/orders/upload/")["Location"].startswith("/login/")
    assert anonymous.get("/orders/upload/template.csv")["Location"].startswith("/login/")
    response = upload(anonymous, csv_bytes(order_row("ANON-1")))
    assert response.status_code == 302 and nothing_stored()


def test_bob_never_sees_alice_s_upload(open_for_business, alice, bob, alice_web, bob_web):
    data = csv_bytes(order_row("MINE-1"))
    upload(alice_web, data)
    hers = Drop.objects.get(business=alice.business)

    response = upload(bob_web, data)  # the very same bytes

    page = page_of(response)
    assert "already sent" not in page
    assert tracking_token(hers.pk) not in page and str(hers.pk) not in page
    assert str(hers.batch_id) not in page
    theirs = Drop.objects.get(business=bob.business)
    assert theirs.client_order_id == "MINE-1" and theirs.batch_id != hers.batch_id
    assert bob_web.get(f"/batches/{hers.batch_id}/").status_code == 404


# --- The template ------------------------------------------------------------------------


def test_the_template_downloads_and_uploads_cleanly(open_for_business, alice, alice_web):
    download = alice_web.get("/orders/upload/template.csv")

    assert download.status_code == 200
    assert download["Content-Type"] == "text/csv; charset=utf-8"
    assert 'attachment; filename="sample-orders.csv"' in download["Content-Disposition"]
    data = b"".join(download.streaming_content)
    assert data == TEMPLATE.read_bytes()
    assert len(data.decode().splitlines()) == 4  # the header and 3 examples

    response = upload(alice_web, data, name="sample-orders.csv")

    assert response.status_code == 200
    assert [status for _, status, _ in results(response)] == ["accepted"] * 3
    assert "unknown-columns" not in response.content.decode()
    drops = {d.client_order_id: d for d in Drop.objects.filter(business=alice.business)}
    assert drops["SHOP-1001"].order_id == drops["SHOP-1002"].order_id  # one pickup
    assert drops["SHOP-1001"].dropoff_pin in results(response)[0][2]  # shown once, here
    assert not drops["SHOP-1002"].dropoff_pin
    # Each recipient's language as written; empty is the business's setting, decided later.
    languages = {name: d.recipient_language for name, d in drops.items()}
    assert languages == {"SHOP-1001": "km", "SHOP-1002": "en", "SHOP-1003": None}


# --- Speed ---------------------------------------------------------------------------------


def test_the_query_count_does_not_grow_with_the_rows(open_for_business, make_tenant, member):
    web = member(make_tenant(sandbox_balance="5000.00").business)
    warehouse = {"pickup_name": "Warehouse", "pickup_lat": "11.5486", "pickup_long": "104.9322"}

    def queries_for(prefix: str, count: int) -> int:
        # Two pickup groups, every row accepted.
        rows = [order_row(f"{prefix}-{n}", **(warehouse if n % 2 else {})) for n in range(count)]
        with CaptureQueriesContext(connection) as captured:
            response = upload(web, csv_bytes(*rows))
        assert [status for _, status, _ in results(response)] == ["accepted"] * count
        return len(captured.captured_queries)

    queries_for("WARM-UP", 2)  # a business's first batch may do one-time work
    assert queries_for("SMALL", 10) == queries_for("LARGE", 200)


# --- The mapping back to rows and columns ----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("orders[0].dropoff[1].client_order_id", "Row 4, column client_order_id: m"),
        ("orders[0].dropoff[0].external_waybill", "Row 2, column external_waybill: m"),
        ("orders[1].dropoff[0].dropoff.name", "Row 3, column recipient_name: m"),
        ("orders[1].dropoff[0].dropoff.phone", "Row 3, column recipient_phone: m"),
        ("orders[0].dropoff[1].dropoff.lat", "Row 4, column dropoff_lat: m"),
        ("orders[0].dropoff[1].dropoff.address", "Row 4, column dropoff_address: m"),
        ("orders[0].dropoff[1].dropoff.address.city", "Row 4, column dropoff_city: m"),
        ("orders[0].dropoff[0].dropoff_verification", "Row 2, column dropoff_pin: m"),
        ("orders[0].dropoff[0].sandbox_scenario", "Row 2, column sandbox_scenario: m"),
        ("orders[0].pickup.name", "Rows 2 and 4, column pickup_name: m"),
        ("orders[1].pickup.pickup_scheduled_at", "Row 3, column pickup_scheduled_at: m"),
        ("orders[0].pickup.address.complete_address", "Rows 2 and 4, column pickup_address: m"),
        ("orders[0].dropoff[0].dropoff.unknown", "Row 2: m"),
        ("orders[7].pickup.name", "m"),
        ("orders", "m"),
    ],
)
def test_bulk_paths_map_back_to_rows_and_columns(path, expected):
    orders_file = OrdersFile(
        body={"client_batch_id": "csv-x", "orders": []},
        group_rows=[[2, 4], [3]],
        unknown_columns=[],
        problems=[],
        idempotency_key=uuid.uuid4(),
    )

    assert str(problem_at(path, "m", orders_file)) == expected


def test_a_big_pickup_group_names_its_first_rows_and_counts_the_others():
    assert str(Problem(tuple(range(2, 12)), "pickup_phone", "m")) == (
        "Rows 2, 3, 4, 5, 6 and 5 more, column pickup_phone: m"
    )


# --- Windows, notes and what becomes of an undeliverable parcel (docs/contract.md §17, §19) ---


def test_windows_notes_and_undeliverable_action_come_from_their_columns(
    open_for_business, alice, alice_web
):
    # The fixture clock is 10:00 in Phnom Penh; the earliest arrival from the shop is ~10:29.
    window = {
        "dropoff_window_start": "2026-11-23T14:00:00+07:00",
        "dropoff_window_end": "2026-11-23T16:00:00+07:00",
    }
    data = csv_bytes(
        order_row("W-1", notes="Gate code 42, call on arrival", **window),
        order_row("W-2", undeliverable_action="dispose"),
        order_row(
            "W-3",
            dropoff_window_start="2026-11-23T10:00:00+07:00",
            dropoff_window_end="2026-11-23T10:20:00+07:00",
        ),
    )

    response = upload(alice_web, data)

    assert response.status_code == 200
    rows = results(response)
    assert [status for _, status, _ in rows] == ["accepted", "accepted", "rejected"]
    assert "INVALID_TIME_WINDOW" in rows[2][2]
    drops = {d.client_order_id: d for d in Drop.objects.filter(business=alice.business)}
    first = drops["W-1"]
    assert first.notes == "Gate code 42, call on arrival"
    assert first.window_start.isoformat() == "2026-11-23T07:00:00+00:00"
    assert first.window_end.isoformat() == "2026-11-23T09:00:00+00:00"
    assert first.window_status == "on_track" and first.undeliverable_action == "return"
    assert drops["W-2"].undeliverable_action == "dispose" and drops["W-2"].window_start is None


def test_bad_window_notes_or_action_cells_name_their_row_and_column(open_for_business, alice_web):
    data = csv_bytes(
        order_row("B-1", dropoff_window_start="2026-11-23T14:00:00+07:00"),  # row 2
        order_row("B-2", dropoff_window_end="2026-11-23 16:00"),  # row 3
        order_row("B-3", notes="x" * 501),  # row 4
        order_row("B-4", undeliverable_action="keep"),  # row 5
    )

    response = upload(alice_web, data)

    assert response.status_code == 400
    page = page_of(response)
    problems = [
        "Row 2, column dropoff_window_end: Required, but the cell is empty.",
        "Row 3, column dropoff_window_start: Required, but the cell is empty.",
        "Row 3, column dropoff_window_end: Must carry a time zone",
        "Row 4, column notes: Must be at most 500 characters.",
        "Row 5, column undeliverable_action: Must be one of return, dispose.",
    ]
    for problem in problems:
        assert problem in page, problem
    assert nothing_stored()
