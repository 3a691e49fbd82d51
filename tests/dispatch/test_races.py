"""Dispatch under concurrency, on PostgreSQL with real threads and real db_worker processes
(docs/contract.md §21): two dispatcher runs at once, an accept racing the expiry, a cancel
racing an accept, two couriers accepting at once; and the constraints that stand behind them.

Where the interleaving matters, a transaction held open on one thread makes the others
overlap it for certain; where any interleaving must do, the race is run many times.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from dispatch.dispatcher import dispatch_waiting, lock_candidates, lock_waiting_orders, waiting_of
from dispatch.models import Offer, OfferStatus
from dispatch.offers import OfferGone, accept_offer
from dispatch.tasks import dispatch_orders
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.dispatch.conftest import FAR, NEAR, live_order
from tests.helpers import in_own_connection
from tests.reliability.batch_hold import open_all_day
from tests.workers import db_worker, wait_for_task
from tracking.services import cancel_drops_as_operator

pytestmark = pytest.mark.django_db(transaction=True)
S = DropStatus
WAIT = 30


def together(*works):
    """Run each work on its own thread (and database connection), released at once."""
    barrier = threading.Barrier(len(works))

    def one(work):
        def run():
            barrier.wait(WAIT)
            try:
                return ("ok", work())
            except Exception as exc:  # the outcome is what the test reads
                return ("raised", exc)

        return in_own_connection(run)

    with ThreadPoolExecutor(max_workers=len(works)) as pool:
        return [f.result(timeout=WAIT * 2) for f in [pool.submit(one, w) for w in works]]


def test_the_database_refuses_a_second_holder_a_second_open_offer_and_a_repeat(
    api, shop, courier_near
):
    dara, _ = courier_near(NEAR, "Dara")
    sophea, _ = courier_near(FAR, "Sophea")
    first, second, third = (live_order(api, shop) for _ in range(3))
    now = timezone.now()

    def offer(order, courier, status=OfferStatus.OFFERED):
        with transaction.atomic():
            Offer.objects.create(
                order=order, courier=courier, status=status, created_at=now, expires_at=now
            )

    offer(first, dara, OfferStatus.ACCEPTED)
    with pytest.raises(IntegrityError, match="offer_one_holder_per_order"):
        offer(first, sophea)  # an order held by one courier at a time
    offer(second, sophea)
    with pytest.raises(IntegrityError, match="offer_one_open_per_courier"):
        offer(third, sophea)  # a courier holds one open offer
    Offer.objects.filter(order=second).update(status=OfferStatus.DECLINED)
    with pytest.raises(IntegrityError, match="offer_once_per_courier"):
        offer(second, sophea)  # never twice to the same courier


def test_a_run_that_finds_the_queue_locked_skips_it_instead_of_waiting(api, shop, courier_near):
    for place in (NEAR, FAR):
        courier_near(place)
    orders = [live_order(api, shop) for _ in range(4)]
    holding, release = threading.Event(), threading.Event()

    def held_run():
        with transaction.atomic():
            taken = lock_waiting_orders(2)  # the two oldest, and their drops
            lock_candidates(waiting_of(taken), timezone.now())  # and both couriers
            holding.set()
            assert release.wait(WAIT)
        return [o.pk for o in taken]

    with ThreadPoolExecutor(max_workers=1) as pool:
        held = pool.submit(in_own_connection, held_run)
        assert holding.wait(WAIT)
        started = time.monotonic()
        run = dispatch_waiting()
        took = time.monotonic() - started
        release.set()
        taken = held.result(WAIT)
    assert taken == [o.pk for o in orders[:2]]
    # The other run took the two orders nobody held, found no courier free to lock, made no
    # offer, and did not wait for the held transaction (it is still open meanwhile).
    assert run.waiting == 2 and run.candidates == 0 and run.offers == []
    assert took < 5
    assert Offer.objects.count() == 0


def test_concurrent_runs_on_threads_never_offer_twice(api, shop, courier_near):
    couriers = [courier_near((NEAR[0] + i * 0.001, NEAR[1]), f"C{i}")[0] for i in range(6)]
    orders = [live_order(api, shop) for _ in range(9)]
    for _ in range(3):
        outcomes = together(*[dispatch_waiting] * 4)
        assert all(kind == "ok" for kind, _ in outcomes), outcomes
    offers = list(Offer.objects.values_list("order_id", "courier_id", "status"))
    assert len(offers) == 6  # every courier offered one order, no order to two
    assert len({o for o, _, _ in offers}) == 6 and len({c for _, c, _ in offers}) == 6
    assert {c for _, c, _ in offers} == {c.pk for c in couriers}
    assert {o for o, _, _ in offers} <= {o.pk for o in orders}


def test_concurrent_planning_runs_on_threads_never_offer_twice(api, shop, courier_near):
    from dispatch.planner import plan_runs

    couriers = [courier_near((NEAR[0] + i * 0.01, NEAR[1]), f"C{i}")[0] for i in range(4)]
    orders = [live_order(api, shop) for _ in range(8)]
    for _ in range(2):
        outcomes = together(*[plan_runs] * 3)
        assert all(kind == "ok" for kind, _ in outcomes), outcomes
    offers = list(Offer.objects.values_list("order_id", "courier_id", "bundle"))
    assert len({o for o, _, _ in offers}) == len(offers)  # no order on two offers
    assert {o for o, _, _ in offers} == {o.pk for o in orders}  # and every one offered
    per_courier = {(c, bundle) for _, c, bundle in offers}
    assert len({c for c, _ in per_courier}) == len(per_courier)  # one offer per courier
    assert {c for c, _ in per_courier} <= {c.pk for c in couriers}


@pytest.fixture
def shop_on_the_real_clock(make_tenant):
    """The workers run on the real clock, not the test's time machine: the demo area open
    all day, so a batch is taken at any hour, and positions stamped with the real now."""
    open_all_day()
    return make_tenant(name="Real Clock Shop", live_balance="500.00")


def test_concurrent_runs_in_db_worker_processes_never_offer_twice(
    api, shop_on_the_real_clock, courier_near
):
    for i in range(12):
        courier_near((NEAR[0] + i * 0.001, NEAR[1]), f"C{i}")
    for _ in range(20):
        live_order(api, shop_on_the_real_clock)
    results = [dispatch_orders.enqueue() for _ in range(6)]
    with db_worker() as one, db_worker() as two:
        finished = [wait_for_task(result.id) for result in results]
        assert one.alive and two.alive
    assert {f.status for f in finished} == {"SUCCESSFUL"}, [f.traceback for f in finished]
    offers = list(Offer.objects.values_list("order_id", "courier_id", "lead"))
    # The planner puts several orders on one run: every order on one offer at most, every
    # courier holding one offer at most (what a run cannot take within its horizon waits).
    assert len({o for o, _, _ in offers}) == len(offers) > 0
    leads = [c for _, c, lead in offers if lead]
    assert len(leads) == len(set(leads)) == sum(f.return_value for f in finished)
    bundles = Offer.objects.values_list("courier_id", "bundle").distinct()
    assert len(bundles) == len(leads)  # one offer per courier, whatever its rows


def test_an_accept_racing_the_expiry_has_one_outcome(api, shop, courier_near):
    dara, _ = courier_near(NEAR, "Dara")
    for attempt in range(8):
        order = live_order(api, shop)
        dispatch_waiting()
        offer = Offer.objects.get(order=order, courier=dara)
        after_expiry = offer.expires_at + timedelta(seconds=1)
        accepted, expired = together(
            lambda o=offer: accept_offer(courier=dara, offer_id=o.pk),
            lambda t=after_expiry: dispatch_waiting(now=t).expired,
        )
        offer.refresh_from_db()
        statuses = set(order.drops.values_list("status", flat=True))
        if offer.status == OfferStatus.ACCEPTED:
            assert accepted[0] == "ok" and expired == ("ok", 0)
            assert statuses == {S.ASSIGNED}
            cancel_drops_as_operator(
                drop_ids=list(order.drops.values_list("pk", flat=True)), actor="op"
            )  # free dara for the next attempt
        else:
            assert offer.status == OfferStatus.EXPIRED, attempt
            assert accepted[0] == "raised" and isinstance(accepted[1], OfferGone)
            assert expired == ("ok", 1) and statuses == {S.PENDING}
            Order.objects.filter(pk=order.pk).update(dispatch_closed=True)
        Offer.objects.filter(order=order).delete()


def test_a_cancel_racing_an_accept_leaves_a_legal_history(api, shop, courier_near):
    dara, _ = courier_near(NEAR, "Dara")
    outcomes = set()
    for _ in range(8):
        order = live_order(api, shop)
        dispatch_waiting()
        offer = Offer.objects.get(order=order, courier=dara)
        ids = list(order.drops.values_list("pk", flat=True))
        accepted, cancelled = together(
            lambda o=offer: accept_offer(courier=dara, offer_id=o.pk),
            lambda i=ids: cancel_drops_as_operator(drop_ids=i, actor="op"),
        )
        assert cancelled[0] == "ok"
        assert set(Drop.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
            S.CANCELLED
        }
        offer.refresh_from_db()
        order.refresh_from_db()
        history = [
            list(DeliveryEvent.objects.filter(drop_id=i).order_by("at", "id").values_list(
                "status", flat=True
            ))
            for i in ids
        ]  # fmt: skip
        if offer.status == OfferStatus.ACCEPTED:  # the accept went first
            outcomes.add("accepted")
            assert accepted[0] == "ok" and order.driver_id == dara.pk
            assert all(h == [S.ASSIGNED, S.CANCELLED] for h in history), history
        else:  # the cancel went first: nothing to accept
            outcomes.add("gone")
            assert accepted[0] == "raised" and isinstance(accepted[1], OfferGone)
            assert offer.status == OfferStatus.OFFERED and order.driver_id is None
            assert all(h == [S.CANCELLED] for h in history), history
        Offer.objects.filter(order=order).delete()
        Order.objects.filter(pk=order.pk).update(dispatch_closed=True)
    assert outcomes  # at least one interleaving seen; each is checked above


def test_two_couriers_accepting_at_once_one_wins(api, shop, courier_near):
    """Dara's offer ran out and went to Sophea; Dara's late tap and Sophea's land together."""
    dara, dara_client = courier_near(NEAR, "Dara")
    sophea, sophea_client = courier_near(FAR, "Sophea")
    order = live_order(api, shop)
    dispatch_waiting()
    late = Offer.objects.get(order=order, courier=dara)
    Offer.objects.filter(pk=late.pk).update(expires_at=timezone.now())
    dispatch_waiting()
    current = Offer.objects.get(order=order, courier=sophea, status=OfferStatus.OFFERED)
    answers = together(
        lambda: dara_client.post(f"/offers/{late.pk}/accept", {}).status_code,
        lambda: sophea_client.post(f"/offers/{current.pk}/accept", {}).status_code,
    )
    assert answers == [("ok", 409), ("ok", 200)]
    order.refresh_from_db()
    assert order.driver_id == sophea.pk
    assert connection.vendor == "postgresql"


