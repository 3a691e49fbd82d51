"""The dispatch board (docs/operator.md "Dispatch board", docs/contract.md §21): the waiting
live orders most urgent first, the couriers online with their state and their runs, in a
bounded number of queries; hand assignment behind orders.dispatch_drop, never to the sandbox
test driver or a courier of another vehicle, into a courier's run where it adds least riding
time; the map's JSON data view."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import dispatch.board
from core.ids import uuid7
from couriers.models import CourierPosition, Driver
from dispatch.board import (
    BoardCourier,
    CourierState,
    Position,
    RunPoint,
    WaitingOrder,
    choices_for,
    read_board,
)
from dispatch.models import Offer, OfferStatus
from dispatch.offers import assign_by_hand
from orders.models import Drop, DropStatus, Order, WindowStatus
from orders.runs import run_of, to_do

# The dispatch tests' fixtures (shop, courier_near and the make_courier it uses), imported
# as tests/dispatch/conftest.py imports them: the tests' arguments name them again.
# ruff: noqa: F811
from tests.couriers.conftest import make_courier  # noqa: F401
from tests.dispatch.conftest import FAR, NEAR, courier_near, live_order, online_at, shop  # noqa: F401
from tests.factories import SHOP, drop
from tests.operators import staff_client
from tracking.services import sandbox_test_driver

BOARD = "/admin/dispatch/board/"
DATA = "/admin/dispatch/board/data/"
ASSIGN = "/admin/dispatch/board/assign/"
VIEW = ["orders.view_order", "orders.view_drop"]


@pytest.fixture
def operator() -> Client:
    return staff_client("ops@example.com", groups=["Operators"])


@pytest.fixture
def viewer() -> Client:
    return staff_client("viewer@example.com", perms=VIEW)


def offer(order: Order, courier: Driver, *, seconds: int = 60) -> Offer:
    now = timezone.now()
    return Offer.objects.create(
        order=order,
        courier=courier,
        status=OfferStatus.OFFERED,
        created_at=now,
        expires_at=now + timedelta(seconds=seconds),
    )


def ids_in_page(html: str, orders: list[Order]) -> list[Order]:
    """The orders in the order the page's table lists them."""
    return sorted(orders, key=lambda o: html.index(f'id="order-{o.pk}"'))


def test_at_risk_windows_come_first_then_flagged_then_earliest_window_then_oldest(
    api, shop, operator
):
    oldest = live_order(api, shop)
    newer = live_order(api, shop)
    flagged = live_order(api, shop)
    at_risk = live_order(api, shop)
    with_window = live_order(api, shop)
    now = timezone.now()
    Order.objects.filter(pk=flagged.pk).update(dispatch_flagged_at=now)
    Drop.objects.filter(order=at_risk).update(window_status=WindowStatus.AT_RISK)
    Drop.objects.filter(order=with_window).update(
        window_end=now + timedelta(hours=2), window_status=WindowStatus.ON_TRACK
    )
    expected = [at_risk, flagged, with_window, oldest, newer]

    board = read_board()
    assert [o.order_id for o in board.orders] == [o.pk for o in expected]
    assert board.orders[0].at_risk and board.orders[1].flagged_at is not None
    assert board.orders[0].drops == 2 and board.orders[0].business == "Phnom Penh Shop"

    page = operator.get(BOARD)
    assert page.status_code == 200
    assert ids_in_page(page.content.decode(), expected) == expected


