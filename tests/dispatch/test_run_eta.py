"""The ETA through the run (docs/contract.md §21): a drop's ETA counts every stop before it
on its courier's run, other orders' (and other businesses') included, and follows the run's
order when it changes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from couriers.services import Point, record_points
from dispatch.offers import assign_by_hand
from geo.geometry import haversine_km
from orders.runs import DROP, PICKUP, run_of, to_do, write_run_order
from tests.dispatch.conftest import NEAR, live_order
from tests.factories import SHOP, drop


def dropoff_at(api, tenant, ref: str) -> datetime:
    (entry,) = api.track([ref], tenant.live_key).json()["data"]["orders"]
    return datetime.fromisoformat(entry["eta"]["dropoff_at"])


def test_a_drops_eta_counts_the_stops_of_other_orders_before_it(
    api, shop, make_tenant, courier_near, settings
):
    other = make_tenant(name="Other Shop", live_balance="500.00")
    courier, _ = courier_near(NEAR, "Dara")
    north = (SHOP["lat"] + 0.03, SHOP["long"])  # ~3.3 km from the shop
    mine = live_order(api, shop, drop("MINE", lat=north[0], long=north[1]))
    theirs = live_order(api, other, drop("THEIRS", lat=north[0] + 0.002, long=north[1]))
    assign_by_hand(order=mine, courier=courier, actor="op")
    assign_by_hand(order=theirs, courier=courier, actor="op")
    record_points(courier=courier, points=[Point(*NEAR, timezone.now())])
    mine_drop, theirs_drop = mine.drops.get(), theirs.drops.get()
    # Both pickups, then the other shop's drop, then this shop's.
    write_run_order(
        courier.pk,
        [
            (PICKUP, mine.pk, None),
            (PICKUP, theirs.pk, None),
            (DROP, theirs.pk, theirs_drop.pk),
            (DROP, mine.pk, mine_drop.pk),
        ],
    )
    speed = settings.COURIER_SPEED_KMH
    handling = timedelta(minutes=settings.HANDLING_MINUTES)
    between = timedelta(hours=haversine_km(*north, theirs_drop.lat, theirs_drop.long) / speed)
    late = dropoff_at(api, shop, "MINE")
    # Counted through the other shop's drop: its ride there and back, and its handling.
    alone = dropoff_at(api, other, "THEIRS") + between + handling
    assert abs((late - alone).total_seconds()) < 5
    # The run reordered: this shop's drop first, and its ETA earlier by that stop.
    write_run_order(
        courier.pk,
        [
            (PICKUP, mine.pk, None),
            (PICKUP, theirs.pk, None),
            (DROP, mine.pk, mine_drop.pk),
            (DROP, theirs.pk, theirs_drop.pk),
        ],
    )
    assert [s.kind for s in to_do(run_of(courier.pk))] == [PICKUP, PICKUP, DROP, DROP]
    early = dropoff_at(api, shop, "MINE")
    assert late - early > handling
    assert dropoff_at(api, other, "THEIRS") > early


def test_a_window_turns_at_risk_when_the_run_grows_before_its_drop(api, shop, courier_near):
    from events.models import Event, EventType
    from orders.models import Drop
    from orders.windows import AT_RISK, ON_TRACK

    courier, _ = courier_near(NEAR, "Dara")
    far = (SHOP["lat"] + 0.04, SHOP["long"])  # ~4.4 km north
    now = timezone.now()
    window = {"start": now.isoformat(), "end": (now + timedelta(minutes=36)).isoformat()}
    promised = live_order(
        api, shop, {**drop("P-1", lat=far[0], long=far[1]), "dropoff_window": window}
    )
    assign_by_hand(order=promised, courier=courier, actor="op")
    watched = Drop.objects.get(order=promised)
    assert watched.window_status == ON_TRACK
    # Two more orders on the way there: their pickups and drops come before its drop.
    for n, north in enumerate((0.01, 0.02)):
        on_the_way = (SHOP["lat"] + north, SHOP["long"])
        order = live_order(api, shop, drop(f"W-{n}", lat=on_the_way[0], long=on_the_way[1]))
        assign_by_hand(order=order, courier=courier, actor="op")
    stops = to_do(run_of(courier.pk))
    assert stops[-1].drop_id == watched.pk  # the promised drop last
    watched.refresh_from_db()
    assert watched.window_status == AT_RISK
    alerts = Event.objects.filter(type=EventType.ORDER_WINDOW_AT_RISK, business=shop.business)
    assert [e.data["drop_id"] for e in alerts] == [str(watched.pk)]
