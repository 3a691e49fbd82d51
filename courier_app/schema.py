"""The courier API on the wire (docs/contract.md §20): its own tag and security scheme."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import serializers

from core.openapi import (
    BAD_REQUEST,
    UNAUTHENTICATED,
    failure,
    one_of,
    operation,
    shape,
    success,
)
from courier_app.inputs import COURIER_FAILURE_REASONS, COURIER_MOVES

TAG = "courier"


class CourierTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer crr_…` (courier_app.auth.CourierAuthentication)."""

    target_class = "courier_app.auth.CourierAuthentication"
    name = "CourierToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "crr_<40 chars>",
            "description": (
                "A courier token from POST /courier/session (or the courier app's session). "
                "Business API keys answer 401 here, and courier tokens 401 everywhere else."
            ),
        }


_ADDRESS_HELP = "The address object as the business sent it (null when it gave coordinates)."
_ADDRESS_TEXT_HELP = (
    "The address as one line to read: its complete_address, else its parts joined; "
    '"" when there is none (then the coordinates are where to go).'
)
SignIn = shape(
    "CourierSignIn",
    phone=serializers.CharField(
        help_text="E.164, as the courier was created with; spaces, dashes, dots and brackets "
        "between the digits are fine (+855 12 345 678)."
    ),
    password=serializers.CharField(),
)
Token = shape(
    "CourierToken",
    token=serializers.CharField(help_text="crr_ + 40 characters; shown once."),
    courier_id=serializers.IntegerField(),
)
Status = shape("CourierStatus", online=serializers.BooleanField())
Place = shape(
    "CourierPlace",
    name=serializers.CharField(),
    phone=serializers.CharField(),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
    address=serializers.JSONField(allow_null=True, help_text=_ADDRESS_HELP),
    address_text=serializers.CharField(help_text=_ADDRESS_TEXT_HELP),
)
Parcel = shape(
    "CourierParcel",
    size=serializers.CharField(),
    weight_kg=serializers.FloatField(help_text="In kg: a number, as in tracking entries."),
    description=serializers.CharField(allow_null=True),
)
Cod = shape(
    "CourierCod",
    amount=serializers.CharField(help_text="The cash to collect at the door."),
    collected=serializers.BooleanField(),
)
Stop = shape(
    "CourierStop",
    drop_id=serializers.UUIDField(),
    stop_sequence=serializers.IntegerField(),
    client_order_id=serializers.CharField(),
    status=serializers.CharField(),
    recipient_first_name=serializers.CharField(),
    phone=serializers.CharField(),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
    address=serializers.JSONField(allow_null=True, help_text=_ADDRESS_HELP),
    address_text=serializers.CharField(help_text=_ADDRESS_TEXT_HELP),
    notes=serializers.CharField(allow_null=True),
    parcel=Parcel(),
    cod=Cod(allow_null=True),
    needs_pin=serializers.BooleanField(),
)
Route = shape(
    "CourierRoute",
    pass_order_id=serializers.UUIDField(),
    vehicle=serializers.CharField(),
    pickup=Place(),
    stops=Stop(many=True),
)
RouteOut = shape("CourierRouteOut", route=Route(allow_null=True))
StopOut = shape("CourierStopOut", stop=Stop())
MoveIn = shape(
    "CourierMove",
    to=one_of(list(COURIER_MOVES)),
    pin=serializers.CharField(required=False, help_text="The recipient's 4-digit PIN."),
    received_by=serializers.CharField(required=False),
    reason=one_of(list(COURIER_FAILURE_REASONS), required=False),
    cod_collected=serializers.BooleanField(required=False),
)
PointIn = shape(
    "CourierPoint",
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
    at=serializers.DateTimeField(),
    accuracy=serializers.FloatField(required=False, help_text="Metres."),
)
LocationIn = shape("CourierLocation", points=PointIn(many=True))
LocationOut = shape(
    "CourierLocationOut",
    received=serializers.IntegerField(),
    stored=serializers.IntegerField(help_text="New points: older or future ones are ignored."),
)