def test_a_pickup_named_as_its_business_is_named_once(api, shop, operator, viewer):
    """ "Phnom Penh Shop", not "Phnom Penh Shop for Phnom Penh Shop"; a pickup of another
    name still says whose it is."""
    own_name = live_order(api, shop)
    stall = live_order(api, shop)
    Order.objects.filter(pk=own_name.pk).update(pickup_name="phnom penh shop ")
    Order.objects.filter(pk=stall.pk).update(pickup_name="Stall 12")

    html = operator.get(BOARD).content.decode()
    pins = {pin["order_id"]: pin for pin in viewer.get(DATA).json()["data"]["orders"]}

    row = html.split(f'id="order-{own_name.pk}"')[1].split("</th>")[0]
    assert "phnom penh shop" in row and "for Phnom Penh Shop" not in row
    row = html.split(f'id="order-{stall.pk}"')[1].split("</th>")[0]
    assert "Stall 12" in row and "for Phnom Penh Shop" in row
    assert pins[str(own_name.pk)]["for_business"] is None
    assert pins[str(stall.pk)]["for_business"] == "Phnom Penh Shop"


def test_only_waiting_live_orders_are_on_the_board(api, shop, courier_near):
    waiting = live_order(api, shop)
    taken = live_order(api, shop)
    courier, _ = courier_near(NEAR, "Taken Already")
    assign_by_hand(order=taken, courier=courier, actor="test")
    closed = live_order(api, shop)
    Order.objects.filter(pk=closed.pk).update(dispatch_closed=True)

    assert [o.order_id for o in read_board().orders] == [waiting.pk]


def test_couriers_online_with_their_state_and_how_fresh_their_position_is(api, shop, courier_near):
    free, _ = courier_near(NEAR, "A Free")
    offered, _ = courier_near(NEAR, "B Offered")
    on_route, _ = courier_near(FAR, "C On Route")
    stale, _ = courier_near(FAR, "D Stale")
    CourierPosition.objects.filter(courier=stale).update(at=timezone.now() - timedelta(minutes=6))
    offline, _ = courier_near(NEAR, "E Offline")
    Driver.objects.filter(pk=offline.pk).update(online=False)
    online_at(sandbox_test_driver(), NEAR)
    offer(live_order(api, shop), offered)
    assign_by_hand(order=live_order(api, shop), courier=on_route, actor="test")

    board = read_board()
    states = {c.name: c.state for c in board.couriers}
    assert states == {
        "A Free": CourierState.FREE,
        "B Offered": CourierState.OFFERED,
        "C On Route": CourierState.ON_ROUTE,
        "D Stale": CourierState.FREE,
    }
    fresh = {c.name: c.position.live for c in board.couriers}
    assert fresh == {"A Free": True, "B Offered": True, "C On Route": True, "D Stale": False}
    assert board.online == 4


def test_an_expired_offer_is_not_shown_as_open(api, shop, courier_near):
    courier, _ = courier_near(NEAR, "Slow To Answer")
    order = live_order(api, shop)
    offer(order, courier, seconds=-1)

    board = read_board()
    assert board.orders[0].offer is None
    assert board.couriers[0].state == CourierState.FREE


def test_the_board_reads_in_the_same_few_queries_whatever_the_numbers(
    api, shop, courier_near, operator
):
    def queries_of_page() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert operator.get(BOARD).status_code == 200
        return len(queries)

    def queries_of_read() -> int:
        with CaptureQueriesContext(connection) as queries:
            read_board()
        return len(queries)

    first = live_order(api, shop)
    offer(first, courier_near(NEAR, "Courier 0")[0])
    operator.get(BOARD)  # the session and the permissions' caches are warm from here on
    few_page, few_read = queries_of_page(), queries_of_read()

    for n in range(1, 7):
        courier, _ = courier_near(NEAR, f"Courier {n}")
        order = live_order(api, shop)
        if n % 2:
            offer(order, courier)
        elif n == 2:
            assign_by_hand(order=order, courier=courier, actor="test")
    assert len(read_board().orders) == 6 and len(read_board().couriers) == 7

    assert queries_of_read() == few_read <= 3
    assert queries_of_page() == few_page


