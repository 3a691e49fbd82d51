"""Strict readers of environment variables for settings: a bad value stops the start, never a guess.

django-environ reads `DEBUG=treu` as False and `SECURE_HSTS_SECONDS=1y` as a crash deep in a
request; these helpers refuse such values at import time with ImproperlyConfigured, naming
the variable and what it accepts.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import zoneinfo
from decimal import Decimal

import environ
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
MAX_RATE_LIMIT = 10**9 - 1  # a sanity bound: no real limit comes near it

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


# ASCII digits only: int() and Decimal() also read "١٠" and "1_000".
_WHOLE = re.compile(r"[+-]?[0-9]+\Z")
_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?\Z")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    if not _WHOLE.match(raw):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be a whole number.")
    value = int(raw)
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be at least {minimum}.")
    return value


def env_int_list(name: str, default: list[int], minimum: int | None = None) -> list[int]:
    """Comma-separated whole numbers, e.g. `5,300,1800`; at least one."""
    raw = _raw(name)
    if raw is None:
        return list(default)
    parts = [part.strip() for part in raw.split(",")]
    if not all(_WHOLE.match(part) for part in parts):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be whole numbers separated by commas.")
    values = [int(part) for part in parts]
    if minimum is not None and min(values) < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: each must be at least {minimum}.")
    return values


def env_float(name: str, default: float, above: float | None = None) -> float:
    """A number such as 3 or 2.5; `above` is an exclusive bound (0: positive)."""
    raw = _raw(name)
    if raw is None:
        return default
    if not _NUMBER.match(raw):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be a number, e.g. {default}.")
    value = float(raw)
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r}: too large.")
    if above is not None and value <= above:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be more than {above}.")
    return value


def env_decimal(
    name: str, default: str, minimum: Decimal | None = None, places: int | None = None
) -> Decimal:
    """An exact amount such as 100 or 100.50; with `places`, at most that many decimals."""
    raw = _raw(name)
    if raw is None:
        value = Decimal(default)
    elif not _NUMBER.match(raw):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be a decimal number, e.g. {default}.")
    else:
        value = Decimal(raw)
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be at least {minimum}.")
    if places is not None:
        if -value.as_tuple().exponent > places:
            raise ImproperlyConfigured(f"{name}={raw!r}: at most {places} decimal places.")
        value = value.quantize(Decimal(1).scaleb(-places))
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices`, in any case; returned as spelled in `choices`."""
    raw = _raw(name)
    if raw is None:
        return default
    by_lower = {choice.lower(): choice for choice in choices}
    if raw.lower() in by_lower:
        return by_lower[raw.lower()]
    close = difflib.get_close_matches(raw.lower(), by_lower, n=1)
    hint = f" (did you mean {by_lower[close[0]]}?)" if close else ""
    raise ImproperlyConfigured(f"{name}={raw!r}: use one of {', '.join(choices)}{hint}.")


def refuse_retired(name: str, advice: str) -> None:
    """Stop the start when a variable that is no longer read is set: ignoring it would
    quietly change what the deployment does. `advice` says what to set instead."""
    raw = _raw(name)
    if raw is not None:
        raise ImproperlyConfigured(f"{name}={raw!r}: {advice}")


def env_choice_list(name: str, default: list[str], choices: tuple[str, ...]) -> list[str]:
    """Comma-separated `choices`, in order, each at most once, in any case; at least one."""
    raw = _raw(name)
    if raw is None:
        return list(default)
    by_lower = {choice.lower(): choice for choice in choices}
    chosen: list[str] = []
    for item in (part.strip() for part in raw.split(",")):
        if item.lower() not in by_lower:
            close = difflib.get_close_matches(item.lower(), by_lower, n=1)
            hint = f" (did you mean {by_lower[close[0]]}?)" if close else ""
            raise ImproperlyConfigured(
                f"{name}={raw!r}: {item!r} is not one of {', '.join(choices)}{hint}."
            )
        if by_lower[item.lower()] in chosen:
            raise ImproperlyConfigured(f"{name}={raw!r}: {item} is named twice.")
        chosen.append(by_lower[item.lower()])
    return chosen


def env_matching(name: str, default: str, pattern: str, what: str) -> str:
    """A code with a fixed shape, e.g. `[A-Z]{3}` for a currency; `what` says it in words."""
    raw = _raw(name)
    if raw is None:
        return default
    if not re.fullmatch(pattern, raw):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be {what}.")
    return raw


_URL = re.compile(r"https?://[^/\s?#]+(/[^\s]*)?\Z")
_ORIGIN = re.compile(r"https?://[^/\s?#]+\Z")


def env_url(name: str, default: str) -> str:
    """An http(s) URL without its trailing slash; unset means the default (may be empty)."""
    raw = _raw(name)
    if raw is None:
        return default
    if not _URL.match(raw):
        raise ImproperlyConfigured(f"{name}={raw!r}: must be an http(s) URL, e.g. https://host.")
    return raw.rstrip("/")


def env_origins(name: str) -> list[str]:
    """Comma-separated `scheme://host[:port]`, as Django compares a request's Origin."""
    raw = _raw(name)
    if raw is None:
        return []
    origins = [origin.strip() for origin in raw.split(",") if origin.strip()]
    for origin in origins:
        if not _ORIGIN.match(origin):
            raise ImproperlyConfigured(
                f"{name}: {origin!r} is not an origin; use https://host (no path)."
            )
    return origins


def env_time_zone(name: str, default: str) -> str:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        zoneinfo.ZoneInfo(raw)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(
            f"{name}={raw!r}: not a time zone; use an IANA name such as Asia/Phnom_Penh."
        ) from None
    return raw


# URLs carry passwords: their errors name the variable and the scheme, never the value.
DATABASE_SCHEMES = ("postgres", "postgresql", "sqlite")
CACHE_SCHEMES = ("dbcache", "redis", "rediss", "locmemcache", "dummycache", "filecache")


def _scheme(name: str, url: str, schemes: tuple[str, ...]) -> None:
    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name}: unknown scheme {scheme!r}; use one of {', '.join(schemes)} (<scheme>://…)."
        )


def env_database_url(name: str, default: str) -> dict:
    url = _raw(name) or default
    _scheme(name, url, DATABASE_SCHEMES)
    return environ.Env.db_url_config(url)


def env_optional_database_url(name: str) -> dict | None:
    """A database URL when the variable is set, else None (an optional database)."""
    url = _raw(name)
    return None if url is None else env_database_url(name, url)


def env_cache_url(name: str, default: str) -> dict:
    url = _raw(name) or default
    _scheme(name, url, CACHE_SCHEMES)
    return environ.Env.cache_url_config(url)


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
