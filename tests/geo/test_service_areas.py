"""OUT_OF_SERVICE_AREA (docs/contract.md §4 rule 4), area shapes and edges, and precedence among
3–6."""

from __future__ import annotations

import numpy as np
import pytest
import shapely

from geo.geometry import geometry_from_geojson, points_within
from geo.services import Area, Coverage, load_coverage
from orders.models import Batch, BatchStatus, Drop, Order
from tests.factories import batch, drop, group
from tests.geo.helpers import (
    NOWHERE,
    address_drop,
    address_pickup_group,
    local,
    make_area,
    polygon,
    reasons,
    results_by_id,
    square,
    submit,
)

ANGKOR_WAT = {"lat": 13.4125, "long": 103.8670}
SIEM_REAP_CENTRE = {"lat": 13.3600, "long": 103.8600}
BATTAMBANG = {"lat": 13.1000, "long": 103.2000}
KAMPOT = {"lat": 10.6100, "long": 104.1800}
PURSAT = {"lat": 12.5400, "long": 103.9200}  # between Battambang and Kampot

SIEM_REAP_AREA = polygon(103.80, 13.30, 103.95, 13.45)
TWIN_TOWNS = {  # Battambang and Kampot, one area of two disjoint squares
    "type": "MultiPolygon",
    "coordinates": [square(103.15, 13.05, 103.25, 13.15), square(104.13, 10.57, 104.23, 10.67)],
}


@pytest.fixture
def carol(make_tenant):
    """A tenant whose wallet covers long cross-country drops."""
    return make_tenant(name="Carol Freight", sandbox_balance="100000.00")


# --- a drop or a pickup outside every active area ---


def test_drop_outside_every_area_is_rejected_alone(open_for_business, alice, api):
    data = submit(
        api, alice.sandbox_key, batch(group(drop("IN"), drop("OUT", **ANGKOR_WAT), drop("IN-2")))
    )

    by_id = results_by_id(data)
    assert by_id["OUT"]["failure_reason"] == "OUT_OF_SERVICE_AREA"
    assert "drop" in by_id["OUT"]["message"]
    assert by_id["IN"]["status"] == by_id["IN-2"]["status"] == "accepted"
    assert data["status"] == "PARTIAL"
    assert set(Drop.objects.values_list("client_order_id", flat=True)) == {"IN", "IN-2"}


def test_pickup_outside_every_area_rejects_its_whole_group(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(drop("FAR-1"), drop("FAR-2"), **ANGKOR_WAT),
            group(drop("NEAR-1")),
        ),
    )

    assert reasons(data) == {
        "FAR-1": "OUT_OF_SERVICE_AREA",
        "FAR-2": "OUT_OF_SERVICE_AREA",
        "NEAR-1": "accepted",
    }
    assert "pickup" in results_by_id(data)["FAR-1"]["message"]
    assert Order.objects.count() == 1
    assert list(Drop.objects.values_list("client_order_id", flat=True)) == ["NEAR-1"]


def test_batch_with_every_drop_out_of_area_is_failed_and_stores_nothing_but_the_batch(
    open_for_business, alice, api
):
    data = submit(api, alice.sandbox_key, batch(group(drop("OUT", **ANGKOR_WAT))))

    assert data["status"] == "FAILED"
    assert Batch.objects.get().status == BatchStatus.FAILED
    assert Order.objects.count() == 0 and Drop.objects.count() == 0


# --- edges: a point exactly on the boundary is served ---


def test_points_exactly_on_the_area_boundary_are_served(open_for_business, alice, api):
    # The demo area is lon 104.80–105.00, lat 11.45–11.70.
    on_edge = {
        "SOUTH": {"lat": 11.45, "long": 104.90},
        "NORTH": {"lat": 11.70, "long": 104.90},
        "WEST": {"lat": 11.55, "long": 104.80},
        "EAST": {"lat": 11.55, "long": 105.00},
        "SW-CORNER": {"lat": 11.45, "long": 104.80},
        "NE-CORNER": {"lat": 11.70, "long": 105.00},
    }
    body = batch(group(*[drop(name, **pin) for name, pin in on_edge.items()]))

    data = submit(api, alice.sandbox_key, body)

    assert set(reasons(data).values()) == {"accepted"}
    assert Drop.objects.count() == len(on_edge)