def test_past_the_cap_the_board_says_how_many_more_wait(api, shop, operator, monkeypatch):
    monkeypatch.setattr(dispatch.board, "MAX_ORDERS", 2)
    for _ in range(4):
        live_order(api, shop)

    board = read_board()
    assert len(board.orders) == 2 and board.waiting == 4 and board.more_orders == 2
    page = operator.get(BOARD).content.decode()
    assert "The 2 most urgent of 4 waiting orders are shown: 2 more" in page
    data = operator.get(DATA).json()["data"]
    assert len(data["orders"]) == 2 and data["waiting"] == 4


def post_assign(client: Client, order, courier_id) -> tuple[int, list[str]]:
    response = client.post(ASSIGN, {"order": str(order), "courier": str(courier_id)})
    if response.status_code != 302:
        return response.status_code, []
    board = client.get(response["Location"])
    return response.status_code, [str(m) for m in board.context["messages"]]


def drops_of(order: Order) -> set[tuple[str, int | None]]:
    return set(Drop.objects.filter(order=order).values_list("status", "order__driver_id"))


def test_hand_assignment_gives_the_order_and_withdraws_its_open_offer(
    api, shop, courier_near, operator
):
    offered_to, _ = courier_near(NEAR, "Was Offered")
    chosen, _ = courier_near(FAR, "Chosen By Hand")
    order = live_order(api, shop)
    open_offer = offer(order, offered_to)
    page = operator.get(BOARD).content.decode()
    assert f'<option value="{chosen.pk}">Chosen By Hand: adds ' in page
    assert ", 5.6 km away</option>" in page
    # Neither carries a run: the nearer adds less riding time, so comes first.
    assert page.index("Was Offered: adds") < page.index("Chosen By Hand: adds")

    status, said = post_assign(operator, order.pk, chosen.pk)

    assert status == 302
    assert said == [f"Order of {order.pickup_name}: 2 drop(s) assigned to Chosen By Hand."]
    assert drops_of(order) == {(DropStatus.ASSIGNED, chosen.pk)}
    open_offer.refresh_from_db()
    assert open_offer.status == OfferStatus.WITHDRAWN
    assert (
        LogEntry.objects.filter(change_message__contains="Assigned by hand to courier").count() == 2
    )
    assert read_board().orders == []


def refused(client, order, courier_id, expected: str) -> None:
    before = drops_of(order)
    status, said = post_assign(client, order.pk, courier_id)
    assert status == 302
    assert len(said) == 1 and expected in said[0], said
    assert drops_of(order) == before == {(DropStatus.PENDING, None)}


def test_the_sandbox_test_driver_is_never_given_a_live_order(api, shop, operator):
    test_driver = sandbox_test_driver()
    online_at(test_driver, NEAR)
    order = live_order(api, shop)

    assert f'value="{test_driver.pk}"' not in operator.get(BOARD).content.decode()
    refused(operator, order, test_driver.pk, "drives sandbox orders only")


# North of the shop, on one street: a drop on the way, and one farther on.
ON_THE_WAY = {"lat": SHOP["lat"] + 0.02, "long": SHOP["long"]}  # ~2.2 km
FARTHER = {"lat": SHOP["lat"] + 0.04, "long": SHOP["long"]}  # ~4.4 km


def one_drop_to(api, shop, place: dict) -> Order:
    return live_order(api, shop, drop(**place))


def stops_left(courier: Driver) -> list[tuple[str, UUID, float]]:
    return [(stop.kind, stop.order_id, stop.lat) for stop in to_do(run_of(courier.pk))]


