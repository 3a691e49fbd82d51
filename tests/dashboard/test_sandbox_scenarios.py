"""The sandbox console's "Watch a delivery": one sample drop with a scenario."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orders.links import tracking_token
from orders.models import Drop, DropStatus
from tracking.scenarios import run_due_scenarios

# Monday 2026-11-23 23:30 in Phnom Penh: the demo area (07:00–21:00) is closed.
AT_NIGHT = datetime(2026, 11, 23, 16, 30, tzinfo=UTC)


def test_a_business_starts_a_scenario_and_gets_its_tracking_link(
    open_for_business, alice, alice_web
):
    response = alice_web.post("/sandbox/scenario/", {"scenario": "deliver", "pin": "on"})

    assert response.status_code == 302
    started = Drop.objects.get(business=alice.business)
    assert response["Location"] == f"/sandbox/?started={started.pk}"
    assert started.environment == "sandbox" and started.sandbox_scenario == "deliver"
    assert started.status == DropStatus.PENDING and started.dropoff_pin
    page = alice_web.get(response["Location"]).content.decode()
    assert f"/t/{tracking_token(started.pk)}" in page
    assert started.dropoff_pin in page  # the business passes its PIN on
    order_page = alice_web.get(f"/orders/{started.pk}/").content.decode()
    assert f"/t/{tracking_token(started.pk)}" in order_page


def test_at_night_the_scenario_is_scheduled_for_the_opening_and_walks_from_then(
    open_for_business, alice, alice_web
):
    open_for_business.move_to(AT_NIGHT)

    response = alice_web.post("/sandbox/scenario/", {"scenario": "fail"}, follow=True)

    started = Drop.objects.get(business=alice.business)
    assert started.status == DropStatus.SCHEDULED
    # 07:00 the next morning in Phnom Penh.
    opening = datetime(2026, 11, 24, 0, 0, tzinfo=UTC)
    assert started.order.pickup_scheduled_at == opening
    assert "every 10 s from 07:00 on Tue 24 Nov, when the area opens." in (
        response.content.decode()
    )
    for _ in range(5):
        open_for_business.shift(timedelta(seconds=10))
        run_due_scenarios()
    assert Drop.objects.get(pk=started.pk).status == DropStatus.SCHEDULED  # waits, as live
    open_for_business.move_to(opening)
    for _ in range(5):
        run_due_scenarios()
        open_for_business.shift(timedelta(seconds=10))
    assert Drop.objects.get(pk=started.pk).status == DropStatus.FAILED


@pytest.mark.parametrize("scenario", ["", "manual", "explode"])
def test_only_walking_scenarios_can_be_started(open_for_business, alice, alice_web, scenario):
    response = alice_web.post("/sandbox/scenario/", {"scenario": scenario})

    assert response.status_code == 400
    assert not Drop.objects.exists()


def test_another_business_s_drop_is_never_shown_as_started(
    open_for_business, alice, bob, alice_web, member
):
    member(bob.business).post("/sandbox/scenario/", {"scenario": "deliver"})
    theirs = Drop.objects.get(business=bob.business)

    page = alice_web.get(f"/sandbox/?started={theirs.pk}").content.decode()

    assert tracking_token(theirs.pk) not in page
    assert alice_web.get("/sandbox/?started=not-a-uuid").status_code == 200
