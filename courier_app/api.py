"""HTTP of the courier API, /api/v1/courier/ (docs/contract.md §20): thin actions that parse,
call a service, and answer in the §3 envelope."""

from __future__ import annotations

import uuid

from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny

from accounts import ratelimit
from core.api import ApiError, JsonParser, envelope, json_body
from courier_app.auth import CourierAuthentication, IsCourier
from courier_app.inputs import (
    parse_move,
    parse_points,
    parse_sign_in,
    parse_status,
    proof_photo,
)
from courier_app.schema import ACCEPT, DECLINE, LOCATION, MOVE, OFFER, ROUTE, SIGN_IN, STATUS
from courier_app.selectors import (
    courier_drop,
    offer_view,
    route_of,
    stop_of,
    stop_sequence_of,
)
from courier_app.services import CourierMoveRefused, move_as_courier
from couriers.services import issue_token, record_points, sign_in
from dispatch.models import Offer
from dispatch.offers import (
    OfferGone,
    accept_offer,
    decline_offer,
    open_offer_of,
    set_availability,
)
from tracking.courier_events import report_courier_position
from tracking.services import store_proof_photo

MOVE_REFUSAL_STATUS = {"ILLEGAL_TRANSITION": 409, "WRONG_PIN": 422, "COD_NOT_COLLECTED": 422}


class CourierSessionViewSet(viewsets.ViewSet):
    """POST /courier/session: phone and password for a bearer token."""

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


class CourierViewSet(viewsets.ViewSet):
    """The courier app's actions, for the signed-in courier."""

    authentication_classes = [CourierAuthentication]
    permission_classes = [IsCourier]
    throttle_classes: list = []

    @STATUS
    @action(detail=False, methods=["post"])
    def status(self, request):
        courier = request.auth.courier
        online = set_availability(courier=courier, online=parse_status(json_body(request)))
        return envelope({"online": online})

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
        return envelope({"route": route_of(request.auth.courier)})

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
        if drop is None:
            raise ApiError(404, "NOT_FOUND", "No drop of yours has this id.")
        body = request.data.dict() if hasattr(request.data, "dict") else json_body(request)
        move = parse_move(body)
        upload = proof_photo(request.FILES.get("photo"))
        photo = store_proof_photo(upload) if upload is not None else None
        try:
            made = move_as_courier(courier=courier, drop=drop, move=move, photo=photo)
        except CourierMoveRefused as refused:
            if photo is not None:  # nothing moved: the photo proves nothing
                default_storage.delete(photo)
            raise ApiError(MOVE_REFUSAL_STATUS[refused.code], refused.code, str(refused)) from None
        return envelope({"stop": stop_of(made.drop, stop_sequence_of(made.drop))})


def _answer_offer(answer, courier, offer_id: str) -> Offer:
    """Accept or decline: 404 for an offer that is not the courier's, 409 OFFER_GONE when
    it is no longer open."""
    try:
        return answer(courier=courier, offer_id=uuid.UUID(offer_id))
    except (ValueError, Offer.DoesNotExist):
        raise ApiError(404, "NOT_FOUND", "No offer of yours has this id.") from None
    except OfferGone as gone:
        raise ApiError(409, "OFFER_GONE", str(gone)) from None