def test_a_courier_with_a_two_order_run_has_its_stops_in_run_order_in_the_board_data(
    api, shop, courier_near, viewer
):
    courier, _ = courier_near(NEAR, "Two Orders")
    farther = one_drop_to(api, shop, FARTHER)
    on_the_way = one_drop_to(api, shop, ON_THE_WAY)
    assign_by_hand(order=farther, courier=courier, actor="operator:1")
    assign_by_hand(order=on_the_way, courier=courier, actor="operator:1")

    [board_courier] = read_board().couriers
    [pin] = viewer.get(DATA).json()["data"]["couriers"]

    assert board_courier.state == CourierState.ON_ROUTE and board_courier.stops_left == 4
    assert pin["state"] == "on_route"
    shop_at = {"lat": SHOP["lat"], "long": SHOP["long"]}
    assert pin["run"] == [
        {"kind": "pickup", **shop_at},
        {"kind": "pickup", **shop_at},
        {"kind": "drop", **ON_THE_WAY},
        {"kind": "drop", **FARTHER},
    ]
    assert [(s["kind"], s["lat"]) for s in pin["run"]] == [
        (kind, lat) for kind, _, lat in stops_left(courier)
    ]
    page = viewer.get(BOARD).content.decode()
    assert 'data-testid="stops-left">4</td>' in page and "on a run" in page


def test_hand_assignment_to_a_courier_with_a_run_inserts_the_order_where_it_adds_least(
    api, shop, courier_near, operator
):
    busy, _ = courier_near(NEAR, "Busy Courier")
    farther = one_drop_to(api, shop, FARTHER)
    assign_by_hand(order=farther, courier=busy, actor="operator:1")
    on_the_way = one_drop_to(api, shop, ON_THE_WAY)

    page = operator.get(BOARD).content.decode()
    assert f'<option value="{busy.pk}">Busy Courier: adds ' in page
    assert "to 2 stops left, 0.6 km away</option>" in page

    status, said = post_assign(operator, on_the_way.pk, busy.pk)

    assert status == 302
    assert said == [f"Order of {on_the_way.pickup_name}: 1 drop(s) assigned to Busy Courier."]
    assert drops_of(on_the_way) == {(DropStatus.ASSIGNED, busy.pk)}
    assert drops_of(farther) == {(DropStatus.ASSIGNED, busy.pk)}
    # Both pickups at the shop first, then the drop on the way before the farther one.
    kinds = [(kind, order_id) for kind, order_id, _ in stops_left(busy)]
    assert sorted(kinds[:2]) == sorted([("pickup", farther.pk), ("pickup", on_the_way.pk)])
    assert kinds[2:] == [("drop", on_the_way.pk), ("drop", farther.pk)]


def test_the_couriers_it_adds_least_riding_time_to_come_first_not_the_nearest(
    api, shop, courier_near, operator
):
    """A courier whose run passes the order's pickup and drop rides nearly nothing more for
    it: offered before an idle courier nearer its pickup."""
    runner, _ = courier_near(NEAR, "Passing By")
    assign_by_hand(order=one_drop_to(api, shop, FARTHER), courier=runner, actor="operator:1")
    order = one_drop_to(api, shop, FARTHER)
    Order.objects.filter(pk=order.pk).update(pickup_lat=ON_THE_WAY["lat"])  # on its way
    idle, _ = courier_near((ON_THE_WAY["lat"] + 0.01, SHOP["long"]), "Idle Nearby")

    [row] = read_board().orders
    choices = dispatch.board.choices_for(row, read_board().couriers)

    assert [c.courier.name for c in choices] == ["Passing By", "Idle Nearby"]
    assert choices[0].km > choices[1].km  # farther from the pickup, yet it costs least
    assert choices[0].added_seconds < 60 < choices[1].added_seconds
    page = operator.get(BOARD).content.decode()
    assert page.index("Passing By: adds 0 min to 2 stops left") < page.index("Idle Nearby: adds")


def test_a_courier_holding_an_offer_with_a_run_is_shown_offered_and_not_given_another(
    api, shop, courier_near, operator
):
    courier, _ = courier_near(NEAR, "Carrying And Offered")
    assign_by_hand(order=live_order(api, shop), courier=courier, actor="operator:1")
    offer(live_order(api, shop), courier)
    order = live_order(api, shop)

    [board_courier] = read_board().couriers
    assert board_courier.state == CourierState.OFFERED and board_courier.stops_left == 3
    assert (
        f'value="{courier.pk}"'
        not in operator.get(BOARD)
        .content.decode()
        .split(f'id="order-{order.pk}"')[1]
        .split("</tr>")[0]
    )
    refused(operator, order, courier.pk, "has another order's offer open")


