"""The planner (docs/contract.md §21): waiting orders join couriers' runs, whole, by the
solver; each rule of a run holds in what it offers."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from couriers.models import Driver
from dispatch import planner
from dispatch.models import Offer, OfferStatus
from dispatch.offers import accept_offer, assign_by_hand, decline_offer
from dispatch.planner import plan_runs
from fleet.models import VehicleType
from orders.models import Drop, DropStatus, Order
from orders.runs import run_of, to_do
from tests.dispatch.conftest import FAR, NEAR, live_order
from tests.factories import SHOP, batch, drop, group
from tracking.services import move_drops_as_operator

# Two shops 300 m apart, and a courier between them.
NEXT_SHOP = (SHOP["lat"] + 0.0027, SHOP["long"])


def lead_of(courier) -> Offer:
    return Offer.objects.get(courier=courier, status=OfferStatus.OFFERED, lead=True)


def offered_orders(courier) -> set:
    return set(
        Offer.objects.filter(courier=courier, status=OfferStatus.OFFERED).values_list(
            "order_id", flat=True
        )
    )


def near_drop(ref: str, north: float = 0.004, **fields) -> dict:
    """A drop `north` degrees north of the shop; `fields` beside its client_order_id."""
    return {**drop(ref, lat=SHOP["lat"] + north, long=SHOP["long"] + 0.003), **fields}


def test_two_shops_orders_nearby_go_on_one_run_in_one_offer(api, shop, make_tenant, courier_near):
    other = make_tenant(name="Next Door Shop", live_balance="500.00")
    courier, _ = courier_near(NEAR, "Dara")
    first = live_order(api, shop, near_drop("A-1"))
    second = live_order(api, other, near_drop("B-1", 0.005))
    run = plan_runs()
    assert run.waiting == 2 and len(run.offers) == 1
    assert offered_orders(courier) == {first.pk, second.pk}
    lead = lead_of(courier)
    kinds = [(stop["kind"], stop["pass_order_id"]) for stop in lead.stops]
    for order in (first, second):  # each order's pickup before its drop
        assert kinds.index(("pickup", str(order.pk))) < kinds.index(("drop", str(order.pk)))
    assert lead.extra_seconds > 0


def test_an_order_stays_whole_on_one_courier(api, shop, courier_near):
    courier_near(NEAR, "Dara")
    courier_near(FAR, "Sok")
    order = live_order(api, shop, near_drop("W-1"), drop("W-2", lat=FAR[0], long=FAR[1]))
    plan_runs()
    holders = set(Offer.objects.filter(order=order).values_list("courier_id", flat=True))
    assert len(holders) == 1


def test_accepting_assigns_the_orders_and_orders_the_run_as_offered(api, shop, courier_near):
    courier, _ = courier_near(NEAR, "Dara")
    first = live_order(api, shop, near_drop("A-1"))
    second = live_order(api, shop, near_drop("A-2", 0.006))
    plan_runs()
    lead = lead_of(courier)
    accept_offer(courier=courier, offer_id=lead.bundle)
    assert set(Order.objects.filter(driver=courier).values_list("pk", flat=True)) == {
        first.pk,
        second.pk,
    }
    run = to_do(run_of(courier.pk))
    assert [(s.kind, str(s.order_id), s.drop_id and str(s.drop_id)) for s in run] == [
        (stop["kind"], stop["pass_order_id"], stop["drop_id"]) for stop in lead.stops
    ]
    run_ids = set(Order.objects.filter(driver=courier).values_list("run_id", flat=True))
    assert len(run_ids) == 1 and None not in run_ids
    # Sent again: the same answer.
    assert accept_offer(courier=courier, offer_id=lead.bundle).status == OfferStatus.ACCEPTED


def test_a_courier_with_a_run_is_offered_more_and_keeps_what_they_accepted(api, shop, courier_near):
    courier, _ = courier_near(NEAR, "Dara")
    first = live_order(api, shop, near_drop("A-1"))
    plan_runs()
    accept_offer(courier=courier, offer_id=lead_of(courier).bundle)
    ids = list(first.drops.values_list("pk", flat=True))
    move_drops_as_operator(drop_ids=ids, to=DropStatus.PICKED_UP, actor="op", driver=courier)
    second = live_order(api, shop, near_drop("A-2", 0.005))
    courier_near(FAR, "Sok")
    plan_runs()
    lead = lead_of(courier)
    assert offered_orders(courier) == {second.pk}
    # The new run holds the picked-up drop still, without a pickup for its order.
    assert {"kind": "drop", "pass_order_id": str(first.pk), "drop_id": str(ids[0])} in lead.stops
    assert {"kind": "pickup", "pass_order_id": str(first.pk), "drop_id": None} not in lead.stops
    accept_offer(courier=courier, offer_id=lead.bundle)
    assert Order.objects.get(pk=first.pk).driver_id == courier.pk


def test_the_load_on_board_never_passes_the_vehicles_max_load(api, shop, courier_near):
    VehicleType.objects.filter(code="motorbike").update(max_load_kg=Decimal("20.00"))
    courier, _ = courier_near(NEAR, "Dara")
    box = {"size": "M", "weight_kg": 12}
    heavy = [near_drop(f"H-{n}", 0.004 + n * 0.001, parcel=box) for n in range(2)]
    first = live_order(api, shop, heavy[0])
    second = live_order(api, shop, heavy[1])
    plan_runs()
    assert offered_orders(courier) == {first.pk, second.pk}
    # Both from one shop, yet never both on board: one picked up, dropped, then the other.
    on_board, most = 0, 0
    for stop in lead_of(courier).stops:
        on_board += 12 if stop["kind"] == "pickup" else -12
        most = max(most, on_board)
    assert most == 12


def test_an_order_goes_only_to_a_courier_of_its_vehicle(api, shop, courier_near):
    courier_near(NEAR, "Car Driver", vehicle="car")
    rider, _ = courier_near(FAR, "Rider")
    order = live_order(api, shop, near_drop("V-1"))
    plan_runs()
    assert set(Offer.objects.filter(order=order).values_list("courier_id", flat=True)) == {rider.pk}


def test_nothing_is_added_past_a_couriers_shift_end(api, shop, courier_near):
    ending, _ = courier_near(NEAR, "Ending")
    Driver.objects.filter(pk=ending.pk).update(shift_ends_at=timezone.now() + timedelta(minutes=2))
    live_order(api, shop, near_drop("S-1"))
    plan_runs()
    assert offered_orders(ending) == set()
    Driver.objects.filter(pk=ending.pk).update(shift_ends_at=timezone.now() + timedelta(hours=2))
    plan_runs()
    assert len(offered_orders(ending)) == 1


def test_an_idle_courier_takes_an_order_longer_than_the_runs_horizon(
    api, shop, courier_near, settings
):
    """The horizon bounds what a run gains, not one order alone: else it waits for ever."""
    settings.RUN_HORIZON_MINUTES = 5  # the order alone is some 30 minutes
    courier, _ = courier_near(NEAR, "Idle")
    order = live_order(api, shop, drop("H-1", lat=FAR[0], long=FAR[1]))
    plan_runs()
    assert offered_orders(courier) == {order.pk}
    assert lead_of(courier).extra_seconds > 5 * 60


def test_a_courier_with_a_run_gains_nothing_past_the_runs_horizon(
    api, shop, courier_near, settings
):
    settings.HANDLING_MINUTES = 2
    courier, _ = courier_near(NEAR, "Busy")
    first = live_order(api, shop, near_drop("R-1"))
    plan_runs()
    accept_offer(courier=courier, offer_id=lead_of(courier).bundle)
    # Some 13 minutes by itself (3 km away): within the horizon alone, not after the run.
    settings.RUN_HORIZON_MINUTES = 15
    live_order(api, shop, drop("R-2", lat=SHOP["lat"] + 0.027, long=SHOP["long"]))
    plan_runs()
    assert offered_orders(courier) == set()
    assert Order.objects.get(pk=first.pk).driver_id == courier.pk


def test_a_run_gains_an_order_longer_than_the_horizon_by_itself(api, shop, courier_near, settings):
    courier, _ = courier_near(NEAR, "Busy")
    live_order(api, shop, near_drop("G-1"))
    plan_runs()
    accept_offer(courier=courier, offer_id=lead_of(courier).bundle)
    settings.RUN_HORIZON_MINUTES = 5  # every order is longer by itself
    long = live_order(api, shop, drop("G-2", lat=FAR[0], long=FAR[1]))
    plan_runs()
    assert offered_orders(courier) == {long.pk}


def test_an_idle_couriers_long_order_still_ends_within_their_shift(
    api, shop, courier_near, settings
):
    settings.RUN_HORIZON_MINUTES = 5
    courier, _ = courier_near(NEAR, "Ending")
    Driver.objects.filter(pk=courier.pk).update(
        shift_ends_at=timezone.now() + timedelta(minutes=10)
    )
    live_order(api, shop, drop("E-1", lat=FAR[0], long=FAR[1]))
    plan_runs()
    assert offered_orders(courier) == set()


def test_a_declined_order_is_never_offered_to_that_courier_again(api, shop, courier_near):
    first, _ = courier_near(NEAR, "First")
    order = live_order(api, shop, near_drop("D-1"))
    plan_runs()
    decline_offer(courier=first, offer_id=lead_of(first).bundle)
    plan_runs()
    assert not Offer.objects.filter(order=order, status=OfferStatus.OFFERED).exists()
    second, _ = courier_near(FAR, "Second")
    plan_runs()
    assert offered_orders(second) == {order.pk}
    assert offered_orders(first) == set()


def test_a_window_that_can_no_longer_be_met_still_gets_a_courier(
    api, shop, courier_near, open_for_business
):
    now = timezone.now()
    window = {"start": now.isoformat(), "end": (now + timedelta(minutes=45)).isoformat()}
    order = live_order(api, shop, near_drop("L-1", dropoff_window=window))
    open_for_business.move_to(now + timedelta(hours=2))  # nobody took it in time
    courier, _ = courier_near(FAR, "Far")
    plan_runs()
    assert offered_orders(courier) == {order.pk}


def test_hand_assignment_inserts_the_order_where_it_costs_least(api, shop, courier_near):
    courier, _ = courier_near(NEAR, "Dara")
    far_order = live_order(api, shop, drop("F-1", lat=FAR[0], long=FAR[1]))
    plan_runs()
    accept_offer(courier=courier, offer_id=lead_of(courier).bundle)
    on_the_way = live_order(api, shop, near_drop("M-1", 0.01))
    Offer.objects.filter(order=on_the_way).delete()
    assign_by_hand(order=on_the_way, courier=courier, actor="operator:1")
    kinds = [(s.kind, s.order_id) for s in to_do(run_of(courier.pk))]
    # Both picked up at the shop before riding north: the nearer drop first.
    assert kinds == [
        ("pickup", far_order.pk),
        ("pickup", on_the_way.pk),
        ("drop", on_the_way.pk),
        ("drop", far_order.pk),
    ] or kinds == [
        ("pickup", on_the_way.pk),
        ("pickup", far_order.pk),
        ("drop", on_the_way.pk),
        ("drop", far_order.pk),
    ]
    assert Drop.objects.filter(order=on_the_way, status=DropStatus.ASSIGNED).count() == 1


def test_an_offer_expires_whole_and_its_orders_are_planned_again(
    api, shop, courier_near, open_for_business
):
    first, _ = courier_near(NEAR, "First")
    orders = {
        live_order(api, shop, near_drop("E-1")).pk,
        live_order(api, shop, near_drop("E-2")).pk,
    }
    plan_runs()
    assert offered_orders(first) == orders
    open_for_business.move_to(timezone.now() + timedelta(seconds=61))
    second, _ = courier_near(FAR, "Second")
    from tests.dispatch.conftest import online_at

    online_at(first, NEAR)  # still there, a fresh position
    run = plan_runs()
    assert run.expired == 2  # both rows of the one offer
    assert set(Offer.objects.filter(courier=first).values_list("status", flat=True)) == {
        OfferStatus.EXPIRED
    }
    assert offered_orders(second) == orders  # never to the first again


def test_what_a_courier_accepted_is_never_planned_onto_another(api, shop, courier_near):
    holder, _ = courier_near(FAR, "Holder")
    kept = live_order(api, shop, near_drop("K-1"))
    plan_runs()
    accept_offer(courier=holder, offer_id=lead_of(holder).bundle)
    nearer, _ = courier_near(NEAR, "Nearer")  # much closer to the accepted order's pickup
    more = live_order(api, shop, near_drop("K-2", 0.0045))
    plan_runs()
    assert Order.objects.get(pk=kept.pk).driver_id == holder.pk
    offered = Offer.objects.filter(status=OfferStatus.OFFERED)
    assert set(offered.values_list("order_id", flat=True)) == {more.pk}
    for lead in offered.filter(lead=True):
        if lead.courier_id != holder.pk:
            assert str(kept.pk) not in {stop["pass_order_id"] for stop in lead.stops}
    assert kept.pk in {stop.order_id for stop in to_do(run_of(holder.pk))}
    assert nearer.pk  # the nearer courier exists and was a candidate


def test_a_plan_made_while_the_courier_moves_a_stop_is_accepted_into_a_consistent_run(
    api, shop, courier_near
):
    courier, client = courier_near(NEAR, "Dara")
    carried = live_order(api, shop, near_drop("C-1"))
    plan_runs()
    accept_offer(courier=courier, offer_id=lead_of(courier).bundle)
    live_order(api, shop, near_drop("C-2", 0.005))
    plan_runs()  # the plan holds the carried order's pickup, still to do when it was made
    lead = lead_of(courier)
    assert {"kind": "pickup", "pass_order_id": str(carried.pk), "drop_id": None} in lead.stops
    drop_id = carried.drops.get().pk
    moved = client.post(f"/drops/{drop_id}/move", {"to": "PICKED_UP"})
    assert moved.status_code == 200, moved.content
    answer = client.post(f"/offers/{lead.bundle}/accept", {})
    assert answer.status_code == 200, answer.content
    stops = answer.json()["data"]["route"]["stops"]
    pickup = next(
        s for s in stops if s["kind"] == "pickup" and s["pass_order_id"] == str(carried.pk)
    )
    assert pickup["done"] and pickup["status"] == "PICKED_UP"
    positions = [stop.position for stop in to_do(run_of(courier.pk))]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert [s["stop_number"] for s in stops] == list(range(1, len(stops) + 1))


def test_a_shift_end_set_through_the_courier_api_stops_an_addition(api, shop, courier_near):
    ending, client = courier_near(NEAR, "Ending")
    soon = (timezone.now() + timedelta(minutes=2)).isoformat()
    answer = client.post("/status", {"online": True, "shift_ends_at": soon})
    assert answer.status_code == 200, answer.content
    live_order(api, shop, near_drop("A-1"))
    plan_runs()
    assert offered_orders(ending) == set()
    later = (timezone.now() + timedelta(hours=2)).isoformat()
    assert client.post("/status", {"online": True, "shift_ends_at": later}).status_code == 200
    plan_runs()
    assert len(offered_orders(ending)) == 1


def test_a_planning_run_past_its_time_limit_still_offers_what_it_planned(
    api, shop, make_tenant, courier_near, settings
):
    """The time limit ends the retries, never the offers of what the search chose: a run that
    only searched would offer nothing, and the orders left waiting would grow the next search
    (a backlog that never drains)."""
    settings.PLAN_TIME_LIMIT_SECONDS = 0.001  # the search alone (0.2 s at least) outlasts it
    courier, _ = courier_near(NEAR, "Dara")
    other, _ = courier_near(FAR, "Sok")
    orders = {live_order(api, shop, near_drop(f"L-{n}", 0.004 + n * 0.001)).pk for n in range(3)}
    run = plan_runs()
    assert run.waiting == 3 and run.offers
    assert offered_orders(courier) | offered_orders(other) == orders


def test_a_busy_planning_run_ends_near_its_time_limit(
    api, shop, courier_near, settings, monkeypatch
):
    """A run with work for every courier searches for its share of PLAN_TIME_LIMIT_SECONDS and
    ends soon after, offering what it found: a search, retry or sequencing that ignored the
    limit would hold the planning slot for many times it."""
    settings.PLAN_TIME_LIMIT_SECONDS = 1
    monkeypatch.setattr(planner, "PLAN_STALL_ITERATIONS", 10**9)  # no early end
    for n in range(6):
        courier_near((NEAR[0] + n * 0.004, NEAR[1] + (n % 2) * 0.004), f"Courier {n}")
    groups = [
        group(
            near_drop(f"T-{n}-a", 0.003 + (n % 6) * 0.003),
            near_drop(f"T-{n}-b", 0.005 + (n % 4) * 0.003),
        )
        for n in range(18)
    ]
    answer = api.bulk(batch(*groups), shop.live_key)
    assert answer.status_code == 200, answer.content
    run = plan_runs()
    assert run.waiting == 18 and run.candidates == 6 and run.offers
    assert run.seconds < settings.PLAN_TIME_LIMIT_SECONDS + 4
