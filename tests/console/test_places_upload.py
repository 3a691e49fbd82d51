"""Loading places from a CSV file in the operator console: the preview with each row's
problems, Save writing every valid row in one transaction (a fixed number of queries), the
geo.load_places permission, and a batch resolving an address through a loaded alias."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from console.places import SIGNING_SALT
from geo.models import GeocodeResult, Place
from tests.factories import batch, group
from tests.geo.helpers import (
    ROYAL_PALACE,
    address_drop,
    address_pickup_group,
    reasons,
    results_by_id,
    submit,
)
from tests.operators import staff_client

LOAD = "/admin/geo/place/load/"
SAVE = "/admin/geo/place/load/save/"
WAT_PHNOM = (11.5765, 104.9232)  # the real one

GOOD_AND_BAD = """name,aliases,lat,long,city
Wat Phnom,Phnom Daun Penh|Wat Phnom Daun Penh,11.5765,104.9232,Phnom Penh
Independence Monument,Vimean Ekareach,11.5564,104.9282,Phnom Penh
,Nameless,11.55,104.92,Phnom Penh
Bad Latitude,,north,104.92,Phnom Penh
Far North,,95.5,104.92,Phnom Penh
Far East,,11.55,190,Phnom Penh
Comma Decimal,,"11,55",104.92,Phnom Penh
Null Island,,0,0,
Twice Market,,11.56,104.91,Phnom Penh
twice market!,,11.57,104.93,phnom penh
"""


def csv_file(text: str, name: str = "places.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def preview(client: Client, text: str):
    return client.post(LOAD, {"file": csv_file(text)})


def token_of(response) -> str:
    return re.search(r'name="token" value="([^"]+)"', response.content.decode())[1]


@pytest.fixture
def loader(db) -> Client:
    """An operator of the Operators group: the migration gives it geo.load_places."""
    return staff_client("operator@example.com", groups=["Operators"])


# --- the preview: every row with its problems, nothing written ---


def test_preview_lists_each_rows_problems_and_writes_nothing(loader):
    response = preview(loader, GOOD_AND_BAD)

    assert response.status_code == 200, response.content
    assert Place.objects.count() == 0
    assert [row.name for row in response.context["valid"]] == [
        "Wat Phnom",
        "Independence Monument",
    ]
    problems = {row.row: row.problems for row in response.context["invalid"]}
    assert problems[4] == ["The name is empty."]
    assert problems[5] == [
        "lat 'north' is not a number: write it with a dot for decimals, e.g. 11.5765."
    ]
    assert problems[6] == ["lat 95.5 is out of range: it must be from -90 to 90."]
    assert problems[7] == ["long 190 is out of range: it must be from -180 to 180."]
    assert problems[8] == [
        "lat '11,55' is not a number: write it with a dot for decimals, e.g. 11.5765."
    ]
    assert problems[9] == ["lat 0 and long 0 is not a place: were the cells empty in the sheet?"]
    assert problems[10] == [
        "The name 'Twice Market' (city Phnom Penh) is on rows 10 and 11: keep one."
    ]
    assert problems[11] == [
        "The name 'twice market!' (city phnom penh) is on rows 10 and 11: keep one."
    ]
    page = response.content.decode()
    assert "2 to save" in page and "8 with problems" in page
    assert "lat 95.5 is out of range" in page
    assert 'value="Save 2 places"' in page


def test_preview_says_which_rows_replace_a_place_already_in_the_list(loader, region):
    text = (
        "name,aliases,lat,long,city\n"
        "ROYAL PALACE; Phnom Penh,Veang Chaktomuk,11.5640,104.9310,phnom penh\n"
    )

    response = preview(loader, text)

    (row,) = response.context["valid"]
    assert row.replaces == [(11.5637, 104.9311)]
    assert "Replaces 11.5637, 104.9311" in response.content.decode()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"name,aliases,lat\nWat Phnom,,11.5765\n", "The column long is missing."),
        (b"title,place\nx,y\n", "None of them was found."),
        (b"name,lat,long\n", "no places under it"),
        (b"", "The file is empty."),
        (b"name,lat,long\nCaf\xe9,11.5,104.9\n", "not UTF-8"),
        (b"PK\x03\x04 a workbook", "not a CSV file"),
        (b"name,lat,long,latitude\nA,1,2,3\n", "The column lat appears twice"),
    ],
    ids=["no-long", "no-header", "no-rows", "empty", "latin-1", "xlsx", "lat-twice"],
)
def test_an_unusable_file_is_400_with_the_reason_and_writes_nothing(loader, content, says):
    response = loader.post(LOAD, {"file": SimpleUploadedFile("p.csv", content)})

    assert response.status_code == 400
    assert says in " ".join(response.context["form"].errors["file"])
    assert Place.objects.count() == 0


def test_semicolons_and_other_column_names_are_read(loader):
    text = "Name;Latitude;Longitude;Alias;Notes\nWat Phnom;11.5765;104.9232;Phnom Daun Penh;x\n"

    response = preview(loader, text)

    (row,) = response.context["valid"]
    assert (row.name, row.lat, row.long, row.aliases) == (
        "Wat Phnom",
        11.5765,
        104.9232,
        ["Phnom Daun Penh"],
    )
    assert response.context["preview"].unknown_columns == ["Notes"]


# --- Save: the valid rows, in one transaction ---


def test_save_writes_the_valid_rows_and_forgets_cached_answers(loader, db):
    GeocodeResult.objects.create(provider="gazetteer", key="wat phnom||", found=False)
    token = token_of(preview(loader, GOOD_AND_BAD))

    response = loader.post(SAVE, {"token": token}, follow=True)

    assert response.redirect_chain[-1][0] == "/admin/geo/place/"
    assert set(Place.objects.values_list("name", "aliases", "city", "lat", "long")) == {
        (
            "Wat Phnom",
            "Phnom Daun Penh\nWat Phnom Daun Penh",
            "Phnom Penh",
            *WAT_PHNOM,
        ),
        ("Independence Monument", "Vimean Ekareach", "Phnom Penh", 11.5564, 104.9282),
    }
    assert GeocodeResult.objects.count() == 0
    said = [str(m) for m in response.context["messages"]]
    assert said == ["Saved 2 place(s) from the file; 8 row(s) with problems were left out."]
    logged = LogEntry.objects.filter(content_type__model="place", action_flag=ADDITION)
    assert sorted(logged.values_list("object_repr", "change_message")) == [
        ("Independence Monument", "Loaded from a CSV file."),
        ("Wat Phnom", "Loaded from a CSV file."),
    ]


def test_save_replaces_a_place_of_the_same_name_and_city(loader, region):
    before = Place.objects.count()
    text = (
        "name,aliases,lat,long,city\n"
        "royal palace phnom penh,Veang Chaktomuk,11.5640,104.9310,Phnom Penh\n"
    )

    response = loader.post(SAVE, {"token": token_of(preview(loader, text))}, follow=True)

    assert Place.objects.count() == before
    assert not Place.objects.filter(name="Royal Palace, Phnom Penh").exists()
    palace = Place.objects.get(name="royal palace phnom penh")
    assert (palace.lat, palace.long, palace.aliases) == (11.5640, 104.9310, "Veang Chaktomuk")
    said = [str(m) for m in response.context["messages"]]
    assert said == ["Saved 1 place(s) from the file, replacing 1 with the same name and city."]


def many_places(count: int) -> str:
    lines = [
        f"Stall {i},Stall {i} Market|S{i},11.{5000 + i},104.{9000 + i},Phnom Penh"
        for i in range(count)
    ]
    return "name,aliases,lat,long,city\n" + "\n".join(lines) + "\n"


def test_save_runs_the_same_queries_for_three_rows_as_for_three_hundred(loader, region):
    loader.post(SAVE, {"token": token_of(preview(loader, many_places(3)))})
    few = token_of(preview(loader, many_places(3)))  # replaces the 3
    with CaptureQueriesContext(connection) as saving_few:
        loader.post(SAVE, {"token": few})
    many = token_of(preview(loader, many_places(300)))  # replaces the 3, adds 297
    with CaptureQueriesContext(connection) as saving_many:
        loader.post(SAVE, {"token": many})

    assert Place.objects.filter(name__startswith="Stall ").count() == 300
    assert len(saving_many) == len(saving_few)
    # On the places table, past its lock: one read, one DELETE, one COPY, the new rows read back.
    on_places = [q["sql"].split()[0] for q in saving_many if '"geo_place"' in q["sql"]]
    assert on_places == ["SELECT", "DELETE", "COPY", "SELECT"]


def test_a_tampered_or_expired_token_saves_nothing(loader, db, settings):
    token = token_of(preview(loader, GOOD_AND_BAD))

    response = loader.post(SAVE, {"token": token[:-2] + "xx"}, follow=True)

    assert Place.objects.count() == 0
    assert [str(m) for m in response.context["messages"]] == [
        "That preview has expired: upload the file again."
    ]
    assert response.redirect_chain[-1][0] == LOAD


def test_a_token_made_for_another_operator_is_refused(loader, db):
    someone_else = signing.dumps(
        {"user": -1, "text": "name,lat,long\nX,11.5,104.9\n"}, salt=SIGNING_SALT, compress=True
    )

    response = loader.post(SAVE, {"token": someone_else})

    assert response.status_code == 403
    assert Place.objects.count() == 0


# --- the permission: geo.load_places, like every other console action ---


def test_an_operator_without_the_permission_is_refused_and_not_offered_the_button(db):
    viewer = staff_client("viewer@example.com", perms=["geo.view_place", "geo.add_place"])
    allowed = staff_client("loader@example.com", perms=["geo.view_place", "geo.load_places"])
    token = token_of(preview(allowed, GOOD_AND_BAD))

    assert viewer.get(LOAD).status_code == 403
    assert preview(viewer, GOOD_AND_BAD).status_code == 403
    assert viewer.post(SAVE, {"token": token}).status_code == 403
    assert Place.objects.count() == 0
    assert 'data-testid="load-places"' not in viewer.get("/admin/geo/place/").content.decode()
    assert 'data-testid="load-places"' in allowed.get("/admin/geo/place/").content.decode()


def test_finance_may_not_load_places(db):
    finance = staff_client("finance@example.com", groups=["Finance"])

    assert finance.get(LOAD).status_code == 403


# --- what it is for: a batch whose address is a loaded place or alias ---


def test_a_batch_resolves_an_address_by_a_loaded_places_alias(
    open_for_business, loader, alice, api
):
    loader.post(SAVE, {"token": token_of(preview(loader, GOOD_AND_BAD))})
    by_alias = {"complete_address": "Phnom Daun Penh", "city": "Phnom Penh", "country": "KH"}
    by_name = {"complete_address": "wat phnom", "city": "Phnom Penh", "country": "KH"}

    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(address_drop("ALIAS", by_alias), address_drop("NAME", by_name)),
            address_pickup_group(
                ROYAL_PALACE,
                address_drop(
                    "MONUMENT",
                    {"complete_address": "Vimean Ekareach", "city": "Phnom Penh", "country": "KH"},
                ),
            ),
        ),
    )

    assert reasons(data) == {"ALIAS": "accepted", "NAME": "accepted", "MONUMENT": "accepted"}
    pins = results_by_id(data)
    assert pins["ALIAS"]["resolved_pin"] == {"lat": WAT_PHNOM[0], "long": WAT_PHNOM[1]}
    assert pins["NAME"]["resolved_pin"] == pins["ALIAS"]["resolved_pin"]
    assert pins["MONUMENT"]["resolved_pin"] == {"lat": 11.5564, "long": 104.9282}


def test_deleting_places_in_bulk_forgets_the_cached_answers(loader, region):
    GeocodeResult.objects.create(provider="gazetteer", key="royal palace phnom penh||", found=True)
    palace = Place.objects.get(name="Royal Palace, Phnom Penh")
    superuser = Client()
    superuser.force_login(
        get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    )

    response = superuser.post(
        "/admin/geo/place/",
        {"action": "delete_selected", "_selected_action": [palace.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert not Place.objects.filter(pk=palace.pk).exists()
    assert GeocodeResult.objects.count() == 0
