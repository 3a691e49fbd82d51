"""Operator console for areas (validated GeoJSON), GET /service-areas, and the demo region."""

from __future__ import annotations

import json
from datetime import time
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from geo.demo import PHNOM_PENH, seed_region
from geo.geometry import geometry_from_geojson
from geo.models import OpeningHours, Place, ServiceArea
from tests.geo.helpers import make_area, polygon, square

KANDAL = polygon(105.00, 11.45, 105.10, 11.70)
BOWTIE = {
    "type": "Polygon",
    "coordinates": [[[104.8, 11.4], [105.0, 11.6], [105.0, 11.4], [104.8, 11.6], [104.8, 11.4]]],
}


@pytest.fixture
def operator(db) -> Client:
    client = Client()
    client.force_login(
        get_user_model().objects.create_superuser("operator", "operator@example.com", "pw")
    )
    return client


def area_form(name: str, geojson, hours: list[tuple[int, str, str]] = (), **extra) -> dict:
    """The admin add form for a ServiceArea with its opening-hours inline."""
    data = {
        "name": name,
        "geojson": geojson if isinstance(geojson, str) else json.dumps(geojson),
        "active": "on",
        "hours-TOTAL_FORMS": str(len(hours)),
        "hours-INITIAL_FORMS": "0",
        "hours-MIN_NUM_FORMS": "0",
        "hours-MAX_NUM_FORMS": "1000",
        "_save": "Save",
        **extra,
    }
    for i, (weekday, opens, closes) in enumerate(hours):
        data |= {
            f"hours-{i}-weekday": str(weekday),
            f"hours-{i}-opens": opens,
            f"hours-{i}-closes": closes,
        }
    return data


def geojson_errors(response) -> list[str]:
    return response.context["adminform"].form.errors.get("geojson", [])


# --- admin: GeoJSON validated with a clear error; nothing saved ---


@pytest.mark.parametrize(
    ("geojson", "says"),
    [
        ({"type": "Point", "coordinates": [104.9, 11.5]}, '"type": "Polygon" or "MultiPolygon"'),
        ({"type": "LineString", "coordinates": [[104.9, 11.5], [105, 11.6]]}, "MultiPolygon"),
        ([1, 2, 3], "GeoJSON object"),
        (BOWTIE, "Self-intersection"),
        (polygon(200.0, 11.45, 201.0, 11.70), "within range"),
        (polygon(104.8, 91.0, 105.0, 92.0), "within range"),
        ({"type": "Polygon", "coordinates": [[[104.8, 11.4], [105.0, 11.4]]]}, "Malformed"),
        ({"type": "Polygon", "coordinates": "Phnom Penh"}, "Malformed"),
        ({"type": "Polygon", "coordinates": []}, "empty"),
        ('{"type": "Polygon", "coordinates": [[[104.8, 11.4]', "valid JSON"),
        ('{"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [NaN, 1], [0, 0]]]}', "not valid"),
    ],
    ids=[
        "point",
        "linestring",
        "not-an-object",
        "bowtie",
        "longitude-out-of-range",
        "latitude-out-of-range",
        "too-few-points",
        "coordinates-not-a-list",
        "empty",
        "malformed-json",
        "nan-coordinate",
    ],
)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # shapely on NaN
def test_admin_refuses_a_bad_area_geojson_with_a_clear_error(operator, geojson, says):
    response = operator.post(
        "/admin/geo/servicearea/add/", area_form("Bad", geojson, hours=[(0, "07:00", "21:00")])
    )

    assert response.status_code == 200  # the form again, not a redirect
    errors = geojson_errors(response)
    assert errors and says in " ".join(errors)
    assert says in response.content.decode().replace("&quot;", '"')
    assert ServiceArea.objects.count() == 0
    assert OpeningHours.objects.count() == 0


def test_admin_saves_a_valid_polygon_area_with_its_hours(operator):
    response = operator.post(
        "/admin/geo/servicearea/add/",
        area_form("Kandal", KANDAL, hours=[(0, "07:00", "12:00"), (0, "13:00", "21:00")]),
    )

    assert response.status_code == 302, geojson_errors(response)
    area = ServiceArea.objects.get(name="Kandal")
    assert area.geojson == KANDAL and area.active
    assert list(area.hours.values_list("weekday", "opens", "closes")) == [
        (0, time(7), time(12)),
        (0, time(13), time(21)),
    ]


def test_admin_saves_a_valid_multipolygon_area(operator):
    twin = {
        "type": "MultiPolygon",
        "coordinates": [square(103.15, 13.05, 103.25, 13.15), square(104.13, 10.57, 104.23, 10.67)],
    }

    response = operator.post("/admin/geo/servicearea/add/", area_form("Twin Towns", twin))

    assert response.status_code == 302
    assert geometry_from_geojson(ServiceArea.objects.get().geojson).geom_type == "MultiPolygon"


def test_admin_change_with_bad_geojson_keeps_the_stored_area(operator):
    area = make_area("Kandal", KANDAL, days=[])

    response = operator.post(
        f"/admin/geo/servicearea/{area.pk}/change/", area_form("Kandal renamed", BOWTIE)
    )

    assert response.status_code == 200
    assert "Self-intersection" in " ".join(geojson_errors(response))
    area.refresh_from_db()
    assert (area.name, area.geojson) == ("Kandal", KANDAL)


