"""Live orders waiting for a courier, and couriers online somewhere (docs/contract.md §21)."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from couriers.services import Point, record_points, set_online
from orders.models import Order
from tests.couriers.conftest import CourierClient, make_courier  # noqa: F401 (fixture)
from tests.factories import SHOP, batch, drop, group

# Around the test shop (tests.factories.SHOP): a degree of latitude is ~111 km.
NEAR = (SHOP["lat"] + 0.005, SHOP["long"])  # ~0.6 km
FAR = (SHOP["lat"] + 0.05, SHOP["long"])  # ~5.6 km
OUT_OF_REACH = (SHOP["lat"] + 0.5, SHOP["long"])  # ~56 km: outside DISPATCH_RADIUS_KM


def live_order(api, tenant, *drops_in, vehicle: str | None = None) -> Order:
    """A live batch of one pickup group (default: two drops), its order waiting (PENDING)."""
    drops_in = drops_in or (drop(f"D-{uuid.uuid4().hex[:6]}"), drop(f"D-{uuid.uuid4().hex[:6]}"))
    pickup_group = group(*drops_in)
    if vehicle:
        pickup_group["vehicle"] = vehicle
    answer = api.bulk(batch(pickup_group), tenant.live_key)
    assert answer.status_code == 200, answer.content
    accepted = [e for e in answer.json()["data"]["orders"] if e["status"] == "accepted"]
    assert len(accepted) == len(drops_in), answer.json()
    return Order.objects.get(drops__pk=accepted[0]["drop_id"])


def online_at(courier, place: tuple[float, float], *, at=None) -> None:
    """The courier online, their latest position at `place` (now, unless `at`)."""
    set_online(courier=courier, online=True)
    record_points(courier=courier, points=[Point(*place, at or timezone.now())])


@pytest.fixture
def shop(open_for_business, make_tenant):
    return make_tenant(name="Phnom Penh Shop", live_balance="500.00")


@pytest.fixture
def courier_near(make_courier):  # noqa: F811 (the fixture imported above)
    """A factory: (courier, client) online at `place`."""

    def make(place=NEAR, name: str = "Dara Sok", vehicle: str = "motorbike") -> tuple:
        courier, client = make_courier(name, vehicle)
        online_at(courier, place)
        return courier, client

    return make
