"""The courier app's pages, /courier/ (docs/couriers.md, docs/contract.md §20): sign in and
out, the home page (online status, the offer, the route), and plain form posts for going
online, answering an offer and moves, so the app works without JavaScript; with it,
courier.js sends the same to the JSON API, and queues moves while the phone has no network
(never an offer's answer: an offer expires)."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from core.api import ApiError
from core.formats import iso_z, moment_of
from couriers.api import MOVE_REFUSAL_STATUS
from couriers.auth import courier_of_session, sign_in_session, sign_out_session
from couriers.cash import in_hand_shown
from couriers.changes import confirmation, route_tag
from couriers.forms import CourierSignInForm
from couriers.inputs import (
    COURIER_FAILURE_REASONS,
    COURIER_MOVES,
    parse_move,
    proof_photo,
    proof_signature,
)
from couriers.moves import CourierMoveRefused, move_as_courier
from couriers.selectors import courier_drop, offer_view, route_of
from couriers.services import set_online, shift_end_problem
from dispatch.models import Offer
from dispatch.offers import (
    OfferGone,
    accept_offer,
    decline_offer,
    open_offer_of,
)
from geo.geometry import haversine_km
from orders.models import Drop, DropStatus, FailureReason, UndeliverableAction
from orders.runs import DROP, PICKUP
from orders.statuses import TO_RETURN
from tracking.lifecycle import ALLOWED
from tracking.services import store_proof_photo, store_signature

# What the courier reads when a move is refused; the service's own words for the others.
# In English here (what the tests compare); shown in the page's language (gettext at use).
MOVE_MESSAGES = {
    "COD_NOT_COLLECTED": gettext_noop("Collect the cash first, then tick “Cash collected”."),
    "SCAN_MISMATCH": gettext_noop(
        "Scan the code on this parcel's label (or type it): it did not match."
    ),
    "SIGNATURE_REQUIRED": gettext_noop("Let the recipient sign in the box, then press Delivered."),
}
# How often the app reads and sends the phone's position while online (docs/contract.md §20).
POSITION_SECONDS = 15
# How often the app asks for an offer while online with none shown (docs/couriers.md).
OFFER_POLL_SECONDS = 10
# How often the app asks whether its route changed, while the phone has a network (§24).
ROUTE_CHECK_SECONDS = 15
OFFER_GONE = _("This offer is gone: it expired or was taken.")
# The "Until" time of the go-online form: HH:MM, as a browser's <input type="time"> sends it.
UNTIL_FORMAT = "%H:%M"
UNTIL_PAST = _("That time has passed: choose a later time for the end of your shift, or none.")
UNTIL_UNREADABLE = _("Type the time your shift ends as HH:MM, such as 18:00.")
# The courier's words for the reasons and statuses (the models' labels are the console's).
FAILURE_WORDS = {
    FailureReason.RECIPIENT_UNAVAILABLE: _("Recipient unavailable"),
    FailureReason.ADDRESS_NOT_FOUND: _("Address not found"),
    FailureReason.REFUSED: _("Refused by the recipient"),
    FailureReason.WRONG_PIN: _("Wrong PIN (three times)"),
    FailureReason.OTHER: _("Other"),
}
FAILURE_CHOICES = [(r, FAILURE_WORDS[r]) for r in COURIER_FAILURE_REASONS]
STATUS_WORDS = {
    DropStatus.SCHEDULED: _("Scheduled"),
    DropStatus.PENDING: _("Pending"),
    DropStatus.ASSIGNED: _("Assigned"),
    DropStatus.PICKED_UP: _("Picked up"),
    DropStatus.DELIVERED: _("Delivered"),
    DropStatus.FAILED: _("Failed"),
    DropStatus.RETURNING: _("Returning"),
    DropStatus.RETURNED: _("Returned"),
    DropStatus.CANCELLED: _("Cancelled"),
}


@require_safe
def home_view(request: HttpRequest) -> HttpResponse:
    """The signed-in courier's home page; anyone else is sent to sign in (signed out, switched
    off, or their password changed since)."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect("couriers:sign_in")
    return _home_page(request, courier)


