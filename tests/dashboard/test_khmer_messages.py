"""The dashboard's own messages follow the page's language (docs/contract.md §26,
docs/dashboard.md "Language"): a CSV upload's file and row problems, the JSON that the New
delivery page's script asks for as one types, and the words of the dashboard's scripts
(the djangojs catalogue). Codes, column names and the API's own answers stay as they are
typed (tests/core/test_languages.py)."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.conf import settings

from tests.dashboard.test_csv_upload import HEADER, csv_bytes, nothing_stored, order_row, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def khmer_web(alice_web):
    """alice's browser after the switch to Khmer (its cookie)."""
    alice_web.cookies[settings.LANGUAGE_COOKIE_NAME] = "km"
    return alice_web


def problems(response) -> list[str]:
    """The upload page's list of problems, as the shop reads it."""
    section = re.search(
        r'data-testid="upload-errors".*?</section>', response.content.decode(), re.S
    )
    assert section, "no list of problems"
    items = re.findall(r"<li>(.*?)</li>", section[0], re.S)
    return [html.unescape(re.sub(r"\s+", " ", item)).strip() for item in items]


def file_errors(response) -> list[str]:
    found = re.search(r'data-testid="file-errors"[^>]*>(.*?)</ul>', response.content.decode(), re.S)
    assert found, "no file error"
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", found[1], re.S)]


# --- A CSV upload ----------------------------------------------------------------------------


def test_a_khmer_upload_with_bad_rows_names_row_and_column_in_khmer(open_for_business, khmer_web):
    data = csv_bytes(
        order_row("OK-1"),
        order_row(""),  # row 3: the API's "This field is required."
        order_row("KM-2", dropoff_lat="11,5696"),  # row 4: our own reading of a number
        order_row("KM-3", recipient_language="fr"),  # row 5: the API's "Must be one of en, km."
        order_row("KM-4", dropoff_pin="maybe"),  # row 6
    )

    response = upload(khmer_web, data)

    assert response.status_code == 400
    assert problems(response) == [
        "ជួរដេក 3, ជួរឈរ client_order_id៖ ត្រូវតែមាន ប៉ុន្តែក្រឡានេះទទេ។",
        "ជួរដេក 4, ជួរឈរ dropoff_lat៖ “11,5696” មិនមែនជាលេខទេ៖ សូមសរសេរដោយប្រើ . ជាចំណុចទសភាគ ឧ. 11.5564។",
        "ជួរដេក 5, ជួរឈរ recipient_language៖ ត្រូវតែជាមួយក្នុងចំណោម en, km។",
        "ជួរដេក 6, ជួរឈរ dropoff_pin៖ ត្រូវតែជា yes ឬ no (ឬទុកទទេ)។",
    ]
    assert nothing_stored()


def test_a_pickup_group_s_problem_names_its_rows_in_khmer(open_for_business, khmer_web):
    late = {"pickup_scheduled_at": "2099-01-05 10:00"}  # no time zone
    data = csv_bytes(order_row("P-1", **late), order_row("P-2"), order_row("P-3", **late))

    response = upload(khmer_web, data)

    assert problems(response) == [
        "ជួរដេក 2 និង 4, ជួរឈរ pickup_scheduled_at៖ "
        "ត្រូវតែមានល្វែងម៉ោង (time zone) ឧ. 2026-01-31T09:30:00Z។"
    ]