def test_the_board_reads_in_the_same_queries_with_one_or_five_couriers_with_runs(
    api, shop, courier_near, operator
):
    def queries_of(read) -> int:
        with CaptureQueriesContext(connection) as queries:
            read()
        return len(queries)

    def page() -> None:
        assert operator.get(BOARD).status_code == 200

    def courier_with_a_run(n: int) -> None:
        courier, _ = courier_near(NEAR, f"Runner {n}")
        for place in (ON_THE_WAY, FARTHER):
            assign_by_hand(order=one_drop_to(api, shop, place), courier=courier, actor="test")
        live_order(api, shop)  # one more waiting, each costed against every run

    courier_with_a_run(0)
    page()  # the session and the permissions' caches are warm from here on
    one_read, one_page = queries_of(read_board), queries_of(page)
    for n in range(1, 5):
        courier_with_a_run(n)

    board = read_board()
    assert [c.stops_left for c in board.couriers] == [4] * 5 and len(board.orders) == 5
    assert queries_of(read_board) == one_read == 3
    assert queries_of(page) == one_page


def test_a_courier_of_another_vehicle_is_not_offered_and_is_refused(
    api, shop, courier_near, operator
):
    car, _ = courier_near(NEAR, "Car Courier", vehicle="car")
    order = live_order(api, shop)  # a motorbike order

    assert f'value="{car.pk}"' not in operator.get(BOARD).content.decode()
    refused(operator, order, car.pk, "rides a car; this order needs a motorbike")


def test_a_courier_holding_another_orders_offer_is_refused(api, shop, courier_near, operator):
    courier, _ = courier_near(NEAR, "Deciding")
    offer(live_order(api, shop), courier)
    order = live_order(api, shop)

    refused(operator, order, courier.pk, "has another order's offer open")


def test_an_offline_courier_is_refused(api, shop, courier_near, operator):
    courier, _ = courier_near(NEAR, "Gone Home")
    Driver.objects.filter(pk=courier.pk).update(online=False)
    order = live_order(api, shop)

    refused(operator, order, courier.pk, "is not online")


@pytest.mark.parametrize(
    "order_id, courier_id",
    [
        ("not-a-uuid", "1"),
        ("", ""),
        ("00000000-0000-0000-0000-000000000000", "1"),
        ("ORDER", "x"),
        ("ORDER", str(2**70)),
        ("ORDER", "999999"),
    ],
)
def test_a_garbled_or_unknown_assignment_is_a_message_never_a_500(
    api, shop, courier_near, operator, order_id, courier_id
):
    order = live_order(api, shop)
    courier_near(NEAR, "Real Courier")

    posted = order.pk if order_id == "ORDER" else order_id
    status, said = post_assign(operator, posted, courier_id)

    assert status == 302
    assert said == ["Choose an order and a courier from the board. Nothing changed."]
    assert drops_of(order) == {(DropStatus.PENDING, None)}


def test_an_order_no_longer_waiting_is_refused(api, shop, courier_near, operator):
    first, _ = courier_near(NEAR, "First")
    second, _ = courier_near(NEAR, "Second")
    order = live_order(api, shop)
    assign_by_hand(order=order, courier=first, actor="test")

    status, said = post_assign(operator, order.pk, second.pk)
    assert said == ["This order no longer waits for a courier. Nothing changed."]
    assert drops_of(order) == {(DropStatus.ASSIGNED, first.pk)}


def test_without_dispatch_drop_the_board_shows_no_form_and_a_post_is_403(
    api, shop, courier_near, viewer
):
    courier, _ = courier_near(NEAR, "Ready")
    order = live_order(api, shop)

    page = viewer.get(BOARD)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'id="order-{order.pk}"' in html and "Ready" in html
    assert ASSIGN not in html and 'name="courier"' not in html
    assert (
        viewer.post(ASSIGN, {"order": str(order.pk), "courier": str(courier.pk)}).status_code == 403
    )
    assert drops_of(order) == {(DropStatus.PENDING, None)}


