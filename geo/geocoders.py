"""Forward geocoding of address-only locations, pluggable by the GEOCODER setting.

Every answer, "not found" included, is cached by normalised address; a batch geocodes
each distinct address once. Transient failures (timeouts, HTTP errors) are not cached.
Cached answers expire: "found" after GEOCODE_TTL_DAYS, "not found" after
GEOCODE_NEGATIVE_TTL_HOURS; expired rows are looked up again and purged by
purge_geocode_cache.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from geo.models import GeocodeResult, Place

log = logging.getLogger(__name__)

Pin = tuple[float, float]
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise(text: str | None) -> str:
    return _NON_WORD.sub(" ", (text or "").casefold()).strip()


def address_key(address: dict[str, str]) -> str:
    """The cache key of an address: its normalised complete address, city and country."""
    return "|".join(
        normalise(address.get(part)) for part in ("complete_address", "city", "country")
    )[:500]


class TransientGeocodeError(Exception):
    """The provider did not answer usefully this time; do not cache."""


class Geocoder(Protocol):
    name: str

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]: ...


class GazetteerGeocoder:
    """Offline: match complete_address against Place names and aliases; the city breaks ties."""

    name = "gazetteer"

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]:
        index: dict[str, list[Place]] = {}
        for place in Place.objects.all():
            names = [place.name, *place.aliases.splitlines()]
            keys = {normalise(n) for n in names if n.strip()}
            if place.city:
                keys |= {f"{k} {normalise(place.city)}" for k in list(keys)}
            for key in keys:
                index.setdefault(key, []).append(place)
        found: dict[str, Pin | None] = {}
        for key, address in addresses.items():
            candidates = index.get(normalise(address.get("complete_address")), [])
            city = normalise(address.get("city"))
            best = next((p for p in candidates if city and normalise(p.city) == city), None)
            best = best or (candidates[0] if candidates else None)
            found[key] = (best.lat, best.long) if best else None
        return found


class NominatimGeocoder:
    """A Nominatim-compatible HTTP search API, with a timeout per look-up."""

    name = "nominatim"
    parallel_lookups = 8

    def __init__(self, base_url: str | None = None, timeout: float | None = None) -> None:
        self.base_url = (base_url or settings.NOMINATIM_URL).rstrip("/")
        self.timeout = timeout if timeout is not None else settings.NOMINATIM_TIMEOUT_SECONDS

    def geocode_one(self, address: dict[str, str]) -> Pin | None:
        # As with the gazetteer, the street address is what is resolved: a city or a
        # country alone would come back as its centroid, not a place to deliver to.
        if not (address.get("complete_address") or "").strip():
            return None
        query = ", ".join(
            address[p] for p in ("complete_address", "city", "country") if address.get(p)
        )
        params = urllib.parse.urlencode(
            {
                "q": query,
                "format": "jsonv2",
                "limit": 1,
                "countrycodes": settings.SERVICE_COUNTRY.lower(),
            }
        )
        request = urllib.request.Request(
            f"{self.base_url}/search?{params}",
            headers={"User-Agent": settings.NOMINATIM_USER_AGENT, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                results = json.loads(response.read())
        # http.client errors (a broken status line, a body cut short) are not OSErrors.
        except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError) as exc:
            raise TransientGeocodeError(str(exc) or type(exc).__name__) from exc
        if not isinstance(results, list):  # not a search answer: don't cache it as "not found"
            raise TransientGeocodeError(f"unexpected answer: {type(results).__name__}")
        if not results:
            return None
        try:
            return float(results[0]["lat"]), float(results[0]["lon"])
        except (KeyError, TypeError, ValueError) as exc:
            raise TransientGeocodeError(f"unexpected answer: {exc}") from exc

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]:
        def attempt(item):
            key, address = item
            try:
                return key, self.geocode_one(address)
            except TransientGeocodeError as exc:
                log.warning("geocoder failed for %r: %s", key, exc)
                return key, TransientGeocodeError

        with ThreadPoolExecutor(max_workers=self.parallel_lookups) as pool:
            return dict(pool.map(attempt, addresses.items()))


def get_geocoder() -> Geocoder:
    if settings.GEOCODER == "nominatim":
        return NominatimGeocoder()
    return GazetteerGeocoder()


def geocode_addresses(addresses: Iterable[dict[str, str]]) -> dict[str, Pin | None]:
    """Resolve distinct addresses: one cache query, the provider for misses, one cache upsert.

    Returns {address_key: (lat, long) or None}. Callers look results up by address_key().
    Call it outside any transaction: the upsert then commits on its own at once, so no
    other request ever waits on a cache row this one wrote.
    """
    distinct = {address_key(a): a for a in addresses}
    if not distinct:
        return {}
    geocoder = get_geocoder()
    now = timezone.now()
    pins: dict[str, Pin | None] = {}
    fresh_rows = GeocodeResult.objects.filter(
        fresh_answers(now), provider=geocoder.name, key__in=list(distinct)
    )
    for key, found, lat, long in fresh_rows.values_list("key", "found", "lat", "long"):
        pins[key] = (lat, long) if found else None
    misses = {k: a for k, a in distinct.items() if k not in pins}
    if misses:
        answers = geocoder.geocode_many(misses)
        rows = []
        # Sorted by key: two batches writing the same new addresses lock their index entries
        # in the same order, whichever order their bodies named them in, so they never
        # deadlock on each other.
        for key in sorted(answers):
            pin = answers[key]
            if pin is TransientGeocodeError:
                pins[key] = None
                continue
            pins[key] = pin
            rows.append(
                GeocodeResult(
                    provider=geocoder.name,
                    key=key,
                    found=pin is not None,
                    lat=pin[0] if pin else None,
                    long=pin[1] if pin else None,
                    created_at=now,
                )
            )
        # An expired answer is replaced by the new one, which starts a new lifetime.
        GeocodeResult.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["provider", "key"],
            update_fields=["found", "lat", "long", "created_at"],
        )
    return pins


def fresh_answers(now: datetime) -> Q:
    """Cached answers still inside their lifetime: found ones live longer than failures."""
    return Q(found=True, created_at__gte=now - timedelta(days=settings.GEOCODE_TTL_DAYS)) | Q(
        found=False, created_at__gte=now - timedelta(hours=settings.GEOCODE_NEGATIVE_TTL_HOURS)
    )


def purge_expired_answers(now: datetime | None = None) -> int:
    """Delete cached answers past their lifetime; returns how many. Idempotent."""
    return GeocodeResult.objects.exclude(fresh_answers(now or timezone.now())).delete()[0]


def forget_cached_results(provider: str = GazetteerGeocoder.name) -> int:
    """Drop cached answers, e.g. after the gazetteer's places change."""
    return GeocodeResult.objects.filter(provider=provider).delete()[0]
