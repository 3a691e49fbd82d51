"""An operator takes an order back from its courier before pickup (docs/operator.md "Taking an
order back", docs/dispatch.md): its assigned drops wait again, the courier hears of it, and
the dispatcher offers it to someone else, never straight back to them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch.dispatcher import dispatch_waiting
from dispatch.models import Offer, OfferStatus
from dispatch.offers import TakeBackRefused, take_back_order
from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.couriers.conftest import assigned_drops
from tests.dispatch.conftest import FAR, NEAR, live_order
from tests.factories import drop
from tests.tracking.helpers import assert_legal_history, history_of
from tracking.lifecycle import apply_moves, step_from
from tracking.services import move_drops_as_operator

S = DropStatus
OPERATOR = "operator alice"


def offers_of(order: Order) -> list[tuple[int, str]]:
    return list(Offer.objects.filter(order=order).order_by("created_at", "pk").values_list(
        "courier_id", "status"))  # fmt: skip


@pytest.fixture
def accepted(api, shop, courier_near):
    """An order Dara (nearest) accepted, with Sophea online farther away and free."""
    dara, dara_client = courier_near(NEAR, "Dara Sok")
    sophea, sophea_client = courier_near(FAR, "Sophea Chan")
    order = live_order(api, shop)
    dispatch_waiting()
    [offer] = Offer.objects.filter(order=order)
    assert offer.courier_id == dara.pk
    assert dara_client.post(f"/offers/{offer.pk}/accept", {}).status_code == 200
    return order, (dara, dara_client), (sophea, sophea_client)


def test_taking_back_sends_every_assigned_drop_back_to_pending_and_clears_the_driver(accepted):
    order, (dara, _), _ = accepted

    taken = take_back_order(order=order, actor=OPERATOR)

    order.refresh_from_db()
    assert order.driver is None
    assert taken.courier == dara and len(taken.moved) == 2
    for drop_id in order.drops.values_list("pk", flat=True):
        assert history_of(drop_id) == [S.PENDING, S.ASSIGNED, S.PENDING]
        assert_legal_history(drop_id)
    back = DeliveryEvent.objects.filter(drop__order=order, status=S.PENDING)
    assert set(back.values_list("actor", flat=True)) == {OPERATOR}
    # Who lost it is on record, when: the courier's offer of it ends taken back.
    [offer] = Offer.objects.filter(order=order)
    assert (offer.courier_id, offer.status) == (dara.pk, OfferStatus.TAKEN_BACK)
    assert offer.answered_at == back.first().at


def test_an_order_given_by_hand_is_taken_back_and_its_courier_recorded(
    open_for_business, api, alice, make_courier
):
    courier, _ = make_courier("Dara Sok")
    drops = assigned_drops(api, alice, courier)
    order = drops[0].order

    take_back_order(order=order, actor=OPERATOR)

    assert set(Drop.objects.filter(order=order).values_list("status", flat=True)) == {S.PENDING}
    assert offers_of(order) == [(courier.pk, OfferStatus.TAKEN_BACK)]
    assert Order.objects.get(pk=order.pk).driver is None


def test_a_picked_up_order_is_never_taken_back_and_nothing_changes(accepted):
    order, (dara, _), _ = accepted
    first, second = order.drops.order_by("pk").values_list("pk", flat=True)
    move_drops_as_operator(drop_ids=[first], to=S.PICKED_UP, actor=OPERATOR)
    events = DeliveryEvent.objects.filter(drop__order=order).count()

    with pytest.raises(TakeBackRefused, match="has picked up"):
        take_back_order(order=order, actor=OPERATOR)

    assert Order.objects.get(pk=order.pk).driver_id == dara.pk
    assert history_of(first)[-1] == S.PICKED_UP and history_of(second)[-1] == S.ASSIGNED
    assert DeliveryEvent.objects.filter(drop__order=order).count() == events
    assert offers_of(order) == [(dara.pk, OfferStatus.ACCEPTED)]


def test_an_order_nobody_carries_is_not_taken_back(api, shop):
    order = live_order(api, shop)
    with pytest.raises(TakeBackRefused, match="No courier"):
        take_back_order(order=order, actor=OPERATOR)
    assert set(order.drops.values_list("status", flat=True)) == {S.PENDING}
    assert not Offer.objects.filter(order=order).exists()


def test_the_dispatcher_offers_it_again_to_another_courier_never_to_the_one_who_lost_it(
    accepted,
):
    order, (dara, dara_client), (sophea, _) = accepted
    take_back_order(order=order, actor=OPERATOR)

    run = dispatch_waiting()

    # Dara is nearer and free again, and still not asked: Sophea is.
    assert [(o.order_id, o.courier_id) for o in run.offers] == [(order.pk, sophea.pk)]
    assert offers_of(order) == [(dara.pk, "taken_back"), (sophea.pk, "offered")]
    assert dara_client.get("/offer").json()["data"] == {"offer": None}


def test_the_courier_loses_it_from_the_route_and_hears_why_and_no_one_else_does(
    open_for_business, api, alice, make_courier
):
    courier, client = make_courier("Dara Sok")
    other, other_client = make_courier("Sophea Chan")
    mine = assigned_drops(api, alice, courier, drop("T-1", name="Dara Chea"), drop("T-2"))
    assigned_drops(api, alice, other, drop("T-3"))
    # A minute on: the orders given to them are older than the overlap of a route's changes.
    open_for_business.shift(timedelta(minutes=1))
    before = client.get("/route").json()["data"]
    other_before = other_client.get("/route").json()["data"]
    assert before["route"] is not None

    take_back_order(order=mine[0].order, actor=OPERATOR)

    after = client.get(f"/route?since={before['as_of']}").json()["data"]
    assert after["route"] is None
    assert after["changes"] == [
        {
            "drop_id": str(mine[0].pk),
            "kind": "taken_back",
            "at": after["changes"][0]["at"],
            "message": "An operator took back the order of Alice Shop: don't pick it up.",
        }
    ]
    others = other_client.get(f"/route?since={other_before['as_of']}").json()["data"]
    assert others["changes"] == [] and others["route"] == other_before["route"]
    # The drop is not theirs any more: a move on it is 404, and it stays waiting.
    answer = client.move(mine[0].pk, to="PICKED_UP")
    assert answer.status_code == 404, answer.content
    assert answer.json()["error"]["route"] is None  # their route as it is now: nothing left
    assert Drop.objects.get(pk=mine[0].pk).status == S.PENDING


def test_a_courier_cannot_send_their_own_drop_back_to_pending(
    open_for_business, api, alice, make_courier
):
    courier, client = make_courier("Dara Sok")
    (one,) = assigned_drops(api, alice, courier, drop("T-4"))

    answer = client.move(one.pk, to="PENDING")

    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["details"][0]["field"] == "to"
    assert Drop.objects.get(pk=one.pk).status == S.ASSIGNED


def test_the_scheduled_pickups_job_never_sends_an_assigned_drop_back(accepted):
    """dispatch_due_orders moves SCHEDULED drops to PENDING: a drop that is ASSIGNED by the
    time it holds the lock stays with its courier (only taking back moves it)."""
    order, (dara, _), _ = accepted
    drop_ids = list(order.drops.values_list("pk", flat=True))

    result = apply_moves(
        drop_ids=drop_ids, steps=step_from(S.SCHEDULED, S.PENDING), actor="dispatcher"
    )

    assert result.moved == [] and set(result.refused.values()) == {S.ASSIGNED}
    assert Order.objects.get(pk=order.pk).driver_id == dara.pk


def test_a_move_sent_after_the_order_went_to_another_courier_moves_nothing(accepted):
    """The courier looked at the drop (it was theirs), then an operator took the order back
    and gave it to Sophea before the move arrived: the move reaches nothing of hers."""
    from couriers.inputs import Move
    from couriers.moves import CourierMoveRefused, move_as_courier
    from dispatch.offers import assign_by_hand

    order, (dara, _), (sophea, _) = accepted
    looked_at = Drop.objects.filter(order=order).order_by("pk").first()  # Dara's, then
    take_back_order(order=order, actor=OPERATOR)
    assign_by_hand(order=order, courier=sophea, actor=OPERATOR)

    with pytest.raises(CourierMoveRefused) as refused:
        move_as_courier(courier=dara, drop=looked_at, move=Move(to=S.PICKED_UP))

    assert refused.value.code == "NOT_FOUND"
    looked_at.refresh_from_db()
    assert looked_at.status == S.ASSIGNED and looked_at.order.driver_id == sophea.pk
    assert not DeliveryEvent.objects.filter(drop=looked_at, status=S.PICKED_UP).exists()
