"""Couriers (docs/contract.md §20): provisioning, sign-in tokens, online status, positions.

A courier is a couriers.Driver with a password. The app's pages and API (couriers/pages.py,
couriers/api.py) call these; tracking and dispatch, below, read the positions through the
model's name (orders/couriers.py).
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from accounts import ratelimit
from accounts.keys import COURIER_TOKEN_PREFIX, digest_of
from core.writes import insert_rows
from couriers.models import CourierPoint, CourierPosition, CourierToken, Driver
from dispatch.offers import decline_offer, open_offer_of
from fleet.models import VehicleType
from orders.decisions import phone_is_valid
from orders.models import Drop
from tracking.position_events import record_positions

TOKEN_PREFIX = COURIER_TOKEN_PREFIX
TOKEN_PATTERN = re.compile(rf"{TOKEN_PREFIX}[A-Za-z0-9]{{40}}\Z")
_ALPHABET = string.ascii_letters + string.digits
# What people type between the digits of a phone number: "+855 12 345-678" is +85512345678.
PHONE_SEPARATORS = re.compile(r"[\s\-().]")
# Written at most once a minute, so a phone posting every 15 s costs no extra write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# How far ahead a shift's end may be set: today's work, never a standing rule left behind.
SHIFT_AHEAD = timedelta(hours=24)


class CourierRefused(Exception):
    """A courier that cannot be made as asked; the message says why, in a sentence."""


def provision_courier(*, name: str, phone: str, vehicle: str, password: str) -> Driver:
    """A new courier who can sign in with `phone` and `password`."""
    name = name.strip()
    if not name:
        raise CourierRefused("A courier needs a name.")
    if not phone_is_valid(phone):
        raise CourierRefused("The phone must be in E.164 form, such as +85512345678.")
    if not VehicleType.objects.filter(code=vehicle, active=True).exists():
        raise CourierRefused(f"{vehicle!r} is not an active vehicle type's code.")
    _check_password_length(password)
    with transaction.atomic():
        if Driver.objects.filter(phone=phone).exclude(password="").exists():
            raise CourierRefused(f"A courier already signs in with {phone}.")
        return Driver.objects.create(
            name=name, phone=phone, vehicle=vehicle, password=make_password(password)
        )


def _check_password_length(password: str) -> None:
    if len(password) < settings.COURIER_MIN_PASSWORD:
        raise CourierRefused(
            f"The password must be at least {settings.COURIER_MIN_PASSWORD} characters."
        )


def courier_phone(typed: str) -> str:
    """A courier's phone as people type it ("+855 12 000 003", "+855-12-000-003") made the
    E.164 it is stored as: the one reading of a typed phone for the app's sign-in form, the
    API's sign-in and the console's courier form. Nothing is guessed (no country code is
    added): what is left must still be E.164."""
    return PHONE_SEPARATORS.sub("", typed)


def check_courier_password(*, phone: str, password: str) -> Driver | None:
    """The active courier signing in with this phone and password, or None. An unknown phone
    costs the same hashing as a known one, so timing does not tell which exist."""
    courier = Driver.objects.filter(phone=phone, active=True).exclude(password="").first()
    if courier is None:
        make_password(password)  # the same work as a check
        return None
    return courier if check_password(password, courier.password) else None


@dataclass(frozen=True, slots=True)
class SignIn:
    """A sign-in's outcome: the courier, or none (`locked`: the throttle's reason, when it
    refused before checking; else a wrong phone or password)."""

    courier: Driver | None
    locked: str | None = None


def sign_in(*, phone: str, password: str, address: str) -> SignIn:
    """The dashboard's sign-in throttle around the password check (accounts/ratelimit.py),
    for the courier API's session and the app's form alike: the lockout first (one counter
    read, no hashing); a failure counts, a success clears this phone's count. An empty
    password is a failure without a check. The phone is read as typed (courier_phone), so
    one phone is one count however it is spaced."""
    phone = courier_phone(phone)
    if locked := ratelimit.locked_out_by(phone, address):
        return SignIn(None, locked)
    courier = check_courier_password(phone=phone, password=password) if password else None
    if courier is None:
        ratelimit.record_failure(phone, address)
        return SignIn(None)
    ratelimit.clear_failures(phone, address)
    return SignIn(courier)


def credential_stamp(courier: Driver) -> str:
    """What every app session and token of the courier carries from its sign-in, compared on
    each request: a keyed hash of the password hash and the credential version. A new
    password changes it by itself, whatever code writes it (as Django's session auth hash);
    set_courier_password and deactivate_courier also move the version, so a password set
    back, or a courier switched off and on again, does not bring old sign-ins back."""
    # Version 0 hashes the password alone, with the salt the app had before it joined
    # couriers: phones signed in before credential versions existed stay in.
    version = str(courier.credential_version or "")
    return salted_hmac("courier_app.session", courier.password + version).hexdigest()


def stamp_matches(stamp: str, courier: Driver) -> bool:
    return bool(stamp) and constant_time_compare(stamp, credential_stamp(courier))


def issue_token(*, courier: Driver) -> str:
    """A new bearer token for the courier; only its digest is kept, with the courier's
    credential stamp."""
    token = TOKEN_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(40))
    CourierToken.objects.create(
        courier=courier, digest=digest_of(token), stamp=credential_stamp(courier)
    )
    return token


def token_for(token: str) -> CourierToken | None:
    """The token row of an active courier for this bearer token, with its courier; None when
    it is unknown, revoked, the courier deactivated or their credentials changed since."""
    if not TOKEN_PATTERN.match(token):
        return None
    # A unique digest: no ORDER BY (first() would add one) on the path every phone takes.
    found = next(
        iter(
            CourierToken.objects.select_related("courier").filter(
                digest=digest_of(token), courier__active=True
            )[:1]
        ),
        None,
    )
    if found is None or not stamp_matches(found.stamp, found.courier):
        return None
    now = timezone.now()
    if found.last_used_at is None or now - found.last_used_at >= LAST_USED_RESOLUTION:
        CourierToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return found


def revoke_token(*, token_id: int) -> None:
    """DELETE /courier/session with a token: that token stops working; the courier's other
    tokens and sessions are untouched."""
    CourierToken.objects.filter(pk=token_id).delete()


def _end_credentials(courier: Driver, **changes) -> None:
    """Apply `changes` to the courier, move the credential version on and delete every token,
    in the caller's transaction: after it, nothing signed in before works (credential_stamp)."""
    Driver.objects.filter(pk=courier.pk).update(
        credential_version=F("credential_version") + 1, **changes
    )
    CourierToken.objects.filter(courier_id=courier.pk).delete()
    courier.refresh_from_db(fields=["credential_version", *changes])


def set_courier_password(*, courier: Driver, password: str) -> None:
    """A new password (the console's courier form): every token and app session of the courier
    ends in the same transaction; they sign in again with the new one."""
    _check_password_length(password)
    with transaction.atomic():
        _end_credentials(courier, password=make_password(password))


def deactivate_courier(*, courier: Driver) -> None:
    """The courier stops: offline (as set_online goes, so an open offer is declined), every
    token and app session ended (switched on again, they sign in again)."""
    with transaction.atomic():
        set_online(courier=courier, online=False)
        _end_credentials(courier, active=False)


@transaction.atomic
def set_online(*, courier: Driver, online: bool, shift_ends_at: datetime | None = None) -> bool:
    """Go online or offline: the one way a courier's status and shift's end change (the API's
    POST /courier/status, the app's button, the console's shift end, deactivation). Online,
    the shift ends at `shift_ends_at` (None: no end; the caller has checked it with
    shift_end_problem); offline has no shift, so going offline clears it. The same status
    twice changes nothing. Going offline declines the open offer (dispatch.offers), so the
    order goes to someone who is there instead of waiting out its time. The status now."""
    shift_ends_at = shift_ends_at if online else None
    changes: dict = {}
    if courier.online != online:
        changes["online"], changes["online_changed_at"] = online, timezone.now()
    if courier.shift_ends_at != shift_ends_at:
        changes["shift_ends_at"] = shift_ends_at
    if changes:
        Driver.objects.filter(pk=courier.pk).update(**changes)
        for name, value in changes.items():
            setattr(courier, name, value)
    offer = None if online else open_offer_of(courier)
    if offer is not None:
        decline_offer(courier=courier, offer_id=offer.pk)
    return courier.online


def shift_end_problem(*, shift_ends_at: datetime, now: datetime) -> str | None:
    """Why a shift cannot end at `shift_ends_at`, in a sentence; None when it can: after
    `now` and at most SHIFT_AHEAD later (a shift is a day's work, set again each day)."""
    if shift_ends_at <= now:
        return "Must be in the future."
    if shift_ends_at > now + SHIFT_AHEAD:
        hours = int(SHIFT_AHEAD.total_seconds() // 3600)
        return f"Must be at most {hours} hours from now."
    return None


@dataclass(frozen=True, slots=True)
class Point:
    lat: float
    long: float
    at: datetime
    accuracy: float | None = None


# One statement: the newest point becomes the latest position unless one as new is stored;
# the row lock (FOR UPDATE in the CTE) makes two posts of one courier take turns. It answers
# the time stored before (the line below which points are not new) and whether it stored.
_UPSERT_LATEST = """
WITH previous AS (
    SELECT at FROM couriers_courierposition WHERE courier_id = %(courier)s FOR UPDATE
), latest AS (
    INSERT INTO couriers_courierposition (courier_id, lat, long, at, accuracy)
    VALUES (%(courier)s, %(lat)s, %(long)s, %(at)s, %(accuracy)s)
    ON CONFLICT (courier_id) DO UPDATE
        SET lat = EXCLUDED.lat, long = EXCLUDED.long, at = EXCLUDED.at,
            accuracy = EXCLUDED.accuracy
        WHERE couriers_courierposition.at < EXCLUDED.at
    RETURNING 1
)
SELECT (SELECT at FROM previous), EXISTS (SELECT FROM latest)
"""

TRAIL_FIELDS = ("courier_id", "lat", "long", "at", "accuracy")


def record_points(*, courier: Driver, points: list[Point], now: datetime | None = None) -> int:
    """Store a courier's points: the newest as the latest position, every new one on the
    trail. Points not newer than the latest stored, or ahead of now by more than the
    allowed clock skew, are ignored (a phone's retry or an offline queue sends some twice).
    One statement and one COPY, whatever the number of points; how many were stored."""
    now = now or timezone.now()
    ahead = now + timedelta(seconds=settings.COURIER_CLOCK_SKEW_SECONDS)
    points = sorted((p for p in points if p.at <= ahead), key=lambda p: p.at)
    if not points:
        return 0
    with transaction.atomic():
        previous = _store_latest(courier.pk, points[-1])
        if previous is _NOT_NEWER:
            return 0
        fresh = [p for p in points if previous is None or p.at > previous]
        insert_rows(
            CourierPoint,
            TRAIL_FIELDS,
            [(courier.pk, p.lat, p.long, p.at, p.accuracy) for p in fresh],
        )
    return len(fresh)


_NOT_NEWER = object()


def _store_latest(courier_id: int, newest: Point) -> datetime | None | object:
    """The stored latest time before this one (None: the first), or _NOT_NEWER if `newest`
    is not newer than what is stored (nothing changed)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                _UPSERT_LATEST,
                {
                    "courier": courier_id,
                    "lat": newest.lat,
                    "long": newest.long,
                    "at": newest.at,
                    "accuracy": newest.accuracy,
                },
            )
            previous, stored = cursor.fetchone()
        return previous if stored else _NOT_NEWER
    # SQLite (make run): one writer at a time anyway.
    stored = CourierPosition.objects.filter(courier_id=courier_id).first()
    if stored is not None and stored.at >= newest.at:
        return _NOT_NEWER
    CourierPosition.objects.update_or_create(
        courier_id=courier_id,
        defaults={
            "lat": newest.lat,
            "long": newest.long,
            "at": newest.at,
            "accuracy": newest.accuracy,
        },
    )
    return None if stored is None else stored.at


def report_courier_position(*, courier_id: int, now: datetime) -> int:
    """One order.courier_position per order of the courier with a drop on the way, unless
    one went out in the last COURIER_EVENT_SECONDS; how many. The claim is one conditional
    UPDATE of the courier's position row, so two posts at once send one set of events."""
    since = now - timedelta(seconds=settings.COURIER_EVENT_SECONDS)
    with transaction.atomic():
        claimed = (
            CourierPosition.objects.filter(courier_id=courier_id)
            .filter(Q(event_at__isnull=True) | Q(event_at__lte=since))
            .update(event_at=now)
        )
        if not claimed:
            return 0
        return record_positions(Drop.objects.filter(order__driver_id=courier_id), now=now)


def prune_trail(*, now: datetime | None = None) -> int:
    """Delete trail points older than COURIER_TRAIL_HOURS; how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.COURIER_TRAIL_HOURS)
    deleted, _ = CourierPoint.objects.filter(at__lt=cutoff).delete()
    return deleted
