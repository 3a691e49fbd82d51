"""Couriers' positions (docs/contract.md §20): validated, the latest kept and a 24 h trail,
written set-based (one statement and one COPY whatever the number of points), and the real
courier on the tracking entry while on the way."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from couriers.models import CourierPoint, CourierPosition
from couriers.services import Point, prune_trail, record_points
from tests.couriers.conftest import assigned_drops
from tests.factories import drop


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def points(start: datetime, n: int, step: int = 15) -> list[dict]:
    return [
        {"lat": 11.56 + i * 1e-4, "long": 104.92, "at": iso(start + timedelta(seconds=i * step)),
         "accuracy": 8}
        for i in range(n)
    ]  # fmt: skip


def test_points_are_stored_as_latest_and_trail(open_for_business, dara):
    courier, client = dara
    now = timezone.now()
    answer = client.post("/location", {"points": points(now - timedelta(minutes=1), 4)})
    assert answer.status_code == 200
    assert answer.json()["data"] == {"received": 4, "stored": 4}
    latest = CourierPosition.objects.get(courier=courier)
    assert latest.lat == pytest.approx(11.5603) and latest.accuracy == 8
    assert CourierPoint.objects.filter(courier=courier).count() == 4


def test_older_repeated_and_future_points_are_ignored(open_for_business, dara):
    courier, client = dara
    now = timezone.now()
    sent = points(now - timedelta(minutes=2), 3)
    client.post("/location", {"points": sent})
    # An offline queue sends the same points again, with one new one and one from the future.
    again = [*sent, *points(now, 1), *points(now + timedelta(hours=1), 1)]
    answer = client.post("/location", {"points": again})
    assert answer.json()["data"] == {"received": 5, "stored": 1}
    assert CourierPoint.objects.filter(courier=courier).count() == 4
    assert CourierPosition.objects.get(courier=courier).at == datetime.fromisoformat(
        points(now, 1)[0]["at"]
    )
    # Only older points: nothing stored, the latest stays.
    answer = client.post("/location", {"points": points(now - timedelta(hours=1), 2)})
    assert answer.json()["data"]["stored"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"points": []}, "points"),
        ({"points": [{}] * 101}, "points"),
        ({"points": "here"}, "points"),
        ({"points": [{"lat": 91, "long": 104, "at": "2026-11-25T10:00:00Z"}]}, "points[0].lat"),
        ({"points": [{"lat": 11, "long": "x", "at": "2026-11-25T10:00:00Z"}]}, "points[0].long"),
        ({"points": [{"lat": 11, "long": 104, "at": "2026-11-25T10:00:00"}]}, "points[0].at"),
        ({"points": [{"lat": 11, "long": 104, "at": "yesterday"}]}, "points[0].at"),
        (
            {"points": [{"lat": 11, "long": 104, "at": "2026-11-25T10:00:00Z", "accuracy": -1}]},
            "points[0].accuracy",
        ),
        ({"points": [{"lat": True, "long": 104, "at": "2026-11-25T10:00:00Z"}]}, "points[0].lat"),
        ({"points": [7]}, "points[0]"),
        ({"where": []}, "where"),
    ],
)
def test_invalid_points_are_a_400_naming_the_field(open_for_business, dara, body, field):
    courier, client = dara
    answer = client.post("/location", body)
    assert answer.status_code == 400, answer.content
    assert field in [d["field"] for d in answer.json()["error"]["details"]]
    assert not CourierPoint.objects.filter(courier=courier).exists()


@pytest.mark.postgresql  # statements counted as PostgreSQL runs them (COPY)
@pytest.mark.parametrize("n", [1, 100])
def test_the_write_is_one_statement_and_one_copy_whatever_the_number_of_points(
    open_for_business, dara, n
):
    courier, _ = dara
    start = timezone.now() - timedelta(minutes=30)
    sent = [Point(11.5, 104.9, start + timedelta(seconds=i), 5.0) for i in range(n)]
    with CaptureQueriesContext(connection) as captured:
        assert record_points(courier=courier, points=sent) == n
    sql = [q["sql"] for q in captured.captured_queries if "couriers_" in q["sql"]]
    assert len(sql) == 2, sql
    assert sql[0].lstrip().startswith("WITH previous") and sql[1].startswith("COPY")


@pytest.mark.django_db(transaction=True)
def test_two_posts_of_one_courier_at_once_store_each_point_once(make_courier, open_for_business):
    courier, _ = make_courier("Racer")
    start = timezone.now() - timedelta(minutes=5)
    sent = [Point(11.5, 104.9, start + timedelta(seconds=i), None) for i in range(20)]
    barrier, stored = threading.Barrier(4), []

    def post() -> None:
        barrier.wait()
        try:
            stored.append(record_points(courier=courier, points=sent))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(stored) == [0, 0, 0, 20]
    assert CourierPoint.objects.filter(courier=courier).count() == 20


def test_the_trail_is_pruned_after_its_hours(open_for_business, dara, settings):
    courier, _ = dara
    now = timezone.now()
    old = [Point(11.5, 104.9, now - timedelta(hours=30, seconds=i), None) for i in range(3, 0, -1)]
    record_points(courier=courier, points=old, now=now)
    record_points(courier=courier, points=[Point(11.5, 104.9, now, None)], now=now)
    assert prune_trail(now=now) == 3
    assert CourierPoint.objects.filter(courier=courier).count() == 1


def test_the_tracking_entry_shows_the_real_courier_while_on_the_way(
    open_for_business, alice, api, dara
):
    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("W-1"))
    now = timezone.now()
    client.post("/location", {"points": points(now - timedelta(seconds=5), 1)})
    (entry,) = api.track(["W-1"], alice.sandbox_key).json()["data"]["orders"]
    assert entry["driver"]["name"] == "Dara Sok" and entry["driver"]["vehicle"] == "motorbike"
    assert entry["driver"]["position"]["lat"] == pytest.approx(11.56)
    client.move(one.pk, to="PICKED_UP")
    client.move(one.pk, to="DELIVERED")
    (entry,) = api.track(["W-1"], alice.sandbox_key).json()["data"]["orders"]
    assert entry["driver"]["name"] == "Dara Sok" and entry["driver"]["position"] is None


def test_a_stale_position_is_not_shown(open_for_business, alice, api, dara):
    courier, client = dara
    assigned_drops(api, alice, courier, drop("W-2"))
    client.post("/location", {"points": points(timezone.now() - timedelta(minutes=3), 1)})
    (entry,) = api.track(["W-2"], alice.sandbox_key).json()["data"]["orders"]
    assert entry["driver"]["position"] is None


def test_the_eta_counts_from_the_courier_through_the_stops_before(
    open_for_business, alice, api, dara, settings
):
    from geo.geometry import haversine_km

    courier, client = dara
    first, second = assigned_drops(
        api, alice, courier,
        drop("E-1", lat=11.5600, long=104.9300), drop("E-2", lat=11.5800, long=104.9300),
    )  # fmt: skip
    order = first.order
    here = (11.5400, 104.9000)  # a few km from the pickup
    sent = [{"lat": here[0], "long": here[1], "at": iso(timezone.now())}]
    client.post("/location", {"points": sent})
    now = timezone.now()
    entries = {e["client_order_id"]: e for e in api.track(["E-1", "E-2"], alice.sandbox_key)
               .json()["data"]["orders"]}  # fmt: skip
    speed, handling = settings.COURIER_SPEED_KMH, timedelta(minutes=settings.HANDLING_MINUTES)

    def ride(a, b) -> timedelta:
        return timedelta(hours=haversine_km(*a, *b) / speed)

    pickup = (order.pickup_lat, order.pickup_long)
    stops = {d.client_order_id: (d.lat, d.long) for d in (first, second)}
    at_pickup = now + ride(here, pickup)
    reach = at_pickup + handling
    expected = {}
    previous = pickup
    in_stop_order = order.drops.order_by("stop_sequence").values_list("client_order_id", flat=True)
    assert list(in_stop_order) == ["E-1", "E-2"]  # the nearer first (orders/stops.py)
    for name in in_stop_order:
        reach += ride(previous, stops[name]) + handling
        previous = stops[name]
        expected[name] = reach
    for name, when in expected.items():
        eta = entries[name]["eta"]
        got = datetime.fromisoformat(eta["dropoff_at"])
        assert abs((got - when).total_seconds()) < 5, (name, eta, when)
        assert abs((datetime.fromisoformat(eta["pickup_at"]) - at_pickup).total_seconds()) < 5
    # Picked up: from where the courier is, straight through the stops left.
    client.move(first.pk, to="PICKED_UP")
    client.move(second.pk, to="PICKED_UP")
    client.move(first.pk, to="DELIVERED")
    (entry,) = api.track([second.client_order_id], alice.sandbox_key).json()["data"]["orders"]
    got = datetime.fromisoformat(entry["eta"]["dropoff_at"])
    want = timezone.now() + ride(here, stops[second.client_order_id]) + handling
    assert abs((got - want).total_seconds()) < 5


def test_the_recipients_page_names_the_courier_and_draws_them_where_they_are(
    open_for_business, alice, api, dara
):
    import json
    import re
    from urllib.parse import urlsplit

    from django.test import Client

    courier, client = dara
    (one,) = assigned_drops(api, alice, courier, drop("G-1"))
    client.post("/location", {"points": [{"lat": 11.5512, "long": 104.9111,
                                          "at": iso(timezone.now())}]})  # fmt: skip
    (entry,) = api.track(["G-1"], alice.sandbox_key).json()["data"]["orders"]
    page = Client().get(urlsplit(entry["tracking_url"]).path).content.decode()
    assert re.search(r'class="courier-name">Dara</span> is your courier', page)
    found = re.search(r'<script id="tracking-data" type="application/json">(.*?)</script>', page)
    assert json.loads(found[1])["courier"] == [11.5512, 104.9111]
    client.move(one.pk, to="PICKED_UP")
    client.move(one.pk, to="DELIVERED")
    page = Client().get(urlsplit(entry["tracking_url"]).path).content.decode()
    assert "is your courier" not in page
