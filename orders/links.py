"""The recipient's side of a drop (DESIGN.md §14): its tracking link and its delivery PIN."""

from __future__ import annotations

import secrets

from django.conf import settings

TRACKING_PATH = "/t/"


def new_tracking_token() -> str:
    """128 random bits, URL-safe: 22 characters."""
    return secrets.token_urlsafe(16)


def new_pin() -> str:
    """Four random digits, for the business to pass on to its recipient."""
    return f"{secrets.randbelow(10_000):04d}"


def tracking_url(token: str) -> str:
    """The page a recipient opens; BASE_URL names the public host (docs/deployment.md)."""
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{TRACKING_PATH}{token}"
