"""The courier model moved from orders to couriers (couriers 0005, dispatch 0002, orders 0020)
with its table kept: a database at the state before keeps its couriers and their orders."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from couriers.models import Driver
from orders.models import Order
from tests.dispatch.conftest import live_order, shop  # noqa: F401 (fixture)

BEFORE = [
    ("couriers", "0004_position_box"),
    ("dispatch", "0001_initial"),
    ("orders", "0019_recipient_email"),
]


@pytest.fixture
def executor():
    executor = MigrationExecutor(connection)
    yield executor
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_a_courier_and_the_order_assigned_to_them_survive_the_move(executor, api, shop):  # noqa: F811
    order = live_order(api, shop)  # made by today's code; its row stays through the migrations
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    # As before the move: the courier's permissions belong to orders.
    assert old.get_model("auth", "Permission").objects.filter(
        content_type__app_label="orders", codename="manage_courier", group__name="Operators"
    )
    courier = old.get_model("orders", "Driver").objects.create(
        name="Dara Sok", phone="+85512000001", vehicle="motorbike"
    )
    old.get_model("orders", "Order").objects.filter(pk=order.pk).update(driver_id=courier.pk)

    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    moved = Driver.objects.get(pk=courier.pk)
    assert (moved.name, moved.phone) == ("Dara Sok", "+85512000001")
    assert Order.objects.get(pk=order.pk).driver == moved
    assert list(Order.objects.filter(driver=moved)) == [order]
    # The content type moved with it: the Operators' permission over couriers still holds.
    manage = Permission.objects.get(content_type__app_label="couriers", codename="manage_courier")
    assert manage in Group.objects.get(name="Operators").permissions.all()
    assert not Permission.objects.filter(
        content_type__app_label="orders", codename="manage_courier"
    )
