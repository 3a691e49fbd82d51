"""Failed-login throttling per username and client address, counted in Django's shared cache."""

from __future__ import annotations

import hashlib

from django.core.cache import cache

MAX_FAILED_LOGINS = 10
WINDOW_SECONDS = 15 * 60


def _cache_key(username: str, address: str) -> str:
    # Hashed so an odd username can never make an invalid (or colliding) cache key.
    raw = f"{username.strip().lower()}|{address}".encode()
    return "login-failures:" + hashlib.sha256(raw).hexdigest()


def client_address(request) -> str:
    # REMOTE_ADDR only: a forwarded-for header is the client's to forge.
    return request.META.get("REMOTE_ADDR", "") if request is not None else ""


def is_locked_out(username: str, address: str) -> bool:
    return cache.get(_cache_key(username, address), 0) >= MAX_FAILED_LOGINS


def record_failure(username: str, address: str) -> None:
    """Count one failure; the window starts at the first failure and is not extended."""
    key = _cache_key(username, address)
    cache.add(key, 0, timeout=WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add() and incr()
        cache.set(key, 1, timeout=WINDOW_SECONDS)


def clear_failures(username: str, address: str) -> None:
    cache.delete(_cache_key(username, address))
