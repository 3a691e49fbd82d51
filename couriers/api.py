"""HTTP of the courier API, /api/v1/courier/ (docs/contract.md §20): thin actions that parse,
call a service, and answer in the §3 envelope."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

from django.core.files.storage import default_storage
from django.http import HttpResponse
from django.utils import timezone
from rest_framework import exceptions, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny

from accounts import ratelimit
from core.api import ApiError, JsonParser, envelope, json_body
from core.formats import iso_z
from couriers.auth import CourierAuthentication, CourierPrincipal, IsCourier, sign_out_session
from couriers.cash import cash_wire
from couriers.changes import changes_since, confirmation, route_tag
from couriers.history import history_of
from couriers.inputs import (
    parse_move,
    parse_points,
    parse_sign_in,
    parse_since,
    parse_status,
    proof_photo,
    proof_signature,
)
from couriers.moves import CourierMoveRefused, move_as_courier
from couriers.pay import earnings_of, earnings_wire, parse_day
from couriers.schema import (
    ACCEPT,
    CASH,
    DECLINE,
    EARNINGS,
    HISTORY,
    LOCATION,
    MOVE,
    OFFER,
    ROUTE,
    SIGN_IN,
    SIGN_OUT,
    STATUS,
)
from couriers.selectors import (
    courier_drop,
    offer_view,
    route_of,
    stop_number_of,
    stop_of,
)
from couriers.services import (
    issue_token,
    record_points,
    report_courier_position,
    revoke_token,
    set_online,
    sign_in,
)
from dispatch.models import Offer
from dispatch.offers import (
    OfferGone,
    accept_offer,
    decline_offer,
    open_offer_of,
)
from tracking.services import store_proof_photo, store_signature

# The refusals that answer the courier's route as it is now (docs/contract.md §24): the stop
# can no longer move, or is no longer theirs.
ROUTE_WITH = frozenset({"ILLEGAL_TRANSITION", "NOT_FOUND"})
MOVE_REFUSAL_STATUS = {
    "NOT_FOUND": 404,  # taken from the courier between their look and the move
    "ILLEGAL_TRANSITION": 409,
    "WRONG_PIN": 422,
    "COD_NOT_COLLECTED": 422,
    "SCAN_MISMATCH": 422,
    "SIGNATURE_REQUIRED": 422,
}
# A change may be stamped a moment before the `as_of` of a route read that did not see it yet
# (its transaction committed just after that read): changes are read this far back, and the
# app shows each one once (docs/api.md, "Changes reach the courier").
CHANGES_OVERLAP = timedelta(seconds=5)


class CourierSessionViewSet(viewsets.ViewSet):
    """POST /courier/session: phone and password for a bearer token; DELETE: sign out."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @SIGN_IN
    @action(detail=False, methods=["post"], url_path="session")
    def session(self, request):
        phone, password = parse_sign_in(json_body(request))
        address = ratelimit.client_address(request._request)
        signed = sign_in(phone=phone, password=password, address=address)
        if signed.locked:
            raise ApiError(429, "RATE_LIMITED", "Too many failed sign-ins: try again in a while.")
        courier = signed.courier
        if courier is None:
            raise ApiError(
                401,
                "UNAUTHENTICATED",
                "The phone or the password is wrong.",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return envelope({"token": issue_token(courier=courier), "courier_id": courier.pk})

    @SIGN_OUT
    @session.mapping.delete
    def sign_out(self, request):
        """Revoke the token this call carries, or sign the app's session out. A revoked token
        is unknown from then on, so a second DELETE with it is 401 like any other call."""
        principal = _signed_in(request)
        if principal.token_id is None:
            sign_out_session(request._request)
        else:
            revoke_token(token_id=principal.token_id)
        return envelope({"revoked": True})


class CourierViewSet(viewsets.ViewSet):
    """The courier app's actions, for the signed-in courier."""

    authentication_classes = [CourierAuthentication]
    permission_classes = [IsCourier]
    throttle_classes: list = []

    @STATUS
    @action(detail=False, methods=["post"])
    def status(self, request):
        courier, asked = request.auth.courier, parse_status(json_body(request))
        set_online(courier=courier, online=asked.online, shift_ends_at=asked.shift_ends_at)
        return envelope(status_wire(courier))

    @OFFER
    @action(detail=False, methods=["get"])
    def offer(self, request):
        offer = open_offer_of(request.auth.courier)
        return envelope({"offer": None if offer is None else offer_view(offer)})

    @ACCEPT
    @action(detail=False, methods=["post"], url_path=r"offers/(?P<offer_id>[^/]+)/accept")
    def accept(self, request, offer_id: str):
        courier = request.auth.courier
        _answer_offer(accept_offer, courier, offer_id)
        return envelope({"route": route_of(courier)})

    @DECLINE
    @action(detail=False, methods=["post"], url_path=r"offers/(?P<offer_id>[^/]+)/decline")
    def decline(self, request, offer_id: str):
        offer = _answer_offer(decline_offer, request.auth.courier, offer_id)
        return envelope({"offer_id": str(offer.pk), "status": offer.status})

    @ROUTE
    @action(detail=False, methods=["get"])
    def route(self, request):
        """The route; 304 with no body while it is the version the caller has (If-None-Match
        on its ETag); with `since` (an earlier answer's `as_of`), what changed since then."""
        courier = request.auth.courier
        since = parse_since(request.query_params.get("since"))
        as_of = timezone.now()  # before the read: a change after it shows at the next check
        route = route_of(courier)
        tag = f'"{route_tag(route, courier)}"'
        if tag in request.headers.get("If-None-Match", ""):
            return HttpResponse(status=304, headers={"ETag": tag, "Cache-Control": "no-store"})
        data = {
            "route": route,
            "as_of": iso_z(as_of),
            "shift_ends_at": iso_z(courier.shift_ends_at),
        }
        if since is not None:
            changes = changes_since(courier, since - CHANGES_OVERLAP)
            data["changes"] = [change.as_wire() for change in changes]
        answer = envelope(data)
        answer["ETag"], answer["Cache-Control"] = tag, "no-store"
        return answer

    @HISTORY
    @action(detail=False, methods=["get"])
    def history(self, request):
        """The courier's done stops of a day (`date`, default today in the service's zone)."""
        return envelope(history_of(request.auth.courier, day_asked(request)))

    @EARNINGS
    @action(detail=False, methods=["get"])
    def earnings(self, request):
        """The courier's pay of a day (`date`, default today in the service's zone)."""
        courier, day = request.auth.courier, day_asked(request)
        return envelope(earnings_wire(earnings_of(courier=courier, day=day), day))

    @CASH
    @action(detail=False, methods=["get"])
    def cash(self, request):
        """The cash the courier holds, owes, and collected today (docs/contract.md §23)."""
        return envelope(cash_wire(request.auth.courier, timezone.now()))

    @LOCATION
    @action(detail=False, methods=["post"])
    def location(self, request):
        points = parse_points(json_body(request))
        courier = request.auth.courier
        stored = record_points(courier=courier, points=points)
        if stored:  # the businesses hear where their orders are (order.courier_position)
            report_courier_position(courier_id=courier.pk, now=timezone.now())
        return envelope({"received": len(points), "stored": stored})

    @MOVE
    @action(
        detail=False,
        methods=["post"],
        url_path=r"drops/(?P<drop_id>[^/]+)/move",
        parser_classes=[JsonParser, MultiPartParser],
    )
    def move(self, request, drop_id: str):
        courier = request.auth.courier
        try:
            drop = courier_drop(courier, uuid.UUID(drop_id))
        except ValueError:
            drop = None
        if drop is None:  # never theirs, or no longer (taken back): their route as it is now
            route = {"route": route_of(courier)}
            raise ApiError(404, "NOT_FOUND", "No drop of yours has this id.", extra=route)
        body = request.data.dict() if hasattr(request.data, "dict") else json_body(request)
        move = parse_move(body)
        upload = proof_photo(request.FILES.get("photo"))
        signed = proof_signature(request.FILES.get("signature"))
        photo = store_proof_photo(upload) if upload is not None else None
        # Kept only for a drop that asks for one (tracking.lifecycle): none stored otherwise.
        asked = signed is not None and drop.needs_signature
        signature = store_signature(signed) if asked else None
        try:
            made = move_as_courier(
                courier=courier, drop=drop, move=move, photo=photo, signature=signature
            )
        except CourierMoveRefused as refused:
            for kept in (photo, signature):  # nothing moved: its proof proves nothing
                if kept is not None:
                    default_storage.delete(kept)
            # No longer movable (cancelled, done, taken back): the route as it is now.
            gone = {"route": route_of(courier)} if refused.code in ROUTE_WITH else None
            status = MOVE_REFUSAL_STATUS[refused.code]
            raise ApiError(status, refused.code, str(refused), extra=gone) from None
        stop = stop_of(made.drop, stop_number_of(courier, made.drop))
        return envelope({"stop": stop, "message": confirmation(made.drop)})


def status_wire(courier) -> dict:
    """The courier's status as the API answers it: online, and when the shift ends."""
    return {"online": courier.online, "shift_ends_at": iso_z(courier.shift_ends_at)}


def day_asked(request) -> date:
    """The `date` query parameter of history and earnings (default: today in the service's
    zone); a bad one is a 400 naming it."""
    try:
        return parse_day(request.query_params.get("date"), today=timezone.localdate())
    except ValueError as bad:
        details = [{"field": "date", "message": str(bad)}]
        raise ApiError(400, "VALIDATION_ERROR", "A query parameter is wrong.", details) from None


def _signed_in(request) -> CourierPrincipal:
    """The caller of DELETE /courier/session, authenticated here: signing in (the same
    route's POST) takes no credential, so the viewset has no authentication of its own."""
    try:
        found = CourierAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed as failed:
        found, message = None, str(failed.detail)
    else:
        message = "Send the courier token to revoke, or call from the signed-in app."
    if found is None:
        raise ApiError(401, "UNAUTHENTICATED", message, headers={"WWW-Authenticate": "Bearer"})
    return found[1]


def _answer_offer(answer, courier, offer_id: str) -> Offer:
    """Accept or decline: 404 for an offer that is not the courier's, 409 OFFER_GONE when
    it is no longer open."""
    try:
        return answer(courier=courier, offer_id=uuid.UUID(offer_id))
    except (ValueError, Offer.DoesNotExist):
        raise ApiError(404, "NOT_FOUND", "No offer of yours has this id.") from None
    except OfferGone as gone:
        raise ApiError(409, "OFFER_GONE", str(gone)) from None