OfferPickup = shape(
    "CourierOfferPickup",
    name=serializers.CharField(),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
    address=serializers.JSONField(allow_null=True, help_text=_ADDRESS_HELP),
    address_text=serializers.CharField(help_text=_ADDRESS_TEXT_HELP),
)
OfferDrop = shape(
    "CourierOfferDrop",
    drop_id=serializers.UUIDField(),
    stop_sequence=serializers.IntegerField(allow_null=True),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
)
Offer = shape(
    "CourierOffer",
    offer_id=serializers.UUIDField(),
    pass_order_id=serializers.UUIDField(),
    expires_at=serializers.DateTimeField(),
    vehicle=serializers.CharField(),
    pickup=OfferPickup(),
    drops=OfferDrop(many=True),
)
OfferOut = shape("CourierOfferOut", offer=Offer(allow_null=True))
Declined = shape("CourierDeclined", offer_id=serializers.UUIDField(), status=one_of(["declined"]))

COURIER_CALL = {401: UNAUTHENTICATED}
OFFER_GONE = failure(
    "CourierOfferGone", 409, ["OFFER_GONE"], "The offer expired, was answered, or its order went."
)
OFFER_NOT_FOUND = failure("CourierOfferNotFound", 404, ["NOT_FOUND"], "Not an offer of yours.")
MOVE_REFUSED = failure(
    "CourierMoveRefused",
    409,
    ["ILLEGAL_TRANSITION"],
    "The drop cannot make this move from where it is.",
)
MOVE_UNPROCESSABLE = failure(
    "CourierMoveUnprocessable",
    422,
    ["WRONG_PIN", "COD_NOT_COLLECTED"],
    "WRONG_PIN: the PIN is missing or wrong. COD_NOT_COLLECTED: deliver a COD drop with "
    "cod_collected: true.",
)

SIGN_IN = operation(
    "courier_session_create",
    TAG,
    "Sign a courier in",
    "Phone and password for a bearer token (the dashboard's sign-in throttle applies).",
    request=SignIn,
    responses={200: success("CourierTokenOut", Token), 400: BAD_REQUEST, **COURIER_CALL},
    auth=[],
)
STATUS = operation(
    "courier_status",
    TAG,
    "Go online or offline",
    "Only online couriers are offered jobs.",
    request=Status,
    responses={200: success("CourierStatusOut", Status), 400: BAD_REQUEST, **COURIER_CALL},
)
ROUTE = operation(
    "courier_route",
    TAG,
    "The route in stop order",
    "The courier's current order: the pickup, then each drop with what the job needs.",
    responses={200: success("CourierRouteResponse", RouteOut), **COURIER_CALL},
)
MOVE = operation(
    "courier_drop_move",
    TAG,
    "Move a stop",
    "Picked up, delivered (PIN, receiver, photo as multipart field `photo`, COD collected), "
    "failed with a reason, returning, returned. The same move sent twice answers the stop.",
    request=MoveIn,
    responses={
        200: success("CourierStopResponse", StopOut),
        400: BAD_REQUEST,
        404: failure("CourierNotFound", 404, ["NOT_FOUND"], "Not a drop of this courier."),
        409: MOVE_REFUSED,
        422: MOVE_UNPROCESSABLE,
        **COURIER_CALL,
    },
)
LOCATION = operation(
    "courier_location",
    TAG,
    "Report positions",
    "Up to 100 points; the newest becomes the courier's position, every new one joins the "
    "24 h trail.",
    request=LocationIn,
    responses={
        200: success("CourierLocationResponse", LocationOut),
        400: BAD_REQUEST,
        **COURIER_CALL,
    },  # fmt: skip
)
OFFER = operation(
    "courier_offer",
    TAG,
    "The job offered",
    "The order offered to this courier, with its pickup and drops in stop order, and when "
    "the offer expires (OFFER_SECONDS after it was made); null without one.",
    responses={200: success("CourierOfferResponse", OfferOut), **COURIER_CALL},
)
ACCEPT = operation(
    "courier_offer_accept",
    TAG,
    "Accept an offer",
    "Every waiting drop of the order becomes ASSIGNED to this courier; the answer is the "
    "route. Sent again, the same answer.",
    request=None,
    responses={
        200: success("CourierAcceptResponse", RouteOut),
        404: OFFER_NOT_FOUND,
        409: OFFER_GONE,
        **COURIER_CALL,
    },
)
DECLINE = operation(
    "courier_offer_decline",
    TAG,
    "Decline an offer",
    "The order goes to the next nearest courier; never back to this one.",
    request=None,
    responses={
        200: success("CourierDeclineResponse", Declined),
        404: OFFER_NOT_FOUND,
        409: OFFER_GONE,
        **COURIER_CALL,
    },
)