def test_staff_who_may_not_look_at_drops_get_403_on_the_board_and_its_data(db):
    stranger = staff_client("finance@example.com", groups=["Finance"])
    assert stranger.get(BOARD).status_code == 403
    answer = stranger.get(DATA)
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "FORBIDDEN"


def test_the_data_view_answers_the_maps_pins_in_the_envelope(api, shop, courier_near, viewer):
    courier, _ = courier_near(NEAR, "On The Map")
    order = live_order(api, shop)
    Order.objects.filter(pk=order.pk).update(dispatch_flagged_at=timezone.now())
    offer(order, courier)

    answer = viewer.get(DATA)

    assert answer.status_code == 200
    assert answer["Cache-Control"].startswith("max-age=0")
    body = answer.json()
    assert body["success"] is True
    [pin] = body["data"]["orders"]
    assert pin["order_id"] == str(order.pk)
    assert pin["pickup"] == {
        "name": order.pickup_name,
        "lat": order.pickup_lat,
        "long": order.pickup_long,
    }
    assert pin["drops"] == 2 and pin["vehicle"] == "motorbike" and pin["flagged_at"].endswith("Z")
    assert pin["offer"]["courier"] == "On The Map"
    [courier_pin] = body["data"]["couriers"]
    assert courier_pin["state"] == "offered"
    assert courier_pin["position"]["lat"] == NEAR[0] and courier_pin["position"]["live"] is True
    assert body["data"]["waiting"] == 1 and body["data"]["online"] == 1


def test_the_data_view_refuses_other_methods_and_anonymous_callers_in_the_envelope(db, viewer):
    posted = viewer.post(DATA)
    assert posted.status_code == 405
    assert posted.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    anonymous = Client().get(DATA)
    assert anonymous.status_code == 403
    assert anonymous.json()["success"] is False


def test_the_offers_list_and_the_index_link_the_board(api, shop, courier_near, operator):
    courier, _ = courier_near(NEAR, "Listed")
    offer(live_order(api, shop), courier)

    offers = operator.get("/admin/dispatch/offer/")
    assert offers.status_code == 200
    html = offers.content.decode()
    assert 'href="/admin/dispatch/board/"' in html and "Listed" in html
    assert 'href="/admin/dispatch/board/"' in operator.get("/admin/").content.decode()


def test_past_the_costed_cap_the_nearest_by_position_or_run_stop_are_costed(monkeypatch):
    """Only the MAX_COSTED couriers nearest the pickup are costed by insertion, near by their
    position or by any stop of their run: a courier far off whose run passes the shop counts
    as near."""
    monkeypatch.setattr(dispatch.board, "MAX_COSTED", 1)
    now = timezone.now()

    def courier(pk: int, place: tuple, run: tuple = ()) -> BoardCourier:
        position = Position(*place, now, live=True)
        state = CourierState.ON_ROUTE if run else CourierState.FREE
        return BoardCourier(pk, f"C{pk}", "motorbike", state, None, position, run=run)

    at_the_shop = RunPoint("pickup", SHOP["lat"], SHOP["long"])
    far_off_passing = courier(1, (SHOP["lat"] + 0.1, SHOP["long"]), run=(at_the_shop,))
    idle_near = courier(2, NEAR)
    order = WaitingOrder(
        uuid7(), "Shop", "Shop", SHOP["lat"], SHOP["long"], 1, "motorbike", now, None, False,
        None, None, drop_places=((FARTHER["lat"], FARTHER["long"]),),
    )  # fmt: skip

    assert [c.courier.courier_id for c in choices_for(order, [far_off_passing, idle_near])] == [1]
    monkeypatch.setattr(dispatch.board, "MAX_COSTED", 2)
    assert len(choices_for(order, [far_off_passing, idle_near])) == 2