def test_points_just_outside_the_boundary_are_not_served(open_for_business, alice, api):
    just_outside = {
        "SOUTH": {"lat": 11.4499, "long": 104.90},
        "NORTH": {"lat": 11.7001, "long": 104.90},
        "WEST": {"lat": 11.55, "long": 104.7999},
        "EAST": {"lat": 11.55, "long": 105.0001},
    }
    body = batch(group(*[drop(name, **pin) for name, pin in just_outside.items()]))

    data = submit(api, alice.sandbox_key, body)

    assert set(reasons(data).values()) == {"OUT_OF_SERVICE_AREA"}
    assert Drop.objects.count() == 0


def test_pickup_on_the_boundary_is_served(open_for_business, alice, api):
    data = submit(api, alice.sandbox_key, batch(group(drop("A"), lat=11.45, long=104.80)))

    assert reasons(data) == {"A": "accepted"}


# --- shapes: MultiPolygon, holes; inactive areas; several areas ---


def test_multipolygon_area_serves_each_of_its_parts_but_not_the_gap(open_for_business, carol, api):
    make_area("Twin Towns", TWIN_TOWNS)

    data = submit(
        api,
        carol.sandbox_key,
        batch(
            group(drop("BATTAMBANG", **BATTAMBANG), drop("KAMPOT", **KAMPOT), **BATTAMBANG),
            group(drop("GAP", **PURSAT), **KAMPOT),
        ),
    )

    assert reasons(data) == {
        "BATTAMBANG": "accepted",
        "KAMPOT": "accepted",
        "GAP": "OUT_OF_SERVICE_AREA",
    }
    assert Drop.objects.get(client_order_id="KAMPOT").lat == KAMPOT["lat"]


def test_point_in_a_polygon_hole_is_not_served(open_for_business, alice, api):
    ring_with_hole = {
        "type": "Polygon",
        "coordinates": square(103.0, 12.0, 103.4, 12.4) + square(103.1, 12.1, 103.3, 12.3),
    }
    make_area("Ring Town", ring_with_hole)

    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(
                drop("RING", lat=12.05, long=103.05),
                drop("HOLE", lat=12.2, long=103.2),
                lat=12.35,
                long=103.35,
            )
        ),
    )

    assert reasons(data) == {"RING": "accepted", "HOLE": "OUT_OF_SERVICE_AREA"}


def test_inactive_area_no_longer_serves(open_for_business, alice, api, region):
    region.active = False
    region.save()

    data = submit(api, alice.sandbox_key, batch(group(drop("A"))))

    assert reasons(data) == {"A": "OUT_OF_SERVICE_AREA"}
    assert Drop.objects.count() == 0

    region.active = True
    region.save()
    data = submit(api, alice.sandbox_key, batch(group(drop("A"))))

    assert reasons(data) == {"A": "accepted"}


def test_any_active_area_serves_and_drops_may_cross_areas(open_for_business, carol, api):
    make_area("Siem Reap", SIEM_REAP_AREA)

    data = submit(
        api,
        carol.sandbox_key,
        batch(
            group(drop("SR-SR", **ANGKOR_WAT), **SIEM_REAP_CENTRE),
            group(drop("PP-SR", **ANGKOR_WAT), drop("PP-PP")),
            group(drop("PP-NOWHERE", **PURSAT)),
        ),
    )

    assert reasons(data) == {
        "SR-SR": "accepted",
        "PP-SR": "accepted",
        "PP-PP": "accepted",
        "PP-NOWHERE": "OUT_OF_SERVICE_AREA",
    }
    assert Order.objects.count() == 2


def test_deactivating_one_of_two_areas_leaves_the_other_serving(open_for_business, alice, api):
    make_area("Siem Reap", SIEM_REAP_AREA, active=False)

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("SR", **ANGKOR_WAT), **SIEM_REAP_CENTRE), group(drop("PP"))),
    )

    assert reasons(data) == {"SR": "OUT_OF_SERVICE_AREA", "PP": "accepted"}