def test_admin_change_with_good_geojson_moves_the_area(operator):
    area = make_area("Kandal", KANDAL, days=[])
    wider = polygon(105.00, 11.40, 105.20, 11.75)

    response = operator.post(
        f"/admin/geo/servicearea/{area.pk}/change/", area_form("Kandal", wider)
    )

    assert response.status_code == 302
    area.refresh_from_db()
    assert area.geojson == wider


def test_admin_refuses_hours_that_close_before_they_open(operator):
    response = operator.post(
        "/admin/geo/servicearea/add/", area_form("Kandal", KANDAL, hours=[(0, "21:00", "07:00")])
    )

    assert response.status_code == 200
    assert ServiceArea.objects.count() == 0
    assert OpeningHours.objects.count() == 0


def test_admin_lists_areas_and_places(operator, region):
    assert operator.get("/admin/geo/servicearea/").status_code == 200
    assert operator.get(f"/admin/geo/servicearea/{region.pk}/change/").status_code == 200
    places = operator.get("/admin/geo/place/?q=palace")
    assert places.status_code == 200
    assert "Royal Palace, Phnom Penh" in places.content.decode()


# --- GET /api/v1/service-areas ---


def test_service_areas_lists_the_demo_area(region, alice, api):
    response = api.get("/service-areas", alice.sandbox_key)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    (area,) = body["data"]["areas"]
    assert area["name"] == "Phnom Penh"
    assert area["id"] == region.pk
    assert area["polygon"] == PHNOM_PENH
    assert area["time_zone"] == "Asia/Phnom_Penh"
    assert area["hours"] == [
        {"weekday": day, "opens": "07:00", "closes": "21:00"}
        for day in ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    ]


def test_service_areas_lists_only_active_areas_with_their_own_hours(region, alice, api):
    make_area("Kandal", KANDAL, days=[5, 6], opens=time(8, 30), closes=time(17))
    make_area("Retired", polygon(103.0, 12.0, 103.4, 12.4), active=False)

    areas = api.get("/service-areas", alice.live_key).json()["data"]["areas"]

    assert [a["name"] for a in areas] == ["Kandal", "Phnom Penh"]
    assert areas[0]["polygon"] == KANDAL
    assert areas[0]["hours"] == [
        {"weekday": "saturday", "opens": "08:30", "closes": "17:00"},
        {"weekday": "sunday", "opens": "08:30", "closes": "17:00"},
    ]


def test_service_areas_need_an_api_key(region, api):
    response = api.get("/service-areas", None)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_service_areas_reads_a_constant_number_of_queries(region, alice, api):
    api.get("/service-areas", alice.sandbox_key)  # first use of the key records last_used
    with CaptureQueriesContext(connection) as one_area:
        api.get("/service-areas", alice.sandbox_key)
    for n in range(5):
        make_area(f"Extra {n}", polygon(103.0 + n, 12.0, 103.5 + n, 12.5))
    with CaptureQueriesContext(connection) as six_areas:
        response = api.get("/service-areas", alice.sandbox_key)

    assert len(response.json()["data"]["areas"]) == 6
    assert len(six_areas) == len(one_area)


# --- the demo region: exactly docs/contract.md §8, safe to seed twice ---


def test_seed_region_creates_the_demo_region_exactly(db):
    area = seed_region()

    assert area.name == "Phnom Penh" and area.active
    assert geometry_from_geojson(area.geojson).bounds == (104.80, 11.45, 105.00, 11.70)
    assert list(area.hours.values_list("weekday", "opens", "closes")) == [
        (day, time(7), time(21)) for day in range(7)
    ]
    assert set(Place.objects.values_list("name", "lat", "long")) == {
        ("Central Market, Phnom Penh", 11.5696, 104.9210),
        ("Royal Palace, Phnom Penh", 11.5637, 104.9311),
        ("Aeon Mall Phnom Penh", 11.5486, 104.9322),
        ("Phnom Penh International Airport", 11.5466, 104.8441),
        ("Angkor Wat, Siem Reap", 13.4125, 103.8670),
    }


def test_seed_region_is_idempotent_and_restores_edits(db):
    first = seed_region()
    first.active = False
    first.save()
    first.hours.filter(weekday=6).delete()
    Place.objects.filter(name="Royal Palace, Phnom Penh").update(lat=1.0, long=2.0)

    second = seed_region()

    assert second.pk == first.pk
    assert ServiceArea.objects.count() == 1 and second.active
    assert OpeningHours.objects.count() == 7
    assert Place.objects.count() == 5
    palace = Place.objects.get(name="Royal Palace, Phnom Penh")
    assert (palace.lat, palace.long) == (11.5637, 104.9311)


def test_seed_demo_command_twice_leaves_one_region(db):
    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())

    assert list(ServiceArea.objects.values_list("name", flat=True)) == ["Phnom Penh"]
    assert OpeningHours.objects.count() == 7
    assert Place.objects.count() == 5
