"""Who is calling the courier API (docs/contract.md §20): a courier's bearer token
(`crr_` + 40), or the courier app's session. Business API keys get 401 here, and courier
tokens get 401 everywhere else (accounts.auth takes svc_ keys only)."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.authentication import CSRFCheck
from rest_framework.permissions import BasePermission

from couriers.models import Driver
from couriers.services import credential_stamp, stamp_matches, token_for

SESSION_KEY = "courier_id"
SESSION_HASH_KEY = "courier_auth"


@dataclass(frozen=True, slots=True)
class CourierPrincipal:
    """The signed-in courier, and the token they called with (None: the app's session)."""

    courier: Driver
    token_id: int | None = None
    is_authenticated: bool = True


def sign_in_session(request, courier: Driver) -> None:
    request.session.cycle_key()  # no session fixation
    request.session[SESSION_KEY] = courier.pk
    # Compared on every request (courier_of_session): a new password or a deactivation
    # changes the courier's stamp and ends this session.
    request.session[SESSION_HASH_KEY] = credential_stamp(courier)


def sign_out_session(request) -> None:
    """Only the courier's keys: a dashboard login sharing this browser's session stays."""
    request.session.pop(SESSION_KEY, None)
    request.session.pop(SESSION_HASH_KEY, None)
    request.session.cycle_key()


def courier_of_session(request) -> Driver | None:
    """The active courier signed in to this session, or None (signed out, deactivated, or
    their password changed since: their credential stamp is not the session's)."""
    courier_id = request.session.get(SESSION_KEY)
    if courier_id is None:
        return None
    courier = Driver.objects.filter(pk=courier_id, active=True).exclude(password="").first()
    if courier is None or not stamp_matches(request.session.get(SESSION_HASH_KEY, ""), courier):
        request.session.flush()
        return None
    return courier


class CourierAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer":
                raise exceptions.AuthenticationFailed("Send a courier token as Bearer crr_….")
            found = token_for(token.strip())
            if found is None:
                raise exceptions.AuthenticationFailed(
                    "The courier token is unknown, revoked or malformed (business API keys do"
                    " not work here)."
                )
            principal = CourierPrincipal(found.courier, token_id=found.pk)
            return principal, principal
        courier = courier_of_session(request._request)
        if courier is None:
            return None
        _enforce_csrf(request)
        principal = CourierPrincipal(courier)
        return principal, principal

    def authenticate_header(self, request):
        return self.keyword


def _enforce_csrf(request) -> None:
    """A session is a cookie: its unsafe requests must carry the CSRF token (as DRF's own
    SessionAuthentication checks)."""

    def dummy_get_response(request):  # pragma: no cover - never called
        return None

    check = CSRFCheck(dummy_get_response)
    check.process_request(request)
    reason = check.process_view(request, None, (), {})
    if reason:
        raise exceptions.PermissionDenied(f"CSRF failed: {reason}")


class IsCourier(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, CourierPrincipal)
