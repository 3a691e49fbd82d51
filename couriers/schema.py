"""The courier API on the wire (docs/contract.md §20): its own tag and security scheme."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from core.openapi import (
    BAD_REQUEST,
    QUERY_BAD_REQUEST,
    UNAUTHENTICATED,
    failure,
    money,
    one_of,
    operation,
    shape,
    success,
)
from couriers import inputs

TAG = "courier"


class CourierTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer crr_…` (couriers.auth.CourierAuthentication)."""

    target_class = "couriers.auth.CourierAuthentication"
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
# The request bodies, each from its one declaration (couriers/inputs.py).
SignIn = inputs.SIGN_IN.serializer()
Token = shape(
    "CourierToken",
    token=serializers.CharField(help_text="crr_ + 40 characters; shown once."),
    courier_id=serializers.IntegerField(),
)
Status = inputs.STATUS.serializer()
_SHIFT_ENDS_HELP = "When the courier's shift ends (UTC); null: no end set, or offline."
StatusOut = shape(
    "CourierStatusNow",
    online=serializers.BooleanField(),
    shift_ends_at=serializers.DateTimeField(allow_null=True, help_text=_SHIFT_ENDS_HELP),
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
Verification = shape(
    "CourierVerification",
    pin=serializers.BooleanField(help_text="DELIVERED carries the recipient's 4-digit PIN."),
    scan=serializers.BooleanField(
        help_text="PICKED_UP and DELIVERED carry `scan`: the code on the parcel's label."
    ),
    signature=serializers.BooleanField(
        help_text="DELIVERED carries the recipient's signature (multipart field `signature`)."
    ),
)
Window = shape(
    "CourierWindow",
    start=serializers.DateTimeField(),
    end=serializers.DateTimeField(),
)
Stop = shape(
    "CourierStop",
    kind=one_of(["pickup", "drop"]),
    pass_order_id=serializers.UUIDField(),
    drop_id=serializers.UUIDField(allow_null=True, help_text="null for a pickup."),
    stop_number=serializers.IntegerField(help_text="Its place in the run: 1 is ridden first."),
    stop_sequence=serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="A drop's: its place among its own order's drops, as in tracking.",
    ),
    client_order_id=serializers.CharField(required=False, help_text="A drop's."),
    status=serializers.CharField(
        help_text="A drop's status; a pickup's: ASSIGNED while a parcel of it waits there, "
        "PICKED_UP once none does."
    ),
    done=serializers.BooleanField(
        help_text="A pickup with nothing left to take; a drop delivered, failed, returning, "
        "returned or cancelled: its drop-off is behind it or will never come, and its phone, "
        'place and notes are null (address "").'
    ),
    name=serializers.CharField(help_text="The shop's name; the recipient's first name."),
    recipient_first_name=serializers.CharField(required=False, help_text="A drop's."),
    phone=serializers.CharField(allow_null=True),
    lat=serializers.FloatField(allow_null=True),
    long=serializers.FloatField(allow_null=True),
    address=serializers.CharField(help_text=_ADDRESS_TEXT_HELP),
    notes=serializers.CharField(allow_null=True),
    parcel=Parcel(allow_null=True),
    cod=Cod(allow_null=True),
    dropoff_window=Window(
        allow_null=True,
        help_text="A drop's window, as in tracking (null without one, and for a pickup): hand "
        "over from `start`, never before, by `end`.",
    ),
    needs_pin=serializers.BooleanField(),
    needs_scan=serializers.BooleanField(
        help_text="PICKED_UP and DELIVERED carry `scan`: the code on the parcel's label."
    ),
    needs_signature=serializers.BooleanField(
        required=False,
        help_text="DELIVERED carries the recipient's signature (multipart field `signature`).",
    ),
    verification=Verification(allow_null=True, help_text="A drop's; null for a pickup."),
)
Route = shape(
    "CourierRoute",
    run_id=serializers.UUIDField(help_text="The run: the same while it has a stop to do."),
    version=serializers.CharField(
        help_text="Changes whenever anything on the run changes; the ETag is it, quoted "
        "(followed by the shift's end when one is set, which changes the ETag too)."
    ),
    stops=Stop(
        many=True, help_text="Pickups and drops of every order on the run, in the order to ride."
    ),
)
RouteChange = shape(
    "CourierRouteChange",
    drop_id=serializers.UUIDField(),
    kind=one_of(["cancelled", "edited", "added", "taken_back"]),
    at=serializers.DateTimeField(),
    message=serializers.CharField(help_text="What changed, in words to show the courier."),
)
RouteOut = shape(
    "CourierRouteOut",
    route=Route(allow_null=True),
    as_of=serializers.DateTimeField(help_text="When it was read: the next call's `since`."),
    shift_ends_at=serializers.DateTimeField(allow_null=True, help_text=_SHIFT_ENDS_HELP),
    changes=RouteChange(
        many=True, required=False, help_text="With `since` only: what changed since then."
    ),
)
StopOut = shape(
    "CourierStopOut",
    stop=Stop(),
    message=serializers.CharField(help_text='The move confirmed in words: "Delivered to …".'),
)
HistoryCash = shape("CourierHistoryCash", amount=money(), currency=serializers.CharField())
HistoryStop = shape(
    "CourierHistoryStop",
    drop_id=serializers.UUIDField(),
    client_order_id=serializers.CharField(),
    shop=serializers.CharField(),
    recipient_first_name=serializers.CharField(),
    outcome=one_of(["delivered", "failed", "returned"]),
    at=serializers.DateTimeField(),
    time=serializers.CharField(help_text="HH:MM in the service's time zone."),
    failure_reason=serializers.CharField(allow_null=True),
    cod_collected=HistoryCash(allow_null=True),
)
History = shape(
    "CourierHistory",
    date=serializers.DateField(),
    time_zone=serializers.CharField(),
    stops=HistoryStop(many=True),
    cod_collected=HistoryCash(many=True, help_text="The day's cash collected, per currency."),
)
MoveIn = inputs.MOVE.serializer()
LocationIn = inputs.LOCATION.serializer()
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
    address=serializers.CharField(help_text=_ADDRESS_TEXT_HELP),
)
OfferDrop = shape(
    "CourierOfferDrop",
    drop_id=serializers.UUIDField(),
    stop_sequence=serializers.IntegerField(allow_null=True),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
)
OfferOrder = shape(
    "CourierOfferOrder",
    pass_order_id=serializers.UUIDField(),
    vehicle=serializers.CharField(),
    pickup=OfferPickup(),
    drops=OfferDrop(many=True),
)
OfferStop = shape(
    "CourierOfferStop",
    kind=one_of(["pickup", "drop"]),
    pass_order_id=serializers.UUIDField(),
    drop_id=serializers.UUIDField(allow_null=True),
    lat=serializers.FloatField(),
    long=serializers.FloatField(),
)
Offer = shape(
    "CourierOffer",
    offer_id=serializers.UUIDField(),
    expires_at=serializers.DateTimeField(),
    orders=OfferOrder(many=True, help_text="The orders the offer adds to the run."),
    stops=OfferStop(
        many=True, help_text="The run's stops still to do with the orders in it, in order."
    ),
    extra_minutes=serializers.IntegerField(
        allow_null=True, help_text="How much longer the run takes with them."
    ),
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
    "The drop cannot make this move from where it is (cancelled, done, or moved by someone "
    "else): `error.message` says why in words and `error.route` is the route as it is now.",
)
MOVE_UNPROCESSABLE = failure(
    "CourierMoveUnprocessable",
    422,
    ["WRONG_PIN", "COD_NOT_COLLECTED", "SCAN_MISMATCH", "SIGNATURE_REQUIRED"],
    "WRONG_PIN: the PIN is missing or wrong. COD_NOT_COLLECTED: deliver a COD drop with "
    "cod_collected: true. SCAN_MISMATCH: `scan` is missing or not the drop's short_code. "
    "SIGNATURE_REQUIRED: deliver a drop that needs_signature with its `signature`. "
    "Nothing moves.",
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
SIGN_OUT = operation(
    "courier_session_destroy",
    TAG,
    "Sign a courier out",
    "Revokes the token this call carries (the courier's other tokens keep working); with "
    "the app's session instead, signs that session out. The revoked token is then 401.",
    request=None,
    responses={
        200: success(
            "CourierSignedOut", shape("CourierSignOut", revoked=serializers.BooleanField())
        ),
        **COURIER_CALL,
    },
    auth=[{"CourierToken": []}],
)
STATUS = operation(
    "courier_status",
    TAG,
    "Go online or offline",
    "Only online couriers are offered jobs, and nothing that would keep them past the end "
    "of their shift (`shift_ends_at`, set when going online). The answer is the status now.",
    request=Status,
    responses={200: success("CourierStatusOut", StatusOut), 400: BAD_REQUEST, **COURIER_CALL},
)
ROUTE = operation(
    "courier_route",
    TAG,
    "The route in stop order",
    "The courier's current order: the pickup, then each drop with what the job needs. "
    "Send If-None-Match with the ETag to get 304 (no body) while nothing changed, and "
    "`since` (an earlier answer's `as_of`) for what changed since then, in words.",
    parameters=[
        OpenApiParameter(
            "since",
            OpenApiTypes.DATETIME,
            OpenApiParameter.QUERY,
            description="An earlier answer's as_of: the answer then lists `changes`.",
        )
    ],
    responses={
        200: success("CourierRouteResponse", RouteOut),
        304: OpenApiResponse(description="Not modified: the route is the If-None-Match one."),
        400: QUERY_BAD_REQUEST,
        **COURIER_CALL,
    },
)
# The day of history and earnings (couriers.api.day_asked).
DAY = OpenApiParameter(
    "date",
    OpenApiTypes.DATE,
    OpenApiParameter.QUERY,
    description="YYYY-MM-DD; default today in Asia/Phnom_Penh.",
)
HISTORY = operation(
    "courier_history",
    TAG,
    "The day's done stops",
    "The stops the courier delivered, failed or returned on a day, in order, with the time, "
    "the outcome and the cash collected; never the recipient's phone or address.",
    parameters=[DAY],
    responses={
        200: success("CourierHistoryResponse", History),
        400: QUERY_BAD_REQUEST,
        **COURIER_CALL,
    },
)
MOVE = operation(
    "courier_drop_move",
    TAG,
    "Move a stop",
    "Picked up, delivered (PIN, receiver, photo as multipart field `photo`, COD collected), "
    "failed with a reason, returning, returned; the answer says what it did in words. The "
    "same move sent twice answers the stop (once done, without the recipient's phone or "
    "place) and records nothing twice. "
    "A drop that needs_scan: PICKED_UP and DELIVERED carry `scan`; one that needs_signature: "
    "DELIVERED carries the recipient's signature as multipart field `signature` (a PNG of at "
    "most 1 MB; not a PNG or bigger: 400).",
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

EarningsPay = shape(
    "CourierEarningsPay",
    delivered=money(help_text="Delivered drops × the plan's amount per delivered drop."),
    km=money(help_text="Each run's km × the plan's amount per km, rounded half-up to cents."),
    returned=money(help_text="Returns × the plan's amount per return."),
)
Earnings = shape(
    "CourierEarnings",
    date=serializers.DateField(help_text="The day (Asia/Phnom_Penh)."),
    currency=serializers.CharField(help_text="The account currency, e.g. USD."),
    delivered=serializers.IntegerField(help_text="Drops delivered that day."),
    returned=serializers.IntegerField(help_text="Drops returned to their pickup that day."),
    km=money(
        help_text="The runs' km: each order's pickup through its drops in stop order, "
        "counted on the day of its first delivery or return."
    ),
    pay=EarningsPay(),
    total=money(help_text="The day's pay: the parts' sum."),
)
EARNINGS = operation(
    "courier_earnings",
    TAG,
    "The day's earnings",
    "What the courier earned on a day, priced with the pay plan of each order's vehicle "
    "type as it stands now. A day with no work answers zeros.",
    parameters=[DAY],
    responses={
        200: success("CourierEarningsResponse", Earnings),
        400: QUERY_BAD_REQUEST,
        **COURIER_CALL,
    },
)

CashAmount = shape("CourierCashAmount", currency=serializers.CharField(), amount=money())
CashEntry = shape(
    "CourierCashEntry",
    kind=one_of(["COLLECTED", "HANDED_OVER", "SHORTAGE"]),
    amount=money(help_text="Signed: + collected, − handed over or short."),
    currency=serializers.CharField(),
    in_hand_after=money(),
    at=serializers.DateTimeField(),
    time=serializers.CharField(help_text="HH:MM in the service's time zone."),
    drop_id=serializers.UUIDField(allow_null=True),
    client_order_id=serializers.CharField(allow_null=True),
    shop=serializers.CharField(allow_null=True),
    recipient_first_name=serializers.CharField(allow_null=True),
    receipt=serializers.CharField(help_text='The hub\'s receipt number of a hand-over; "".'),
)
Cash = shape(
    "CourierCash",
    date=serializers.DateField(help_text="Today (Asia/Phnom_Penh)."),
    time_zone=serializers.CharField(),
    in_hand=CashAmount(many=True, help_text="The cash the courier holds now, per currency."),
    courier_owes=CashAmount(
        many=True, help_text="What the courier owes from shortages at hand-overs, per currency."
    ),
    collected_today=CashAmount(many=True, help_text="Today's collections, per currency."),
    entries=CashEntry(many=True, help_text="Today's entries, newest first."),
)
CASH = operation(
    "courier_cash",
    TAG,
    "Cash in hand",
    "The cash the courier holds (collected on delivery, not yet handed over at the hub), "
    "what they owe from shortages, and today's collections drop by drop. Each figure per "
    "currency; the service's currency is always there.",
    responses={200: success("CourierCashResponse", Cash), **COURIER_CALL},
)
