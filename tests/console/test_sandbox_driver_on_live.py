"""The sandbox test driver never drives a live order (docs/contract.md §20): the
service refuses it whoever calls, and the console does not offer it for a live selection."""

from __future__ import annotations

import pytest

from orders.models import DeliveryEvent, Drop, DropStatus, Order
from tests.factories import DriverFactory
from tests.operators import staff_client
from tests.tracking.helpers import drop_in
from tracking.services import DriverRefused, move_drops_as_operator, sandbox_test_driver

pytestmark = pytest.mark.django_db

S = DropStatus
ORDERS = "/admin/orders/order/"


@pytest.fixture
def business(make_tenant):
    return make_tenant(name="Kep Crab", stage="live").business


@pytest.fixture
def operator():
    return staff_client("ops", groups=["Operators"])


def nothing_moved(*drops: Drop) -> bool:
    still = set(Drop.objects.filter(pk__in=[d.pk for d in drops]).values_list("status", flat=True))
    events = DeliveryEvent.objects.filter(drop__in=[d.pk for d in drops]).exists()
    drivers = set(Order.objects.filter(drops__in=drops).values_list("driver", flat=True))
    return still == {S.PENDING} and not events and drivers == {None}


def assign(drops: list[Drop], driver):
    return move_drops_as_operator(
        drop_ids=[d.pk for d in drops], to=S.ASSIGNED, actor="operator ops", driver=driver
    )


def test_the_service_refuses_the_test_driver_for_a_live_drop(business):
    live = drop_in(S.PENDING, business=business, environment="live")
    sandbox = drop_in(S.PENDING, business=business, environment="sandbox")

    for selection in ([live], [sandbox, live]):  # one live drop refuses the whole selection
        with pytest.raises(DriverRefused) as refused:
            assign(selection, sandbox_test_driver())

        assert str(refused.value) == (
            "Sandbox Test Driver drives sandbox orders only: choose a real driver for live "
            "orders. Nothing changed."
        )
        assert nothing_moved(live, sandbox)


def test_the_service_refuses_an_inactive_driver(business):
    live = drop_in(S.PENDING, business=business, environment="live")

    with pytest.raises(DriverRefused, match="is not active"):
        assign([live], DriverFactory(name="Retired", active=False))

    assert nothing_moved(live)


def test_the_test_driver_still_drives_sandbox_and_people_drive_live(business):
    live = drop_in(S.PENDING, business=business, environment="live")
    sandbox = drop_in(S.PENDING, business=business, environment="sandbox")

    assert [d.pk for d in assign([sandbox], sandbox_test_driver()).moved] == [sandbox.pk]
    assert [d.pk for d in assign([live], DriverFactory(name="Sokha")).moved] == [live.pk]


def choices_for(operator, order: Order) -> str:
    response = operator.post(
        ORDERS, {"action": "assign_driver", "index": "0", "_selected_action": [str(order.pk)]}
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_assign_form_offers_the_test_driver_for_sandbox_orders_only(operator, business):
    test_driver = sandbox_test_driver()
    person = DriverFactory(name="Sokha")
    live = drop_in(S.PENDING, business=business, environment="live")
    sandbox = drop_in(S.PENDING, business=business, environment="sandbox")

    live_form = choices_for(operator, live.order)
    sandbox_form = choices_for(operator, sandbox.order)

    assert f'value="{person.pk}"' in live_form
    assert f'value="{test_driver.pk}"' not in live_form
    assert "Sandbox Test Driver" not in live_form
    assert f'value="{test_driver.pk}"' in sandbox_form


def test_a_forged_assignment_of_the_test_driver_to_a_live_order_is_refused(operator, business):
    live = drop_in(S.PENDING, business=business, environment="live")

    response = operator.post(
        ORDERS,
        {
            "action": "assign_driver",
            "apply": "1",
            "driver": str(sandbox_test_driver().pk),
            "_selected_action": [str(live.order_id)],
        },
    )

    assert response.status_code == 200  # the form again, with why
    assert (
        "Choose an active driver from the list: the Sandbox Test Driver drives sandbox orders "
        "only." in response.content.decode()
    )
    assert nothing_moved(live)
