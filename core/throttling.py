"""Per-key rate limits (docs/contract.md §3, §10): fixed windows counted exactly across processes.

Every API key has one window per scope: "bulk" for POST /orders/bulk (RATE_LIMIT_BULK),
"default" for every other call (RATE_LIMIT_DEFAULT). A window opens at the key's first
request (after the previous one ended) and lasts the rate's period; past the limit the
answer is 429 RATE_LIMITED with Retry-After, and every counted response carries
RateLimit-Limit/-Remaining/-Reset. Calls that fail authentication are not counted.

DRF's SimpleRateThrottle keeps a list of timestamps with cache get() and set(), so two
processes counting at once lose hits. Here each request is one hit of a shared counter
(core/counters.py): one upsert of a row in the database by default, or Redis' INCR when
CACHE_URL is redis://.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import BaseThrottle

from core import counters
from core.strict_env import parse_rate

logger = logging.getLogger(__name__)

# The setting that holds each scope's rate; a view picks its scope with `throttle_scope`.
RATE_SETTINGS = {"default": "RATE_LIMIT_DEFAULT", "bulk": "RATE_LIMIT_BULK"}


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


class ApiKeyRateThrottle(BaseThrottle):
    """Limits each API key (not each business: keys of one business count apart) per scope."""

    def allow_request(self, request, view) -> bool:
        key = getattr(request.auth, "key", None)
        if key is None:
            return True  # no API key (a public page): nothing to count against
        scope = getattr(view, "throttle_scope", None) or "default"
        rate = rate_of(scope)
        now = time.time()
        try:
            window = counters.count(f"ratelimit:{scope}:{key.pk}", rate.period, now)
        except counters.CountersUnavailable as exc:
            # A counters outage (Redis restarting) must not stop deliveries: the request goes
            # through uncounted, with no RateLimit-* headers, and the log says so.
            logger.warning("Rate limit not counted, counters unavailable: %s", exc)
            return True
        reset = min(rate.period, max(0, math.ceil(window.ends_at - now)))
        # On the Django request, which RateLimitHeadersMiddleware sees after the view.
        remaining = max(0, rate.limit - window.hits)
        request._request.rate_limit_quota = Quota(rate.limit, remaining, reset)
        self.retry_after = reset
        return window.hits <= rate.limit

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