# --- precedence among reasons 3–6 (and their neighbours): the first failing rule wins ---


def test_drop_out_of_area_beats_its_pickup_scheduled_in_the_past(open_for_business, alice, api):
    a_minute_ago = local(2026, 11, 23, 9, 59).isoformat()

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("OUT", **ANGKOR_WAT), drop("IN"), pickup_scheduled_at=a_minute_ago)),
    )

    assert reasons(data) == {"OUT": "OUT_OF_SERVICE_AREA", "IN": "SCHEDULE_IN_PAST"}


def test_drop_out_of_area_beats_its_pickup_outside_opening_hours(open_for_business, alice, api):
    tonight = local(2026, 11, 23, 22, 0).isoformat()

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("OUT", **ANGKOR_WAT), drop("IN"), pickup_scheduled_at=tonight)),
    )

    assert reasons(data) == {"OUT": "OUT_OF_SERVICE_AREA", "IN": "OUTSIDE_OPERATING_HOURS"}


def test_pickup_out_of_area_beats_its_own_past_schedule(open_for_business, alice, api):
    an_hour_ago = local(2026, 11, 23, 9, 0).isoformat()

    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("A"), pickup_scheduled_at=an_hour_ago, **ANGKOR_WAT)),
    )

    assert reasons(data) == {"A": "OUT_OF_SERVICE_AREA"}


def test_unknown_drop_address_beats_its_pickup_out_of_area(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(group(address_drop("LOST", NOWHERE), drop("FAR"), **ANGKOR_WAT)),
    )

    assert reasons(data) == {"LOST": "GEOCODE_FAILED", "FAR": "OUT_OF_SERVICE_AREA"}


def test_unknown_pickup_address_beats_its_drops_out_of_area(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(address_pickup_group(NOWHERE, drop("OUT", **ANGKOR_WAT), drop("IN"))),
    )

    assert reasons(data) == {"OUT": "GEOCODE_FAILED", "IN": "GEOCODE_FAILED"}
    assert "pickup" in results_by_id(data)["IN"]["message"]


def test_invalid_phone_beats_geocode_failed(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(
            group(address_drop("BOTH", NOWHERE, phone="012 345 678")),
            address_pickup_group(NOWHERE, drop("DROP-PHONE", phone="not a phone")),
        ),
    )

    assert reasons(data) == {"BOTH": "INVALID_PHONE", "DROP-PHONE": "INVALID_PHONE"}


def test_invalid_coordinates_beat_a_pickup_out_of_area(open_for_business, alice, api):
    data = submit(
        api,
        alice.sandbox_key,
        batch(group(drop("ZERO", lat=0, long=0), drop("FAR"), **ANGKOR_WAT)),
    )

    assert reasons(data) == {"ZERO": "INVALID_COORDINATES", "FAR": "OUT_OF_SERVICE_AREA"}


# --- Coverage: the vectorised point-in-area check behind rule 4 ---


def test_coverage_locates_a_thousand_points_in_one_call():
    rng = np.random.default_rng(7)
    lats = rng.uniform(11.3, 11.85, 1000)
    longs = rng.uniform(104.65, 105.15, 1000)
    coverage = Coverage(
        [Area(1, "Phnom Penh", geometry_from_geojson(polygon(104.80, 11.45, 105.00, 11.70)))]
    )

    found = coverage.locate(lats.tolist(), longs.tolist())

    expected = [
        (0,) if 11.45 <= lat <= 11.70 and 104.80 <= long <= 105.00 else ()
        for lat, long in zip(lats, longs, strict=True)
    ]
    assert found == expected
    assert 0 < sum(1 for f in found if f) < 1000  # both kinds of point were tried