@require_http_methods(["GET", "HEAD", "POST"])
def sign_in_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        if courier_of_session(request) is not None:
            return redirect("couriers:home")
        return _sign_in_page(request, CourierSignInForm(request=request))
    form = CourierSignInForm(request.POST, request=request)
    if not form.is_valid():
        return _sign_in_page(request, form, status=429 if form.locked_out else 200)
    sign_in_session(request, form.courier)
    return redirect("couriers:home")


@require_POST
def sign_out_view(request: HttpRequest) -> HttpResponse:
    """The app's menu's Sign out (a form post with the CSRF token): the same as
    DELETE /api/v1/courier/session with the app's session."""
    sign_out_session(request)
    return redirect("couriers:sign_in")


@require_POST
def status_view(request: HttpRequest) -> HttpResponse:
    """Online or offline by a plain form post (courier.js uses POST /api/v1/courier/status
    unless an "Until" time is typed); going online, an optional "Until" time ends the shift
    (today, in the service's zone): a time already past is refused, saying so."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect("couriers:home")
    online = request.POST.get("online") == "true"
    typed = request.POST.get("until", "") if online else ""  # offline has no shift
    shift_ends_at, refused = _shift_end_typed(typed)
    if refused:
        return _home_page(request, courier, notice=refused, status=400)
    set_online(courier=courier, online=online, shift_ends_at=shift_ends_at)
    return redirect("couriers:home")


def _shift_end_typed(typed: str) -> tuple[datetime | None, str]:
    """The shift's end of an "Until" time (HH:MM today in the service's zone, the courier's
    day), and why it is refused (the page's language), if it is; nothing typed, no end."""
    typed = typed.strip()
    if not typed:
        return None, ""
    try:
        clock = datetime.strptime(typed, UNTIL_FORMAT).time()
    except ValueError:
        return None, str(UNTIL_UNREADABLE)
    now = timezone.now()
    ends = timezone.make_aware(datetime.combine(timezone.localdate(now), clock))
    if shift_end_problem(shift_ends_at=ends, now=now) is not None:  # past: later is within 24 h
        return None, str(UNTIL_PAST)
    return ends, ""


@require_POST
def accept_offer_view(request: HttpRequest, offer_id: uuid.UUID) -> HttpResponse:
    """Take the offer: the home page at the route, in stop order (docs/couriers.md)."""
    return _answer_offer(request, offer_id, accept_offer, then="#route")


@require_POST
def decline_offer_view(request: HttpRequest, offer_id: uuid.UUID) -> HttpResponse:
    """No confirmation: the next run of the dispatcher offers it to the next courier."""
    return _answer_offer(request, offer_id, decline_offer, then="")


def _answer_offer(request: HttpRequest, offer_id: uuid.UUID, answer, *, then: str):
    """Someone else's offer does not exist for this courier (404); one no longer open comes
    back as the home page without it, saying so (409, as the API's OFFER_GONE)."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect("couriers:home")
    try:
        answer(courier=courier, offer_id=offer_id)
    except Offer.DoesNotExist:
        raise Http404("No offer of yours has this id.") from None
    except OfferGone:
        return _home_page(request, courier, notice=OFFER_GONE, status=409)
    return redirect(reverse("couriers:home") + then)


@require_POST
def move_view(request: HttpRequest, drop_id: uuid.UUID) -> HttpResponse:
    """A move by a plain form post; refused, the home page again with the reason at the stop
    (and the API's status for it)."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect("couriers:home")
    drop = courier_drop(courier, drop_id)
    if drop is None:
        raise Http404("No drop of yours has this id.")
    fields = {
        name: value
        for name, value in request.POST.items()
        if name != "csrfmiddlewaretoken" and value != ""
    }
    photo = signature = None
    try:
        move = parse_move(fields)
        upload = proof_photo(request.FILES.get("photo"))
        signed = proof_signature(request.FILES.get("signature"))
        photo = store_proof_photo(upload) if upload is not None else None
        # Kept only for a drop that asks for one (tracking.lifecycle): none stored otherwise.
        asked = signed is not None and drop.needs_signature
        signature = store_signature(signed) if asked else None
        made = move_as_courier(
            courier=courier, drop=drop, move=move, photo=photo, signature=signature
        )
    except ApiError as refused:
        return _home_page(request, courier, error=(drop.pk, _said(refused)), status=400)
    except CourierMoveRefused as refused:
        for kept in (photo, signature):  # the move was not made: its proof proves nothing
            if kept:
                default_storage.delete(kept)
        message = (
            gettext(MOVE_MESSAGES[refused.code]) if refused.code in MOVE_MESSAGES else str(refused)
        )
        status = MOVE_REFUSAL_STATUS[refused.code]
        return _home_page(request, courier, error=(drop.pk, message), status=status)
    messages.success(request, confirmation(made.drop))  # shown once, on the next page
    return redirect(reverse("couriers:home") + f"#stop-{drop.pk}")


def _said(error: ApiError) -> str:
    if not error.details:
        return error.message
    return " ".join(
        f"{d['field'].replace('_', ' ').capitalize()}: {d['message']}" for d in error.details
    )


def _sign_in_page(request: HttpRequest, form: CourierSignInForm, status: int = 200):
    return _page(render(request, "couriers/sign_in.html", {"form": form}, status=status))


def _home_page(
    request: HttpRequest, courier, *, error=None, notice: str = "", status: int = 200
) -> HttpResponse:
    as_of = timezone.now()  # as the API's: the app's first check asks for changes since then
    route = route_of(courier)
    stops = _stops_shown(route["stops"], error) if route else []
    # The planner adds to runs (docs/contract.md §21): an online courier sees their offer
    # whether or not they hold a run, and the page asks for one while none shows.
    offer = _offer_shown(open_offer_of(courier), stops) if courier.online else None
    context = {
        "courier": courier,
        "first_name": courier.name.split(" ")[0],
        "notice": notice,
        "offer": offer,
        "wants_offer": courier.online and offer is None,
        "offer_poll_seconds": OFFER_POLL_SECONDS,
        "route": route,
        "stops": stops,
        "failure_choices": FAILURE_CHOICES,
        "move_messages": {code: gettext(text) for code, text in MOVE_MESSAGES.items()},
        "max_points": settings.MAX_COURIER_POINTS,
        "position_seconds": POSITION_SECONDS,
        "route_check_seconds": ROUTE_CHECK_SECONDS,
        "route_version": route_tag(route, courier),
        "shift_ends": timezone.localtime(courier.shift_ends_at) if courier.shift_ends_at else None,
        "shift_ended": courier.shift_ends_at is not None and courier.shift_ends_at <= as_of,
        "route_as_of": iso_z(as_of),
        "cash_in_hand": in_hand_shown(courier),
    }
    return _page(render(request, "couriers/home.html", context, status=status))


def _offer_shown(offer: Offer | None, run: list[dict]) -> dict | None:
    """The offer as the card shows it: its API view; what it adds (each order's shop and
    drops); the run's new stop order, each stop named and with its distance from the one
    before (as the crow flies), the added ones marked when the courier already has a run
    (`run`: the route's stops as shown); and when it expires (local time, and the seconds
    left, which the phone counts down on its own monotonic clock: a phone's wall clock may
    be wrong)."""
    if offer is None:
        return None
    shown = offer_view(offer)
    added = {order["pass_order_id"]: order for order in shown["orders"]}
    named = {(stop["pass_order_id"], stop["drop_id"]): stop["name"] for stop in run}
    marked = any(stop["pass_order_id"] not in added for stop in shown["stops"])
    stops, here = [], None
    for number, stop in enumerate(shown["stops"], start=1):
        new = stop["pass_order_id"] in added
        shop = added[stop["pass_order_id"]]["pickup"]["name"] if new else None
        there = (stop["lat"], stop["long"])
        stops.append(
            {
                "number": number,
                "what": _offered_stop_name(stop, shop, named),
                "new": new and marked,
                "km": None if here is None else f"{haversine_km(*here, *there):.1f}",
            }
        )
        here = there
    left = (offer.expires_at - timezone.now()).total_seconds()
    return {
        **shown,
        "stops": stops,
        "expires_local": timezone.localtime(offer.expires_at),
        "seconds_left": max(0, math.ceil(left)),
    }


def _offered_stop_name(stop: dict, shop: str | None, named: dict) -> str:
    """A stop of the offer in words: an added pickup by its shop, an added drop by whose
    parcel it is (the recipient shows once the job is the courier's), a stop of the run as
    the route names it."""
    if stop["kind"] == PICKUP:
        name = shop or named.get((stop["pass_order_id"], None), "")
        return gettext("Pickup · %(shop)s") % {"shop": name}
    if shop is not None:
        return gettext("Drop for %(shop)s") % {"shop": shop}
    return named.get((stop["pass_order_id"], stop["drop_id"])) or gettext("Drop")


def _window_shown(window: dict | None) -> dict | None:
    """A drop's window as the page shows it: its start and end in the service's zone."""
    if window is None:
        return None
    start, end = (moment_of(window[edge]) for edge in ("start", "end"))
    return {"start": timezone.localtime(start), "end": timezone.localtime(end)}


def _stops_shown(stops: list[dict], error) -> list[dict]:
    """Each stop of the route with what the page adds: a pickup's parcels to take there or
    bring back; a drop's moves its status allows, the currency of its cash, and the refusal
    of a move just posted; the navigation links of a stop still to do."""
    drop_ids = [stop["drop_id"] for stop in stops if stop["kind"] == DROP]
    facts = {
        str(pk): (action, currency)
        for pk, action, currency in Drop.objects.filter(pk__in=drop_ids).values_list(
            "pk", "undeliverable_action", "currency"
        )
    }
    back = [
        stop
        for stop in stops
        if stop["kind"] == DROP
        and stop["status"] in TO_RETURN
        and facts[stop["drop_id"]][0] == UndeliverableAction.RETURN
    ]
    shown = []
    for stop in stops:
        if stop["kind"] == PICKUP:
            shown.append(_pickup_shown(stop, stops, back))
            continue
        action, currency = facts.get(stop["drop_id"], (None, ""))
        mine = error is not None and str(error[0]) == stop["drop_id"]
        shown.append(
            {
                **stop,
                "status_label": STATUS_WORDS.get(stop["status"], stop["status"]),
                "moves": _moves_of(stop, action),
                "currency": currency,
                "links": None if stop["done"] else _navigation(stop),
                "window": _window_shown(stop["dropoff_window"]),
                "error": error[1] if mine else None,
            }
        )
    return shown


def _pickup_shown(pickup: dict, stops: list[dict], back: list[dict]) -> dict:
    """A pickup with the parcels to take there (its order's drops still waiting: ASSIGNED)
    and those to bring back (failed, to return), by client_order_id in the run's order; its
    address and links while either is left, even once done."""
    order_id = pickup["pass_order_id"]
    parcels = [
        stop["client_order_id"]
        for stop in stops
        if stop["kind"] == DROP
        and stop["pass_order_id"] == order_id
        and stop["status"] == DropStatus.ASSIGNED
    ]
    returns = [stop["client_order_id"] for stop in back if stop["pass_order_id"] == order_id]
    wanted = not pickup["done"] or returns
    return {
        **pickup,
        "parcels": parcels,
        "returns": returns,
        "links": _navigation(pickup) if wanted else None,
    }


def _moves_of(stop: dict, undeliverable_action) -> list[str]:
    """The moves a drop's status allows the courier; a return only for a drop that returns."""
    moves = [to for to in COURIER_MOVES if to in ALLOWED[stop["status"]]]
    if undeliverable_action != UndeliverableAction.RETURN:
        moves = [to for to in moves if to != DropStatus.RETURNING]
    return moves


def _navigation(place: dict) -> dict:
    at = f"{place['lat']},{place['long']}"
    return {
        "maps": "https://www.google.com/maps/dir/?" + urlencode({"api": 1, "destination": at}),
        "geo": f"geo:{at}",
        "at": at,
    }


def _page(response: HttpResponse) -> HttpResponse:
    """The route holds recipients' phones: never cached, nothing loaded from elsewhere."""
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "same-origin"
    response["Content-Security-Policy"] = (
        "default-src 'none'; script-src 'self'; style-src 'self'; font-src 'self'; "
        "img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )
    return response
