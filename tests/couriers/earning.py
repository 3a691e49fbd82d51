"""What the earnings tests share (tests/couriers/test_earnings.py,
tests/console/test_pay_export.py): pay plans, a signed-in courier, live runs assigned to a
courier, and the courier's moves."""

from __future__ import annotations

from couriers.models import PayPlan
from couriers.services import provision_courier
from orders.models import Drop, DropStatus
from tests.couriers.conftest import PASSWORD, CourierClient
from tests.factories import batch, drop, group
from tracking.services import move_drops_as_operator


def make_plans() -> dict[str, PayPlan]:
    """Motorbikes earn 1.25 a drop, 0.35 a km, 0.60 a return; tuktuks 2.00, 0.50, 1.00."""
    return {
        "motorbike": PayPlan.objects.create(
            vehicle_id="motorbike", per_drop="1.25", per_km="0.35", per_return="0.60"
        ),
        "tuktuk": PayPlan.objects.create(
            vehicle_id="tuktuk", per_drop="2.00", per_km="0.50", per_return="1.00"
        ),
    }


def signed_in_courier(api, name: str, phone: str, vehicle: str = "motorbike") -> tuple:
    """A courier and their API client (a bearer token), as tests/couriers/conftest.py makes."""
    courier = provision_courier(name=name, phone=phone, vehicle=vehicle, password=PASSWORD)
    answer = api.post("/courier/session", {"phone": phone, "password": PASSWORD}, None)
    assert answer.status_code == 200, answer.content
    return courier, CourierClient(api, answer.json()["data"]["token"])


def live_run(api, tenant, courier, *route_km: float, vehicle: str = "motorbike") -> list[Drop]:
    """One live order of a drop per km given, assigned to the courier; each drop's ride from
    the pickup (route_km) set as the stop order would."""
    body = batch(group(*(drop() for _ in route_km)))
    body["orders"][0]["vehicle"] = vehicle
    answer = api.bulk(body, tenant.key("live"))
    assert answer.status_code == 200, answer.content
    ids = [entry["drop_id"] for entry in answer.json()["data"]["orders"]]
    assert len(ids) == len(route_km), answer.content
    moved = move_drops_as_operator(
        drop_ids=ids, to=DropStatus.ASSIGNED, actor="operator test", driver=courier
    )
    assert len(moved.moved) == len(ids)
    drops = list(Drop.objects.filter(pk__in=ids).order_by("pk"))
    for one, km in zip(drops, route_km, strict=True):
        Drop.objects.filter(pk=one.pk).update(route_km=km)
    return drops


def deliver(client, one: Drop) -> None:
    assert client.move(one.pk, to="PICKED_UP").status_code == 200
    assert client.move(one.pk, to="DELIVERED").status_code == 200


def bring_back(client, one: Drop) -> None:
    assert client.move(one.pk, to="PICKED_UP").status_code == 200
    assert client.move(one.pk, to="FAILED", reason="RECIPIENT_UNAVAILABLE").status_code == 200
    assert client.move(one.pk, to="RETURNING").status_code == 200
    assert client.move(one.pk, to="RETURNED", received_by="Shop clerk").status_code == 200