def test_coverage_names_every_area_containing_each_point():
    areas = [
        Area(1, "Phnom Penh", geometry_from_geojson(polygon(104.80, 11.45, 105.00, 11.70))),
        Area(2, "Twin Towns", geometry_from_geojson(TWIN_TOWNS)),
        Area(3, "Overlap", geometry_from_geojson(polygon(104.90, 11.40, 105.10, 11.60))),
    ]
    coverage = Coverage(areas)
    points = [(11.65, 104.85), (11.50, 104.95), (10.61, 104.18), (11.42, 105.05), (12.54, 103.92)]

    found = coverage.locate([p[0] for p in points], [p[1] for p in points])

    assert found == [(0,), (0, 2), (1,), (2,), ()]
    # Same answer as asking shapely one point at a time.
    for (lat, long), indexes in zip(points, found, strict=True):
        point = shapely.Point(long, lat)
        assert indexes == tuple(i for i, a in enumerate(areas) if a.geometry.intersects(point))


def test_points_on_edges_and_corners_are_within_and_just_outside_are_not():
    area = geometry_from_geojson(polygon(104.80, 11.45, 105.00, 11.70))
    lats = np.array([11.45, 11.70, 11.55, 11.55, 11.45, 11.70, 11.4499999, 11.55])
    longs = np.array([104.90, 104.90, 104.80, 105.00, 104.80, 105.00, 104.90, 105.0000001])

    inside = points_within(area, lats, longs)

    assert inside.tolist() == [True] * 6 + [False] * 2


def test_coverage_without_areas_or_points():
    pp = Area(1, "Phnom Penh", geometry_from_geojson(polygon(104.80, 11.45, 105.00, 11.70)))

    assert Coverage([]).locate([11.5, 11.6], [104.9, 104.9]) == [(), ()]
    assert Coverage([pp]).locate([], []) == []
    assert points_within(pp.geometry, np.array([]), np.array([])).tolist() == []


def test_load_coverage_reads_only_active_areas_in_one_query(region, django_assert_num_queries):
    make_area("Siem Reap", SIEM_REAP_AREA)
    make_area("Retired", polygon(103.0, 12.0, 103.4, 12.4), active=False)
    load_coverage()  # its SQL compiled, then kept (core.reads)

    with django_assert_num_queries(1):
        coverage = load_coverage()

    assert sorted(a.name for a in coverage.areas) == ["Phnom Penh", "Siem Reap"]
    phnom_penh = next(a for a in coverage.areas if a.name == "Phnom Penh")
    assert sorted(phnom_penh.hours) == list(range(7))


def test_coverage_read_in_one_is_what_the_orm_reads_apart(region):
    """geo.services.load_coverage reads the areas and their hours in one statement on
    PostgreSQL; the embedded default reads them apart. Both give the same areas, in the same
    order, with the same hours and shapes: two spans on one day, a day closed, an area
    without hours, a retired one."""
    from datetime import time

    from geo.models import OpeningHours, ServiceArea

    siem_reap = make_area("Siem Reap", SIEM_REAP_AREA, days=[0, 2], opens=time(13))
    OpeningHours.objects.create(area=siem_reap, weekday=2, opens=time(7), closes=time(11))
    make_area("Kampot", polygon(104.1, 10.5, 104.3, 10.7), days=[])
    make_area("Retired", polygon(103.0, 12.0, 103.4, 12.4), active=False)

    def seen(coverage):
        return [(a.id, a.name, a.geometry.wkt, a.hours) for a in coverage.areas]

    def read_apart():
        """The active areas and their hours as the ORM reads them, one model at a time."""
        return [
            (area.id, area.name, geometry_from_geojson(area.geojson).wkt, hours_of(area))
            for area in ServiceArea.objects.filter(active=True)
        ]

    def hours_of(area) -> dict:
        hours = {}
        for opening in OpeningHours.objects.filter(area=area):
            hours.setdefault(opening.weekday, []).append((opening.opens, opening.closes))
        return hours

    one = seen(load_coverage())
    assert one == read_apart()
    assert [name for _, name, _, _ in one] == ["Kampot", "Phnom Penh", "Siem Reap"]
    hours = dict((name, hours) for _, name, _, hours in one)
    assert hours["Kampot"] == {}
    assert hours["Siem Reap"] == {
        0: [(time(13), time(21))],
        2: [(time(7), time(11)), (time(13), time(21))],
    }
