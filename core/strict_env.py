"""Strict readers of environment variables for settings: a bad value stops the start, never a guess.

django-environ reads `DEBUG=treu` as False and `SECURE_HSTS_SECONDS=1y` as a crash deep in a
request; these helpers refuse such values at import time with ImproperlyConfigured, naming
the variable and what it accepts.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# A rate looks like DRF's: "<requests>/<period>", e.g. "120/minute" or "10/s".
PERIOD_SECONDS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
_RATE = re.compile(r"([0-9]+)/([a-z]+)\Z")
MAX_RATE_LIMIT = 10**9 - 1  # see core/throttling.py: the counter packs hits under 10**9

# The same bar as Django's security.W009, so `check --deploy` never warns about a key we accept.
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5
SECRET_KEY_INSECURE_PREFIX = "django-insecure-"


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def env_bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: use true or false.")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be a whole number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be at least {minimum}.")
    return value


def parse_rate(text: str, name: str = "rate") -> tuple[int, int]:
    """'120/minute' -> (120, 60): the number of requests and the window in seconds."""
    match = _RATE.match(str(text).strip().lower().replace(" ", ""))
    if match is None or match[2] not in PERIOD_SECONDS:
        raise ImproperlyConfigured(
            f"{name}={text!r}: use <requests>/<second|minute|hour|day>, e.g. 120/minute."
        )
    limit = int(match[1])
    if not 1 <= limit <= MAX_RATE_LIMIT:
        raise ImproperlyConfigured(f"{name}={text!r}: the number must be 1 to {MAX_RATE_LIMIT}.")
    return limit, PERIOD_SECONDS[match[2]]


def env_rate(name: str, default: str) -> str:
    value = _raw(name) or default
    parse_rate(value, name)
    return value


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """`HTTP_X_FORWARDED_PROTO,https` -> Django's SECURE_PROXY_SSL_HEADER pair; unset -> None."""
    raw = _raw(name)
    if raw is None:
        return None
    header, _, value = (part.strip() for part in raw.partition(","))
    if not re.fullmatch(r"HTTP_[A-Z0-9_]+", header) or not value or "," in value:
        raise ImproperlyConfigured(
            f"{name}={raw!r}: use <META name>,<value>, e.g. HTTP_X_FORWARDED_PROTO,https."
        )
    return header, value


def is_secure_secret_key(key: str) -> bool:
    return (
        len(key) >= SECRET_KEY_MIN_LENGTH
        and len(set(key)) >= SECRET_KEY_MIN_UNIQUE_CHARACTERS
        and not key.startswith(SECRET_KEY_INSECURE_PREFIX)
    )