def run_positions(courier) -> list[int]:
    """The run positions of the courier's stops to do, in order."""
    from orders.runs import run_of, to_do

    return [stop.position for stop in to_do(run_of(courier.pk))]


def test_two_hand_assignments_of_one_courier_at_once_give_them_one_run(api, shop, courier_near):
    from dispatch.offers import assign_by_hand

    dara, _ = courier_near(NEAR, "Dara")
    for _ in range(5):
        first, second = live_order(api, shop), live_order(api, shop)
        outcomes = together(
            lambda o=first: assign_by_hand(order=o, courier=dara, actor="op 1"),
            lambda o=second: assign_by_hand(order=o, courier=dara, actor="op 2"),
        )
        assert [kind for kind, _ in outcomes] == ["ok", "ok"], outcomes
        held = Order.objects.filter(driver=dara, pk__in=[first.pk, second.pk])
        assert held.count() == 2
        # The second saw the first's run (the courier's row lock): one order of six stops.
        assert run_positions(dara) == [1, 2, 3, 4, 5, 6]
        cancel_drops_as_operator(
            drop_ids=list(Drop.objects.filter(order__driver=dara).values_list("pk", flat=True)),
            actor="op",
        )  # free dara for the next round
        Order.objects.filter(pk__in=[first.pk, second.pk]).update(dispatch_closed=True)


