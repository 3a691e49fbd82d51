"""Proof of delivery (docs/contract.md §14, §24): PIN and scan checks, and the signed URLs of
a delivery photo and of the recipient's signature.

A photo or a signature is stored with Django's storage API (the default file system unless
STORAGES says otherwise) and never served as a static file: only through /pod/<signed>, a URL
signed with SECRET_KEY that stops working POD_PHOTO_URL_SECONDS after it was made. Each kind
has its own salt, so a photo's URL never opens the signature, nor the other way round.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.core import signing

_SALT = "tracking.proof.photo"
_SIGNATURE_SALT = "tracking.proof.signature"
# A delivery photo, from the console or the courier app: PNG, JPEG or WebP, at most 5 MB.
MAX_PHOTO_BYTES = 5 * 1024 * 1024
# The recipient's signature, drawn in the courier app: a PNG, at most 1 MB.
MAX_SIGNATURE_BYTES = 1024 * 1024
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PHOTO_PATH = "/pod/"
# The drop's column of the file a signed URL names, by the salt it was signed with.
_PROOF_FILES = ((_SALT, "pod_photo"), (_SIGNATURE_SALT, "pod_signature"))


def photo_url(drop_id: str) -> str:
    """A URL of the drop's photo, valid for POD_PHOTO_URL_SECONDS from now."""
    signed = signing.TimestampSigner(salt=_SALT).sign(str(drop_id))
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{PHOTO_PATH}{signed}"


def signature_url(drop_id: str) -> str:
    """A URL of the recipient's signature, valid for POD_PHOTO_URL_SECONDS from now."""
    signed = signing.TimestampSigner(salt=_SIGNATURE_SALT).sign(str(drop_id))
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{PHOTO_PATH}{signed}"


def proof_file_of_url(signed: str) -> tuple[str, str] | None:
    """The drop id a /pod/ URL was made for and the column of the file it names (pod_photo or
    pod_signature), or None if forged, malformed or expired."""
    for salt, column in _PROOF_FILES:
        try:
            signer = signing.TimestampSigner(salt=salt)
            return signer.unsign(signed, max_age=settings.POD_PHOTO_URL_SECONDS), column
        except signing.SignatureExpired:
            return None
        except signing.BadSignature:
            continue
    return None


def scan_matches(short_code: str, given: str | None) -> bool:
    """Whether a scanned or typed code is the drop's: letters in any case, spaces ignored (a
    code typed from the label may be read in groups)."""
    if not given:
        return False
    typed = "".join(given.split()).upper()
    return hmac.compare_digest(short_code.encode(), typed.encode())


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
