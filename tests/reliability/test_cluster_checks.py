"""The cluster run's dispatch invariants (bench/couriers_sim.py, docs/performance.md) read the
database as it is: each one passes on a run that kept it and fails on the breach it names.
The breaches are written here by hand (a courier's order given to another, a hand
assignment, an offer of an order another courier holds), as the real run never makes them."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.utils import timezone

from bench.couriers_sim import UNSERVED, Fleet, check_dispatch
from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from orders.models import DeliveryEvent, DropStatus, Order
from tests.couriers.conftest import make_courier  # noqa: F401 (fixture)
from tests.dispatch.conftest import FAR, NEAR, courier_near, live_order, shop  # noqa: F401
from tracking.services import move_drops_as_operator


class Db:
    """The test's connection, read as bench/cluster.py reads its psycopg one."""

    def execute(self, sql: str, params=None):
        cursor = connection.cursor()
        cursor.execute(sql, params)
        return cursor


def checks() -> dict[str, tuple[bool, str]]:
    db = Db()
    unserved = db.execute(UNSERVED).fetchone()[0]
    return {
        name: (ok, detail) for name, ok, detail in check_dispatch(db, Fleet("", 0, 0), unserved, 0)
    }


def taken_and_delivered(api, shop, client, courier) -> Order:  # noqa: F811
    """A live order offered to `courier`, accepted and delivered through the courier API."""
    order = live_order(api, shop)
    [offer] = dispatch_waiting().offers
    assert offer.courier_id == courier.pk
    accepted = client.post(f"/offers/{offer.pk}/accept", {})
    assert accepted.status_code == 200, accepted.content
    for stop in accepted.json()["data"]["route"]["stops"]:
        if stop["kind"] == "drop":
            assert client.move(stop["drop_id"], to="PICKED_UP").status_code == 200
            assert client.move(stop["drop_id"], to="DELIVERED").status_code == 200
    return order


ASSIGNED_ONCE = "no order assigned twice"
NO_OFFER_OF_HELD = "no offer of an order another courier holds"
SERVED = "every waiting live order assigned, offered or flagged"
DELIVERED = "couriers delivered, with no 5xx but the documented 503"


def test_a_run_that_kept_them_passes_every_check(api, shop, courier_near):  # noqa: F811
    courier, client = courier_near(NEAR, "Rider")
    taken_and_delivered(api, shop, client, courier)
    found = checks()
    assert all(ok for ok, _ in found.values()), found
    assert "1 orders (2 drops) delivered by couriers" in found[DELIVERED][1]
    assert "accepted 1" in found[DELIVERED][1]


def test_nothing_delivered_fails_the_run(db):
    assert checks()[DELIVERED][0] is False


def test_an_order_whose_courier_is_not_its_accepted_offers_fails(api, shop, courier_near):  # noqa: F811
    courier, client = courier_near(NEAR, "Rider")
    other, _ = courier_near(NEAR, "Other")
    order = taken_and_delivered(api, shop, client, courier)
    Order.objects.filter(pk=order.pk).update(driver=other)
    ok, detail = checks()[ASSIGNED_ONCE]
    assert not ok and "1 whose courier is not their accepted offer's" in detail


def test_a_drop_assigned_by_two_couriers_fails(api, shop, courier_near):  # noqa: F811
    courier, client = courier_near(NEAR, "Rider")
    order = taken_and_delivered(api, shop, client, courier)
    first = order.drops.first()
    DeliveryEvent.objects.create(
        drop=first, status=DropStatus.ASSIGNED, at=timezone.now(), actor="courier:99999"
    )
    ok, detail = checks()[ASSIGNED_ONCE]
    assert not ok and "1 drops assigned by two couriers" in detail


def test_an_order_assigned_without_an_accepted_offer_fails(api, shop, courier_near):  # noqa: F811
    courier, _ = courier_near(NEAR, "Rider")
    order = live_order(api, shop)
    ids = list(order.drops.values_list("pk", flat=True))
    move_drops_as_operator(drop_ids=ids, to=DropStatus.ASSIGNED, actor="op", driver=courier)
    ok, detail = checks()[ASSIGNED_ONCE]
    assert not ok and "1 assigned with no accepted offer" in detail


def test_an_offer_of_an_order_another_courier_holds_fails_past_the_grace(api, shop, courier_near):  # noqa: F811
    courier, client = courier_near(NEAR, "Rider")
    other, _ = courier_near(FAR, "Other")
    held = live_order(api, shop)
    [offer] = dispatch_waiting().offers
    assert client.post(f"/offers/{offer.pk}/accept", {}).status_code == 200
    late = timezone.now() + timedelta(seconds=1)
    Offer.objects.create(
        order=held, courier=other, status=OfferStatus.DECLINED, created_at=late,
        expires_at=late + timedelta(seconds=60), answered_at=late,
    )  # fmt: skip
    ok, detail = checks()[NO_OFFER_OF_HELD]
    assert not ok and "1 of an order another courier held" in detail  # still held
    for stop in client.get("/route").json()["data"]["route"]["stops"]:
        if stop["kind"] == "drop":
            client.move(stop["drop_id"], to="PICKED_UP")
            client.move(stop["drop_id"], to="DELIVERED")
    events = DeliveryEvent.objects.filter(drop__order=held, status=DropStatus.DELIVERED)
    events.update(at=late + timedelta(seconds=2))  # ended within the grace: sound
    assert checks()[NO_OFFER_OF_HELD][0] is True
    events.update(at=late + timedelta(seconds=8))  # held 8 s after the offer: a breach
    assert checks()[NO_OFFER_OF_HELD][0] is False


def test_a_waiting_order_with_no_offer_and_no_flag_fails(api, shop, courier_near):  # noqa: F811
    order = live_order(api, shop)  # nobody online: no offer
    ok, detail = checks()[SERVED]
    assert not ok and detail.startswith("1 live orders waiting")
    Order.objects.filter(pk=order.pk).update(dispatch_flagged_at=timezone.now())
    assert checks()[SERVED][0] is True  # flagged: an operator sees it
    Order.objects.filter(pk=order.pk).update(dispatch_flagged_at=None)
    courier_near(NEAR, "Rider")
    dispatch_waiting()
    assert checks()[SERVED][0] is True  # offered


def test_a_courier_call_answered_500_or_undocumented_fails(api, shop, courier_near):  # noqa: F811
    courier, client = courier_near(NEAR, "Rider")
    taken_and_delivered(api, shop, client, courier)
    db, fleet = Db(), Fleet("", 0, 0)
    fleet.tally.statuses.update({"offer 200": 5, "accept 409": 1, "move 503": 2, "route 0": 1})
    assert check_dispatch(db, fleet, 0, 0)[3][1] is True  # faults, retried: documented
    for answer in ("move 500", "location 400"):
        fleet.tally.statuses[answer] += 1
        ok, detail = check_dispatch(db, fleet, 0, 0)[3][1:]
        assert not ok and f"'{answer}': 1" in detail
        del fleet.tally.statuses[answer]