def test_an_offer_accepted_after_an_order_given_by_hand_keeps_both_on_the_run(
    api, shop, courier_near
):
    from dispatch.offers import assign_by_hand

    dara, client = courier_near(NEAR, "Dara")
    offered = live_order(api, shop)
    dispatch_waiting()
    offer = Offer.objects.get(order=offered, courier=dara)
    by_hand = live_order(api, shop)
    assign_by_hand(order=by_hand, courier=dara, actor="op")
    answer = client.post(f"/offers/{offer.pk}/accept", {})
    assert answer.status_code == 200, answer.content
    stops = answer.json()["data"]["route"]["stops"]
    assert {stop["pass_order_id"] for stop in stops} == {str(offered.pk), str(by_hand.pk)}
    assert run_positions(dara) == [1, 2, 3, 4, 5, 6]


def test_a_hand_assignment_refuses_another_vehicle(api, shop, courier_near):
    from dispatch.offers import assign_by_hand
    from tracking.services import DriverRefused

    car, _ = courier_near(NEAR, "Car", vehicle="car")
    order = live_order(api, shop)  # a motorbike order
    with pytest.raises(DriverRefused, match="this order needs a motorbike"):
        assign_by_hand(order=order, courier=car, actor="op")
    assert set(order.drops.values_list("status", flat=True)) == {S.PENDING}


