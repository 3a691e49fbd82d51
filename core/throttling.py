"""Per-key rate limits (DESIGN.md §3, §10): fixed windows counted atomically in the shared cache.

Every API key has one window per scope: "bulk" for POST /orders/bulk (RATE_LIMIT_BULK),
"default" for every other call (RATE_LIMIT_DEFAULT). A window opens at the key's first
request (after the previous one ended) and lasts the rate's period; past the limit the
answer is 429 RATE_LIMITED with Retry-After, and every counted response carries
RateLimit-Limit/-Remaining/-Reset. Calls that fail authentication are not counted.

DRF's SimpleRateThrottle keeps a list of timestamps with cache get() and set(), so two
processes counting at once lose hits. Here cache.add() opens a window and cache.incr()
counts in it: atomic on Redis and memcached, and on the default database cache through
core.cache.DatabaseCache (Django's own incr() there is a get() then a set()).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import BaseThrottle

from core.strict_env import parse_rate

# The setting that holds each scope's rate; a view picks its scope with `throttle_scope`.
RATE_SETTINGS = {"default": "RATE_LIMIT_DEFAULT", "bulk": "RATE_LIMIT_BULK"}

# One integer carries a window's start (epoch seconds) and its hits: start * WINDOW_SCALE + hits.
# So a single atomic incr() both counts the request and tells when the window ends, with no
# second key that could expire apart from the first. Rates stay below 10**9 per window.
WINDOW_SCALE = 10**9


@dataclass(frozen=True, slots=True)
class Rate:
    limit: int
    period: int  # seconds


@lru_cache(maxsize=32)
def _parse(text: str, name: str) -> Rate:
    return Rate(*parse_rate(text, name))


def rate_of(scope: str) -> Rate:
    """Read at request time, so a changed setting (tests, a reload) takes effect at once."""
    try:
        name = RATE_SETTINGS[scope]
    except KeyError:
        raise ImproperlyConfigured(f"Unknown throttle scope {scope!r}.") from None
    return _parse(getattr(settings, name), name)


@dataclass(frozen=True, slots=True)
class Quota:
    """Where a key stands in its current window, as the RateLimit-* response headers say."""

    limit: int
    remaining: int
    reset: int  # seconds until the window ends

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }


def count_hit(counter: str, rate: Rate, now: float) -> tuple[int, int]:
    """Count one request in the counter's current window; return (hits so far, window start)."""
    value = _add_then_incr(counter, rate, now)
    start, hits = divmod(value, WINDOW_SCALE)
    if start == 0 or now - start >= 2 * rate.period:
        # A counter without its window: Redis' incr() on a key that expired a moment earlier
        # recreates it from 0 with no expiry. Start over rather than throttle it forever.
        cache.delete(counter)
        start, hits = divmod(_add_then_incr(counter, rate, now), WINDOW_SCALE)
    return hits, start


def _add_then_incr(counter: str, rate: Rate, now: float) -> int:
    # add() opens a window starting now unless one is open (of concurrent openers exactly
    # one wins); incr() then counts in whichever window is open. Both run every time, so a
    # request costs the same whether it opens the window or not.
    for _ in range(2):
        cache.add(counter, int(now) * WINDOW_SCALE, timeout=rate.period)
        try:
            return cache.incr(counter)
        except ValueError:
            continue  # the window ended between add() and incr(): open the next one
    raise RuntimeError(f"the cache keeps losing the rate-limit counter {counter!r}")


class ApiKeyRateThrottle(BaseThrottle):
    """Limits each API key (not each business: keys of one business count apart) per scope."""

    def allow_request(self, request, view) -> bool:
        key = getattr(request.auth, "key", None)
        if key is None:
            return True  # no API key (a public page): nothing to count against
        scope = getattr(view, "throttle_scope", None) or "default"
        rate = rate_of(scope)
        now = time.time()
        hits, start = count_hit(f"ratelimit:{scope}:{key.pk}", rate, now)
        reset = min(rate.period, max(0, math.ceil(start + rate.period - now)))
        # On the Django request, which RateLimitHeadersMiddleware sees after the view.
        request._request.rate_limit_quota = Quota(rate.limit, max(0, rate.limit - hits), reset)
        self.retry_after = reset
        return hits <= rate.limit

    def wait(self) -> float:
        return self.retry_after


class RateLimitHeadersMiddleware:
    """Copy the throttle's quota into RateLimit-* headers of every counted response, 429 too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        quota = getattr(request, "rate_limit_quota", None)
        if quota is not None:
            for name, value in quota.headers().items():
                response[name] = value
        return response