@pytest.mark.parametrize(
    "cells",
    [
        {"recipient_name": "x" * 201},
        {"pickup_scheduled_at": "tomorrow 10:00"},
        {"pickup_scheduled_at": "0001-01-01T00:00:00+05:00"},
        {"parcel_weight_kg": "0"},
        {"dropoff_address": "x" * 501},
        {"dropoff_address": "x" * 495, "dropoff_city": "y" * 495},
        {"vehicle": "rocket"},
        {"parcel_value": "lots"},
        {"recipient_email": "not an address"},
        {"undeliverable_action": "keep"},
        {"dropoff_window_start": "2026-11-23T14:00:00+07:00"},
    ],
    ids=lambda cells: "+".join(cells),
)
def test_every_field_problem_of_the_api_a_cell_can_cause_is_said_in_khmer(
    open_for_business, khmer_web, cells
):
    """A message of the bulk parser not mapped to words of ours would show in English here."""
    response = upload(khmer_web, csv_bytes(order_row("KM-1", **cells)))

    said = problems(response)
    assert said and all(problem.startswith("ជួរដេក 2, ជួរឈរ ") for problem in said), said
    english = re.compile(r"\b(Must|At most|This field|Required)\b")
    assert [problem for problem in said if english.search(problem)] == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "ឯកសារទទេ។"),
        (b"PK\x03\x04\x14\x00\x06\x00", "នេះជាឯកសារសៀវភៅបញ្ជី (.xlsx ឬ .xls) មិនមែនឯកសារ CSV ទេ"),
        (",".join(HEADER).encode() + b"\r\n", "ឯកសារមានក្បាលតារាង ប៉ុន្តែគ្មានការកម្មង់នៅខាងក្រោមទេ។"),
        (
            csv_bytes(order_row("M-1"), header=[c for c in HEADER if c != "recipient_phone"]),
            "ខ្វះជួរឈរ recipient_phone។",
        ),
        (
            csv_bytes(order_row("M-3"), header=[c for c in HEADER if c != "dropoff_long"]),
            "ជួរឈរ dropoff_lat ត្រូវការ dropoff_long នៅក្បែរវា។",
        ),
        (b"A-1,Dara,+85512345679\r\n", "ជួរដេកទីមួយត្រូវតែជាក្បាលតារាង៖ ឈ្មោះជួរឈរ ឧ. client_order_id"),
    ],
    ids=["empty", "xlsx", "header-only", "missing-column", "lat-without-long", "no-header"],
)
def test_a_file_that_cannot_be_used_is_said_in_khmer(open_for_business, khmer_web, data, message):
    response = upload(khmer_web, data)

    assert response.status_code == 400
    [error] = file_errors(response)
    assert error.startswith(message), error


def test_the_same_bad_row_in_english_keeps_the_english_words(open_for_business, alice_web):
    response = upload(alice_web, csv_bytes(order_row("EN-1", recipient_language="fr")))

    assert problems(response) == ["Row 2, column recipient_language: Must be one of en, km."]


# --- New delivery's JSON, asked for as one types -----------------------------------------------


def test_the_address_lookup_answers_a_bad_request_in_khmer_with_the_api_s_code(khmer_web):
    response = khmer_web.get("/orders/new/geocode/", {"address": "  "})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["message"] == "គ្មានអាសយដ្ឋានត្រូវរក។"
    assert error["details"] == [{"field": "address", "message": "សូមផ្ដល់អាសយដ្ឋានពី 1 ដល់ 300 តួអក្សរ។"}]


def test_the_address_book_and_the_quote_answer_in_khmer(khmer_web):
    unknown = khmer_web.get("/orders/new/recipients/", {"q": "Dara", "environment": "moon"})
    incomplete = khmer_web.post("/orders/new/quote/", {"form_token": "nope"})

    assert unknown.status_code == incomplete.status_code == 400
    assert unknown.json()["error"]["message"] == "មិនស្គាល់បរិស្ថាននេះទេ។"
    assert incomplete.json()["error"]["message"] == "ទម្រង់បែបបទមិនទាន់បំពេញគ្រប់ទេ។"


def test_the_lookups_answer_in_english_without_a_choice(alice_web):
    response = alice_web.get("/orders/new/geocode/")

    assert response.json()["error"]["message"] == "No address to find."


# --- The words of the dashboard's scripts ------------------------------------------------------


def catalogue(response) -> dict[str, str]:
    """The catalog object of Django's JavaScript catalogue."""
    found = re.search(r"const newcatalog = (\{.*?\});", response.content.decode(), re.S)
    assert found, "no catalogue"
    return json.loads(found[1])


def test_the_dashboard_scripts_words_come_in_khmer(khmer_web):
    page = khmer_web.get("/keys/").content.decode()
    assert '<script src="/jsi18n/km/"></script>' in page

    words = catalogue(khmer_web.get("/jsi18n/km/"))

    assert words["Copied"] == "បានចម្លងហើយ"
    assert words["Total %(price)s %(currency)s"] == "សរុប %(price)s %(currency)s"
    assert words["Drop-off"] == "កន្លែងប្រគល់ឥវ៉ាន់"


def test_the_script_words_are_in_the_language_their_address_names(khmer_web):
    """The page names its language in the script's address, whatever the cookie says."""
    english = khmer_web.get("/jsi18n/en/")

    assert english.status_code == 200
    assert "newcatalog" not in english.content.decode()  # English: the words as written
    assert khmer_web.get("/jsi18n/xx/").status_code == 404


def test_a_khmer_business_page_loads_the_khmer_words_without_a_cookie(alice, alice_web):
    alice.business.dashboard_language = "km"
    alice.business.save(update_fields=["dashboard_language"])

    page = alice_web.get("/keys/").content.decode()

    assert '<script src="/jsi18n/km/"></script>' in page
