"""API key format: svc_test_/svc_live_ + 40 characters from secrets; stored as SHA-256."""

from __future__ import annotations

import hashlib
import re
import secrets
import string

from accounts.models import Environment

MARKERS = {Environment.SANDBOX: "svc_test_", Environment.LIVE: "svc_live_"}
ENVIRONMENT_OF_MARKER = {marker: env for env, marker in MARKERS.items()}
SECRET_LENGTH = 40
_ALPHABET = string.ascii_letters + string.digits
KEY_PATTERN = re.compile(r"(svc_test_|svc_live_)[A-Za-z0-9]{40}\Z")
# A courier's bearer token starts so (couriers.services makes them): named here, below both,
# so that key authentication can tell a courier token sent as a key from a garbled key.
COURIER_TOKEN_PREFIX = "crr_"


def new_key(environment: str) -> str:
    return MARKERS[environment] + "".join(secrets.choice(_ALPHABET) for _ in range(SECRET_LENGTH))


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def hint_of(key: str) -> str:
    marker, secret = key[:9], key[9:]
    return f"{marker}{secret[:4]}…{secret[-4:]}"
