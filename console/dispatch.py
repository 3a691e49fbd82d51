"""The dispatch board in the operator console (docs/operator.md "Dispatch board"): a live map
of the couriers online with their runs and of the live orders waiting for one, most urgent
first, and hand assignment (into a courier's run where it costs least); and the offers the
dispatcher made, read-only.

Looking needs `orders.view_drop`; giving an order by hand, or taking one back from its
courier, needs `orders.dispatch_drop` (without it the forms are not shown, and a POST
answers 403). The board's data is
dispatch.board's; a hand assignment goes through dispatch.offers.assign_by_hand.
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.cache import never_cache

from console.columns import ServiceTimesAdmin
from console.history import record
from console.orders import _actor
from core.admin import ReadOnlyAdmin
from core.api import envelope, error_response
from core.formats import iso_z
from couriers.models import Driver
from dashboard.templatetags.dashboard_tags import when_text
from dispatch.board import Board, BoardCourier, WaitingOrder, choices_for, read_board, refusal_of
from dispatch.models import Offer
from dispatch.offers import TakeBackRefused, assign_by_hand, take_back_order
from orders.models import Order
from tracking.page_data import map_tiles
from tracking.services import DriverRefused

VIEW = "orders.view_drop"
DISPATCH = "orders.dispatch_drop"
REFRESH_SECONDS = 10  # how often the page asks for the map's data again


@admin.register(Offer)
class OfferAdmin(ServiceTimesAdmin, ReadOnlyAdmin):
    """What the dispatcher offered to whom, and the answer: read-only. Whoever may look at
    drops may look at these (no migration grants dispatch.view_offer to a group)."""

    list_display = ["order", "courier", "status", "created_at", "expires_at", "answered_at"]
    list_filter = ["status"]
    list_select_related = ["courier"]
    search_fields = ["order__id", "courier__name"]
    change_list_template = "admin/dispatch/offer/change_list.html"

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(VIEW) or super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.has_perm(VIEW) or super().has_view_permission(request, obj)


def _may_look(request: HttpRequest) -> bool:
    return admin.site.has_permission(request) and request.user.has_perm(VIEW)


def board_view(request: HttpRequest) -> TemplateResponse:
    if not request.user.has_perm(VIEW):
        raise PermissionDenied
    board = read_board()
    may_assign = request.user.has_perm(DISPATCH)
    rows = [
        (order, choices_for(order, board.couriers) if may_assign else []) for order in board.orders
    ]
    context = {
        **admin.site.each_context(request),
        "title": "Dispatch board",
        "board": board,
        "rows": rows,
        "may_assign": may_assign,
        "position_minutes": settings.DISPATCH_POSITION_MINUTES,
        "escalate_minutes": settings.DISPATCH_ESCALATE_MINUTES,
        "map_data": {
            **board_data(board),
            "url": reverse("dispatch_board_data"),
            "refresh_seconds": REFRESH_SECONDS,
            "tiles": map_tiles(),
        },
    }
    return TemplateResponse(request, "admin/dispatch/board.html", context)


@never_cache
def board_data_view(request: HttpRequest) -> HttpResponse:
    """The map's data as JSON (the page asks every REFRESH_SECONDS): bounded like the page."""
    if not _may_look(request):
        return error_response(request, 403, "FORBIDDEN", "Sign in to the console as an operator.")
    if request.method != "GET":
        return error_response(
            request, 405, "METHOD_NOT_ALLOWED", "Use GET.", headers={"Allow": "GET"}
        )
    return envelope(board_data(read_board()))


def board_data(board: Board) -> dict:
    return {
        "at": iso_z(board.at),
        # The page's own words for the time ("As of …"), so the map's caption reads the
        # same, never the browser's clock and zone.
        "at_shown": when_text(board.at, "seconds"),
        "waiting": board.waiting,
        "online": board.online,
        "orders": [_order_data(order) for order in board.orders],
        "couriers": [_courier_data(courier) for courier in board.couriers],
    }


