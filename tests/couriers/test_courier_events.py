"""order.courier_position (docs/contract.md §20): where the courier is and each drop's ETA,
per order on the way, at most every COURIER_EVENT_SECONDS, to the order's own business."""

from __future__ import annotations

from datetime import UTC, timedelta

from django.utils import timezone

from events.models import Event, EventType
from tests.couriers.conftest import assigned_drops
from tests.factories import drop


def post_here(client, lat: float = 11.55) -> None:
    at = timezone.now().astimezone(UTC).isoformat().replace("+00:00", "Z")
    answer = client.post("/location", {"points": [{"lat": lat, "long": 104.91, "at": at}]})
    assert answer.json()["data"]["stored"] == 1


def positions():
    return Event.objects.filter(type=EventType.ORDER_COURIER_POSITION).order_by("seq")


def test_one_event_per_order_on_the_way_at_most_every_30_seconds(
    open_for_business, alice, bob, api, dara, clock
):
    courier, client = dara
    mine = assigned_drops(api, alice, courier, drop("A-1"), drop("A-2"))
    (bobs,) = assigned_drops(api, bob, courier, drop("B-1"))
    post_here(client)
    events = list(positions())
    assert {(e.business_id, len(e.data["drops"])) for e in events} == {
        (alice.business.pk, 2),
        (bob.business.pk, 1),
    }
    alices = next(e for e in events if e.business_id == alice.business.pk)
    assert alices.data["pass_order_id"] == str(mine[0].order_id)
    assert alices.data["courier"]["position"]["lat"] == 11.55
    assert all(d["eta"]["dropoff_at"] for d in alices.data["drops"])
    clock.shift(timedelta(seconds=15))
    post_here(client, 11.56)
    assert positions().count() == 2  # 15 s later: nothing new
    clock.shift(timedelta(seconds=16))
    post_here(client, 11.57)
    assert positions().count() == 4
    # Delivered, nothing is on the way to Bob's drop any more: only Alice hears.
    client.move(bobs.pk, to="PICKED_UP")
    client.move(bobs.pk, to="DELIVERED")
    clock.shift(timedelta(seconds=31))
    post_here(client, 11.58)
    assert [e.business_id for e in positions()[4:]] == [alice.business.pk]


def test_no_event_without_a_drop_on_the_way(open_for_business, dara):
    _, client = dara
    post_here(client)
    assert not positions().exists()
