"""The SMS provider's inbound webhook: a recipient's reply, STOP or START (docs/api.md,
"Replies to our texts"; docs/notifications.md, "Stopping messages").

`POST /api/v1/sms/inbound` takes what a Twilio-compatible provider posts for a message to
SMS_FROM (a form: `From`, `To`, `Body`, …) signed with `X-Twilio-Signature`: base64 of
HMAC-SHA1, keyed with SMS_AUTH_TOKEN, of the URL the provider called followed by each
parameter's name and value, sorted by name. No key: the signature is the authentication.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import phonenumbers
from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    parser_classes,
    permission_classes,
    throttle_classes,
)
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny

from core.api import ApiError, envelope, validation_error
from notifications.optout import reply_by_sms

SIGNATURE_HEADER = "X-Twilio-Signature"


def provider_signature(url: str, params, token: str) -> str:
    """What the provider signs a request with: the URL, then each name and value (names
    sorted, a repeated name's values sorted), HMAC-SHA1 keyed with the auth token, base64."""
    data = url + "".join(
        name + value for name in sorted(set(params)) for value in sorted(set(params.getlist(name)))
    )
    digest = hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def called_url(request) -> str:
    """The URL the provider called: BASE_URL (the public address) with the path, else the
    address the request came to."""
    if settings.BASE_URL:
        return settings.BASE_URL.rstrip("/") + request.get_full_path()
    return request.build_absolute_uri()


def check_signature(request) -> None:
    """403 INVALID_SIGNATURE unless the provider signed this request with our auth token."""
    given = request.headers.get(SIGNATURE_HEADER, "")
    token = settings.SMS_AUTH_TOKEN
    expected = provider_signature(called_url(request), request.POST, token) if token else ""
    if not token or not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise ApiError(
            403,
            "INVALID_SIGNATURE",
            f"The {SIGNATURE_HEADER} header is missing or does not match this request.",
        )


def sender_phone(request) -> str:
    """`From`, an E.164 phone; 400 VALIDATION_ERROR naming it otherwise."""
    phone = request.POST.get("From", "").strip()
    try:
        valid = phonenumbers.is_valid_number(phonenumbers.parse(phone, None))
    except phonenumbers.NumberParseException:
        valid = False
    if not valid or not phone.startswith("+"):
        raise validation_error([{"field": "From", "message": "Must be an E.164 phone number."}])
    return phone


@extend_schema(exclude=True)  # the provider's, not an integrator's: docs/api.md says it
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
@throttle_classes([])
@parser_classes([FormParser])
def sms_inbound(request):
    check_signature(request)
    phone = sender_phone(request)
    action = reply_by_sms(phone=phone, body=request.POST.get("Body", ""), at=timezone.now())
    return envelope({"action": action})
