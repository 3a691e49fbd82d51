"""Per-key rate limits (docs/contract.md §3, §10): fixed windows counted exactly across processes.

Every API key has one window per scope: "bulk" for POST /orders/bulk (RATE_LIMIT_BULK),
"default" for every other call (RATE_LIMIT_DEFAULT). A window opens at the key's first
request (after the previous one ended) and lasts the rate's period; past the limit the
answer is 429 RATE_LIMITED with Retry-After, and every counted response carries
RateLimit-Limit/-Remaining/-Reset. Calls that fail authentication are not counted; a call
is counted as soon as its key is known (accounts.auth calls counted()), so one refused by a
permission counts too, and ApiKeyRateThrottle only decides.

DRF's SimpleRateThrottle keeps a list of timestamps with cache get() and set(), so two
processes counting at once lose hits. Here each request is one hit of a shared counter
(core/counters.py): in the database by default, an upsert made by the very statement that
reads the API key (core.counters.count_with_row); Redis' INCR when CACHE_URL is redis://.
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


@dataclass(frozen=True, slots=True)
class Hit:
    """The hit a request will count, known before its key is: the scope, its rate, the
    moment. Authentication counts it as soon as the key is known (counted())."""

    scope: str
    rate: Rate
    now: float

    @property
    def prefix(self) -> str:
        """The counter's name but for the key's id."""
        return counter_of(self.scope, "")


@dataclass(frozen=True, slots=True)
class _Counted:
    hit: Hit
    window: counters.Window | None  # None: the counters were unavailable, nothing counted


def counter_of(scope: str, key_id) -> str:
    """The name of an API key's counter in a scope."""
    return f"ratelimit:{scope}:{key_id}"


def hit_ahead(request) -> Hit | None:
    """The hit this DRF request counts if its key is valid: its view is limited by
    ApiKeyRateThrottle. None otherwise."""
    view = (getattr(request, "parser_context", None) or {}).get("view")
    if view is None or not any(issubclass(t, ApiKeyRateThrottle) for t in view.throttle_classes):
        return None
    scope = _scope_of(view)
    return Hit(scope, rate_of(scope), time.time())


def counted(request, hit: Hit, key_id, window: counters.Window | None = None) -> None:
    """Count `hit` on the counter of the key `key_id` (unless the statement that read the key
    counted it already: `window`, core.counters.count_with_row). Counted as soon as the key
    is known, before the permissions, so a refused call counts and says so like any other;
    the throttle then only decides (ApiKeyRateThrottle)."""
    if window is None:
        try:
            window = counters.count(counter_of(hit.scope, key_id), hit.rate.period, hit.now)
        except counters.CountersUnavailable as exc:
            # A counters outage (Redis restarting) must not stop deliveries: the request goes
            # through uncounted, with no RateLimit-* headers, and the log says so.
            logger.warning("Rate limit not counted, counters unavailable: %s", exc)
    request._request.rate_limit_counted = _Counted(hit, window)
    if window is not None:
        _quota(request, hit.rate, window, hit.now)


class ApiKeyRateThrottle(BaseThrottle):
    """Limits each API key (not each business: keys of one business count apart) per scope.

    The hit is counted at authentication (counted()); a request authenticated some other way
    is counted here."""

    def allow_request(self, request, view) -> bool:
        key = getattr(request.auth, "key", None)
        if key is None:
            return True  # no API key (a public page): nothing to count against
        scope = _scope_of(view)
        ahead = getattr(request._request, "rate_limit_counted", None)
        if ahead is None or ahead.hit.scope != scope:
            counted(request, Hit(scope, rate_of(scope), time.time()), key.pk)
            ahead = request._request.rate_limit_counted
        if ahead.window is None:
            return True  # uncounted: the counters are unavailable
        self.retry_after = _quota(request, ahead.hit.rate, ahead.window, ahead.hit.now).reset
        return ahead.window.hits <= ahead.hit.rate.limit

    def wait(self) -> float:
        return self.retry_after


def _scope_of(view) -> str:
    return getattr(view, "throttle_scope", None) or "default"


def _quota(request, rate: Rate, window: counters.Window, now: float) -> Quota:
    reset = min(rate.period, max(0, math.ceil(window.ends_at - now)))
    quota = Quota(rate.limit, max(0, rate.limit - window.hits), reset)
    # On the Django request, which RateLimitHeadersMiddleware sees after the view.
    request._request.rate_limit_quota = quota
    return quota


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