def _courier_data(courier: BoardCourier) -> dict:
    position = courier.position
    return {
        "courier_id": courier.courier_id,
        "name": courier.name,
        "vehicle": courier.vehicle,
        "state": courier.state.value,
        "position": None
        if position is None
        else {
            "lat": position.lat,
            "long": position.long,
            "at": iso_z(position.at),
            "live": position.live,
        },
        # Their run's stops still to do, in riding order: the map draws it as a line.
        "run": [{"kind": stop.kind, "lat": stop.lat, "long": stop.long} for stop in courier.run],
    }


def _order_data(order: WaitingOrder) -> dict:
    offer = order.offer
    return {
        "order_id": str(order.order_id),
        "business": order.business,
        "for_business": order.for_business,
        "pickup": {"name": order.pickup_name, "lat": order.lat, "long": order.long},
        "drops": order.drops,
        "vehicle": order.vehicle,
        "waiting_since": iso_z(order.waiting_since),
        "flagged_at": iso_z(order.flagged_at),
        "at_risk": order.at_risk,
        "window_end": iso_z(order.window_end),
        "offer": None
        if offer is None
        else {"courier": offer.courier, "expires_at": iso_z(offer.expires_at)},
    }


def assign_view(request: HttpRequest) -> HttpResponse:
    """POST order, courier: the order's waiting drops to the courier, then back to the board
    with what happened said in a message. Anything wrong is a message, never a 500."""
    if not request.user.has_perm(DISPATCH):
        raise PermissionDenied
    back = redirect(reverse("dispatch_board"))
    if request.method != "POST":
        return back
    order, courier = _posted(request)
    if order is None or courier is None:
        messages.error(request, "Choose an order and a courier from the board. Nothing changed.")
        return back
    refusal = refusal_of(order=order, courier=courier)
    if refusal is None:
        try:
            result = assign_by_hand(order=order, courier=courier, actor=_actor(request))
        except DriverRefused as refused:
            refusal = str(refused)
        else:
            if not result.moved:
                refusal = "This order no longer waits for a courier. Nothing changed."
    if refusal is not None:
        messages.error(request, refusal)
        return back
    record(request, result.moved, f"Assigned by hand to courier {courier} (id {courier.pk}).")
    messages.success(
        request,
        f"Order of {order.pickup_name}: {len(result.moved)} drop(s) assigned to {courier}.",
    )
    return back


def take_back_view(request: HttpRequest) -> HttpResponse:
    """POST order: take it back from its courier before pickup (dispatch.offers.
    take_back_order), then back to the board with what happened said in a message."""
    if not request.user.has_perm(DISPATCH):
        raise PermissionDenied
    back = redirect(reverse("dispatch_board"))
    if request.method != "POST":
        return back
    try:
        order = Order.objects.filter(pk=UUID(request.POST.get("order", ""))).first()
    except ValueError:
        order = None
    if order is None:
        messages.error(request, "Choose an order from the board. Nothing changed.")
        return back
    try:
        taken = take_back_order(order=order, actor=_actor(request))
    except TakeBackRefused as refused:
        messages.error(request, f"Order of {order.pickup_name}: {refused}")
        return back
    courier = taken.courier
    record(request, taken.moved, f"Taken back from courier {courier} (id {courier.pk}).")
    messages.success(
        request,
        f"Order of {order.pickup_name}: {len(taken.moved)} drop(s) taken back from {courier}; "
        "it waits for another courier.",
    )
    return back


def _posted(request: HttpRequest) -> tuple[Order | None, Driver | None]:
    """The order and the courier the form names; None for one that is missing or unknown."""
    try:
        order_id = UUID(request.POST.get("order", ""))
        courier_id = int(request.POST.get("courier", ""))
    except ValueError:
        return None, None
    if not 0 < courier_id < 2**63:  # a bigint: past it PostgreSQL refuses the query
        return None, None
    order = Order.objects.filter(pk=order_id).first()
    courier = Driver.objects.filter(pk=courier_id).first()
    return order, courier


# Under /admin/dispatch/board/ (config/urls.py): Django admin's own URLs have no place for a
# page of the site's that is no model's, so these come before them, behind admin_view.
urlpatterns = [
    path("", admin.site.admin_view(board_view), name="dispatch_board"),
    path("data/", board_data_view, name="dispatch_board_data"),
    path("assign/", admin.site.admin_view(assign_view), name="dispatch_board_assign"),
    path("take-back/", admin.site.admin_view(take_back_view), name="dispatch_board_take_back"),
]
