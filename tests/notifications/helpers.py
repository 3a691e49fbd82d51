"""Orders for the notification tests, moved through the real state machine."""

from __future__ import annotations

from orders.models import DropStatus
from tests.factories import DriverFactory, batch, drop, group
from tracking.services import move_drops_as_operator


def place(api, key: str, *client_order_ids: str, phone: str = "+85512000001") -> list[str]:
    """One accepted drop per id, all to the same recipient's phone; their drop ids."""
    body = batch(group(*[drop(i, phone=phone, name="Sokha Chan") for i in client_order_ids]))
    response = api.bulk(body, key)
    assert response.status_code == 200, response.content
    orders = response.json()["data"]["orders"]
    assert [o["status"] for o in orders] == ["accepted"] * len(orders), orders
    return [o["drop_id"] for o in orders]


def walk_live(drop_ids: list[str], *, to: str = DropStatus.DELIVERED) -> None:
    """Live drops assigned to a courier, picked up, then delivered (or failed)."""
    courier = DriverFactory()
    move_drops_as_operator(drop_ids=drop_ids, to=DropStatus.ASSIGNED, actor="op", driver=courier)
    for status in (DropStatus.PICKED_UP, to):
        moved = move_drops_as_operator(drop_ids=drop_ids, to=status, actor="op")
        assert moved is not None
