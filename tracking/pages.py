"""The recipient's pages (docs/contract.md §14): /t/<token>, the tracking page, and /pod/<signed>,
a delivery photo or the recipient's signature (§24). No login: the token or the URL's signing
is the key.

Both answer every refusal (unknown, malformed, forged, expired) with the same plain 404 page,
so a guesser learns nothing from the answer, and both count every request, refused ones
included, against one limit per client address (RATE_LIMIT_TRACKING_PAGE).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
import uuid
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from accounts.ratelimit import address_bucket, client_address
from core import counters
from core.languages import browser_language, switched_language, use_language
from core.replica import reads_may_lag, reads_on_primary
from core.strict_env import parse_rate
from orders.models import Drop
from tracking.page_data import TrackingPage, tracking_page
from tracking.proof import proof_file_of_url

# What TimestampSigner makes of a drop id: "<uuid>:<timestamp>:<signature>", base64url parts.
SIGNED_SHAPE = re.compile(r"[A-Za-z0-9_:-]{1,200}\Z")
PHOTO_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
}
# A photo URL whose age cannot be read back is still good for this long in a browser cache.
DEFAULT_PHOTO_MAX_AGE = 300


@require_safe
@reads_may_lag
def tracking_page_view(request: HttpRequest, token: str) -> HttpResponse:
    """The page of one drop, re-rendered on every refresh: nothing about it is cached."""
    if (wait := _seconds_over_limit(request)) is not None:
        return _too_many(request, wait)
    page = tracking_page(token)
    if page is None:
        # A link may be opened the moment it is sent, before the replica has its drop.
        with reads_on_primary():
            page = tracking_page(token)
    if page is None:
        return _not_found(request)
    use_language(request, recipient_language(request, page))
    context = {
        "page": page,
        "data": page.map,
        "refresh_seconds": settings.TRACKING_PAGE_REFRESH_SECONDS if page.is_active else None,
    }
    return _private(render(request, "tracking/page.html", context))


@require_safe
@reads_may_lag
def delivery_photo_view(request: HttpRequest, signed: str) -> HttpResponse:
    """The proof-of-delivery photo or signature a signed URL names, while the URL is valid."""
    if (wait := _seconds_over_limit(request)) is not None:
        return _too_many(request, wait)
    found = proof_file_of_url(signed) if SIGNED_SHAPE.match(signed) else None
    drop_id, column = found or (None, "pod_photo")
    name = _photo_name(drop_id, column)
    if not name and drop_id:
        with reads_on_primary():  # a photo URL sent the moment the drop was delivered
            name = _photo_name(drop_id, column)
    if not name:
        return _not_found(request)
    try:
        photo = default_storage.open(name)
    except OSError:  # the row names a file the storage no longer has
        return _not_found(request)
    suffix = PurePosixPath(name).suffix.lower()
    # Anything else is sent as bytes to download: never as a page (an SVG or HTML "photo")
    # that would run in our origin.
    content_type = PHOTO_TYPES.get(suffix, "application/octet-stream")
    filename = ("signature" if column == "pod_signature" else "delivery") + suffix
    response = FileResponse(photo, content_type=content_type, filename=filename)
    response["Cache-Control"] = f"private, max-age={_seconds_left(signed)}"
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response


def recipient_language(request: HttpRequest, page: TrackingPage) -> str:
    """The recipient's own switch, else the drop's recipient_language, else their browser's,
    else the business's setting (docs/contract.md §26)."""
    return (
        switched_language(request)
        or page.language
        or browser_language(request)
        or page.business_language
    )


def _photo_name(drop_id: str | None, column: str) -> str | None:
    try:
        pk = uuid.UUID(drop_id) if drop_id else None
    except ValueError:
        return None
    if pk is None:
        return None
    return Drop.objects.filter(pk=pk).values_list(column, flat=True).first()


def _seconds_left(signed: str) -> int:
    """How long the signed URL stays valid: a browser may keep the photo that long."""
    try:
        signed_at = signing.b62_decode(signed.rsplit(":", 2)[1])
    except (IndexError, ValueError):
        return DEFAULT_PHOTO_MAX_AGE
    return max(0, signed_at + settings.POD_PHOTO_URL_SECONDS - int(time.time()))


def _seconds_over_limit(request: HttpRequest) -> int | None:
    """Count this request; the seconds until the client's window ends if it is over the limit.

    One counter per client (an IPv4 address or an IPv6 /64) across every token and photo:
    per token would let a guesser try tokens for free.
    """
    limit, period = parse_rate(settings.RATE_LIMIT_TRACKING_PAGE, "RATE_LIMIT_TRACKING_PAGE")
    client = address_bucket(client_address(request))
    # Hashed, as accounts.ratelimit does: the key never holds an address, nor an odd string.
    key = "tracking-page:" + hashlib.sha256(client.encode()).hexdigest()
    now = time.time()
    try:
        window = counters.count(key, period, now)
    except counters.CountersUnavailable:
        return None  # uncounted while Redis is away, as API calls are (core/throttling.py)
    if window.hits <= limit:
        return None
    return max(1, math.ceil(window.ends_at - now))


def _private(response: HttpResponse) -> HttpResponse:
    """The token is in the URL: keep the page out of search engines, caches and Referers,
    and let it load nothing but our own files and the map's tiles."""
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    response["Content-Security-Policy"] = content_security_policy(settings.TRACKING_TILE_URL)
    return response


def content_security_policy(tile_url: str) -> str:
    """Our own scripts, styles, fonts and pictures only, plus the tile server's pictures when
    tiles are on (docs/deployment.md): a changed TRACKING_TILE_URL needs no second setting."""
    pictures = " ".join(["'self'", "data:", *filter(None, [tile_source(tile_url)])])
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; font-src 'self'; "
        f"img-src {pictures}; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def tile_source(tile_url: str) -> str | None:
    """The CSP source of a tile URL: its scheme and host (a `{s}` subdomain as `*`), or None."""
    parts = urlsplit(tile_url)
    if not parts.scheme or not parts.netloc:
        return None
    host = re.sub(r"\{s\}", "*", parts.netloc)
    return f"{parts.scheme}://{host}"


def _not_found(request: HttpRequest) -> HttpResponse:
    return _private(render(request, "tracking/not_found.html", status=404))


def _too_many(request: HttpRequest, wait: int) -> HttpResponse:
    response = render(request, "tracking/too_many.html", {"wait": wait}, status=429)
    response["Retry-After"] = str(wait)
    return _private(response)