def test_a_planning_run_racing_a_couriers_move_leaves_a_consistent_run(api, shop, courier_near):
    from dispatch.planner import plan_runs
    from tracking.services import move_drops_as_operator

    dara, _ = courier_near(NEAR, "Dara")
    for round_ in range(4):
        carried = live_order(api, shop)
        from dispatch.offers import assign_by_hand

        assign_by_hand(order=carried, courier=dara, actor="op")
        waiting = live_order(api, shop)
        ids = list(carried.drops.values_list("pk", flat=True))
        outcomes = together(
            plan_runs,
            lambda ids=ids: move_drops_as_operator(
                drop_ids=ids, to=S.PICKED_UP, actor=f"courier:{dara.pk}", driver=dara
            ),
        )
        assert [kind for kind, _ in outcomes] == ["ok", "ok"], outcomes
        lead = Offer.objects.filter(courier=dara, status=OfferStatus.OFFERED, lead=True).first()
        if lead is not None:  # the planner saw the courier: its offer is accepted
            accept_offer(courier=dara, offer_id=lead.bundle)
        else:  # the move held the drops' locks first: the order waits for the next run
            assert Order.objects.get(pk=waiting.pk).driver_id is None
        positions = run_positions(dara)
        assert len(set(positions)) == len(positions), (round_, positions)
        assert set(Drop.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
            S.PICKED_UP
        }
        cancel_drops_as_operator(
            drop_ids=list(Drop.objects.filter(order__driver=dara, status=S.ASSIGNED)
                          .values_list("pk", flat=True)), actor="op",
        )  # fmt: skip
        Drop.objects.filter(order__driver=dara, status=S.PICKED_UP).update(status=S.DELIVERED)
        Order.objects.exclude(driver=dara).update(dispatch_closed=True)
