"""Proof of delivery (docs/contract.md §14): PIN checks and the signed URL of a delivery photo.

A photo is stored with Django's storage API (the default file system unless STORAGES says
otherwise) and never served as a static file: only through /pod/<signed>, a URL signed with
SECRET_KEY that stops working POD_PHOTO_URL_SECONDS after it was made.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.core import signing

_SALT = "tracking.proof.photo"
# A delivery photo, from the console or the courier app: PNG, JPEG or WebP, at most 5 MB.
MAX_PHOTO_BYTES = 5 * 1024 * 1024
PHOTO_PATH = "/pod/"


def photo_url(drop_id: str) -> str:
    """A URL of the drop's photo, valid for POD_PHOTO_URL_SECONDS from now."""
    signed = signing.TimestampSigner(salt=_SALT).sign(str(drop_id))
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{PHOTO_PATH}{signed}"


def drop_id_of_photo_url(signed: str) -> str | None:
    """The drop id a photo URL was made for, or None if forged, malformed or expired."""
    try:
        return signing.TimestampSigner(salt=_SALT).unsign(
            signed, max_age=settings.POD_PHOTO_URL_SECONDS
        )
    except signing.BadSignature:  # SignatureExpired is one
        return None


def pin_matches(expected: str | None, given: str | None) -> bool:
    """Constant-time: the PIN is four digits, so timing must not tell which digit was wrong."""
    if expected is None:
        return True
    return given is not None and hmac.compare_digest(expected.encode(), given.strip().encode())


def photo_extension(head: bytes) -> str | None:
    """The extension of a PNG, JPEG or WebP image from its first 12 bytes; None otherwise.

    The bytes decide, not the name or the Content-Type the browser sent: both are the
    uploader's to choose.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None
