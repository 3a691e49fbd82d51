"""The recipient's side of a drop (docs/contract.md §14): its tracking link and its delivery PIN.

A drop's tracking token is its id encrypted with AES-128 under a key of its own, derived
from SECRET_KEY: 16 bytes in 22 URL-safe characters. A block cipher is a pseudorandom
permutation, and each id is encrypted once, so to anyone without the key a token is 128
random bits: it cannot be guessed, and it says nothing of the id. The token is therefore
not stored. It is made from the id wherever a link is shown, and turned back into the id
when a recipient opens one, so the page finds its drop by primary key; a new drop is not
written to a unique index of random tokens (docs/decisions.md, "Tracking links are the
drop's id sealed with AES, not stored tokens").

Rotating SECRET_KEY changes every drop's link; links made under a key in
SECRET_KEY_FALLBACKS keep opening their page, as Django's own signed values do. Tokens
stored before tokens were derived (orders migration 0013) are kept in
`LegacyTrackingToken` and keep opening theirs.
"""

from __future__ import annotations

import base64
import functools
import re
import secrets
import uuid
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.conf import settings
from django.utils.crypto import salted_hmac

TRACKING_PATH = "/t/"

# What a derived token looks like: 16 bytes in URL-safe base64, unpadded.
_DERIVED_SHAPE = re.compile(r"[A-Za-z0-9_-]{22}\Z")
_KEY_SALT = "orders.links.tracking-token"


@functools.cache
def _cipher(secret: str) -> Cipher:
    """AES-128 under the tracking key SECRET_KEY (or a fallback) gives: one per secret."""
    key = salted_hmac(_KEY_SALT, "aes-128", secret=secret, algorithm="sha256").digest()[:16]
    # One block per id, each id encrypted once: the block cipher itself, which is what ECB
    # is for one block (no chaining, no IV; equal plaintexts never occur).
    return Cipher(algorithms.AES(key), modes.ECB())  # noqa: S305


def tracking_tokens(drop_ids: Sequence[str]) -> list[str]:
    """The tracking tokens of drops, from their ids as text: one cipher call for them all."""
    if not drop_ids:
        return []
    plain = bytes.fromhex("".join(drop_ids).replace("-", ""))
    encryptor = _cipher(settings.SECRET_KEY).encryptor()
    sealed = encryptor.update(plain) + encryptor.finalize()
    # One base64 call for them all: each token padded to 18 bytes (6 whole groups of 3) is
    # 24 characters, the first 22 of which are its own encoding (its last 2 are "AA").
    padded = b"\0\0".join([sealed[i : i + 16] for i in range(0, len(sealed), 16)]) + b"\0\0"
    text = base64.urlsafe_b64encode(padded).decode("ascii")
    return [text[i : i + 22] for i in range(0, len(text), 24)]


def tracking_token(drop_id: uuid.UUID | str) -> str:
    return tracking_tokens([str(drop_id)])[0]


def drop_ids_of(token: str) -> list[uuid.UUID]:
    """The drop ids a token can name: one per key it may have been made under (SECRET_KEY,
    then SECRET_KEY_FALLBACKS); none if it is not the shape of a derived token."""
    if not _DERIVED_SHAPE.match(token):
        return []
    sealed = base64.urlsafe_b64decode(token + "==")
    if base64.urlsafe_b64encode(sealed)[:22].decode("ascii") != token:
        return []  # the last character's unused bits were set: not a token we made
    ids = []
    for secret in (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS):
        decryptor = _cipher(secret).decryptor()
        ids.append(uuid.UUID(bytes=decryptor.update(sealed) + decryptor.finalize()))
    return ids


def tracking_url(token: str) -> str:
    """The page a recipient opens; BASE_URL names the public host (docs/deployment.md)."""
    return f"{settings.BASE_URL or settings.PUBLIC_URL_FALLBACK}{TRACKING_PATH}{token}"


def drop_tracking_url(drop_id: uuid.UUID | str) -> str:
    return tracking_url(tracking_token(drop_id))


def new_tracking_token() -> str:
    """128 random bits, URL-safe: 22 characters. The stored tokens' default in orders
    migrations 0008 and 0009, which import it; no drop is given one any more."""
    return secrets.token_urlsafe(16)


def new_pin() -> str:
    """Four random digits, for the business to pass on to its recipient."""
    return f"{secrets.randbelow(10_000):04d}"
