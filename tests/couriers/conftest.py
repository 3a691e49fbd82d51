from __future__ import annotations

import uuid

import pytest

from couriers.services import provision_courier
from orders.models import Drop, DropStatus
from tests.factories import batch, drop, group
from tracking.services import move_drops_as_operator

PASSWORD = "correct horse battery"


class CourierClient:
    """The courier API with a bearer token (the api fixture's Django client)."""

    def __init__(self, api, token: str) -> None:
        self.api, self.token = api, token

    def get(self, path: str):
        return self.api.get(f"/courier{path}", self.token)

    def post(self, path: str, body):
        return self.api.post(f"/courier{path}", body, self.token)

    def move(self, drop_id, **body):
        return self.post(f"/drops/{drop_id}/move", body)


@pytest.fixture
def make_courier(db, api):
    counter = iter(range(10, 99))

    def make(name: str = "Dara Sok", vehicle: str = "motorbike") -> tuple:
        phone = f"+8551234{next(counter):04d}"
        courier = provision_courier(name=name, phone=phone, vehicle=vehicle, password=PASSWORD)
        answer = api.post("/courier/session", {"phone": phone, "password": PASSWORD}, None)
        assert answer.status_code == 200, answer.content
        return courier, CourierClient(api, answer.json()["data"]["token"])

    return make


@pytest.fixture
def dara(make_courier):
    return make_courier("Dara Sok")


@pytest.fixture
def sophea(make_courier):
    return make_courier("Sophea Chan")


def assigned_drops(api, tenant, courier, *drops_in, environment: str = "sandbox") -> list[Drop]:
    """A batch of these drops (default: two), assigned to the courier by an operator."""
    drops_in = drops_in or (drop(f"C-{uuid.uuid4().hex[:6]}"), drop(f"C-{uuid.uuid4().hex[:6]}"))
    answer = api.bulk(batch(group(*drops_in)), tenant.key(environment))
    assert answer.status_code == 200, answer.content
    entries = answer.json()["data"]["orders"]
    ids = [e["drop_id"] for e in entries if e["status"] == "accepted"]
    assert len(ids) == len(drops_in), entries
    moved = move_drops_as_operator(
        drop_ids=ids, to=DropStatus.ASSIGNED, actor="operator test", driver=courier
    )
    assert len(moved.moved) == len(ids)
    return list(Drop.objects.filter(pk__in=ids).order_by("pk"))
