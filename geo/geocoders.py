"""Forward geocoding of address-only locations: a chain of providers set by GEOCODERS.

The chain is tried in order (docs/deployment.md): the gazetteer (the operators' own place
list, exact names and aliases), then HTTP providers (Nominatim, Photon) for what it does
not know. An address goes to the next provider only when the previous ones found nothing.
Every answer, "not found" included, is cached per provider by normalised address; a batch
geocodes each distinct address once. Transient failures (timeouts, HTTP errors) are not
cached. Cached answers expire: "found" after GEOCODE_TTL_DAYS, "not found" after
GEOCODE_NEGATIVE_TTL_HOURS; expired rows are looked up again and purged by
purge_geocode_cache.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
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
    name: str  # in GEOCODERS and in the cache's provider column

    @property
    def described(self) -> str:
        """What was tried, for GEOCODE_FAILED's message: never a secret of its URL."""
        ...

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]: ...


class GazetteerGeocoder:
    """Offline: match complete_address against Place names and aliases; the city breaks ties."""

    name = "gazetteer"
    described = "the place list (gazetteer)"

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]:
        index: dict[str, list[Place]] = {}
        for place in Place.objects.all():  # one read per batch, whatever its size
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


class HttpGeocoder:
    """A search API over HTTP, asked about several addresses at once, each with a timeout."""

    name = ""
    label = ""  # the provider's name in GEOCODE_FAILED's message
    parallel_lookups = 8

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    @property
    def described(self) -> str:
        # The host only: a URL may carry credentials (user:key@host) or a key in its query.
        parts = urllib.parse.urlsplit(self.base_url)
        port = f":{parts.port}" if parts.port else ""
        return f"{self.label} at {parts.hostname}{port}"

    def geocode_one(self, address: dict[str, str]) -> Pin | None:
        # As with the gazetteer, the street address is what is resolved: a city or a
        # country alone would come back as its centroid, not a place to deliver to.
        if not (address.get("complete_address") or "").strip():
            return None
        query = ", ".join(
            address[p] for p in ("complete_address", "city", "country") if address.get(p)
        )
        return self.pin_of(self.get_json(self.search_url(query)))

    def search_url(self, query: str) -> str:
        raise NotImplementedError

    def pin_of(self, answer: object) -> Pin | None:
        """The answer's first result; None when it found nothing; Transient when garbled."""
        raise NotImplementedError

    def get_json(self, url: str) -> object:
        request = urllib.request.Request(
            url,
            headers={"User-Agent": settings.NOMINATIM_USER_AGENT, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        # http.client errors (a broken status line, a body cut short) are not OSErrors.
        except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError) as exc:
            raise TransientGeocodeError(str(exc) or type(exc).__name__) from exc

    def geocode_many(self, addresses: dict[str, dict[str, str]]) -> dict[str, Pin | None]:
        def attempt(item):
            key, address = item
            try:
                return key, self.geocode_one(address)
            except TransientGeocodeError as exc:
                log.warning("%s failed for %r: %s", self.name, key, exc)
                return key, TransientGeocodeError

        with ThreadPoolExecutor(max_workers=self.parallel_lookups) as pool:
            return dict(pool.map(attempt, addresses.items()))


def checked_pin(lat: object, long: object) -> Pin:
    """A provider's coordinates as a pin; a value that is not one is a garbled answer."""
    try:
        pin = float(lat), float(long)  # Nominatim sends them as text
    except (TypeError, ValueError) as exc:
        raise TransientGeocodeError(f"unexpected answer: {exc}") from exc
    if not (math.isfinite(pin[0]) and math.isfinite(pin[1])):
        raise TransientGeocodeError(f"unexpected answer: coordinates {lat!r}, {long!r}")
    if abs(pin[0]) > 90 or abs(pin[1]) > 180:
        raise TransientGeocodeError(f"unexpected answer: coordinates {lat!r}, {long!r}")
    return pin


class NominatimGeocoder(HttpGeocoder):
    """A Nominatim-compatible search API: GET /search?q=...&format=jsonv2, a list of places."""

    name = "nominatim"
    label = "Nominatim"

    def __init__(self, base_url: str | None = None, timeout: float | None = None) -> None:
        super().__init__(
            base_url or settings.NOMINATIM_URL,
            timeout if timeout is not None else settings.NOMINATIM_TIMEOUT_SECONDS,
        )

    def search_url(self, query: str) -> str:
        params = {
            "q": query,
            "format": "jsonv2",
            "limit": 1,
            "countrycodes": settings.SERVICE_COUNTRY.lower(),
        }
        return f"{self.base_url}/search?{urllib.parse.urlencode(params)}"

    def pin_of(self, answer: object) -> Pin | None:
        if not isinstance(answer, list):  # not a search answer: don't cache it as "not found"
            raise TransientGeocodeError(f"unexpected answer: {type(answer).__name__}")
        if not answer:
            return None
        first = answer[0]
        if not isinstance(first, dict) or "lat" not in first or "lon" not in first:
            raise TransientGeocodeError("unexpected answer: a result without lat and lon")
        return checked_pin(first["lat"], first["lon"])


class PhotonGeocoder(HttpGeocoder):
    """A Photon search API: GET /api?q=...&limit=1, a GeoJSON FeatureCollection.

    Photon has no country filter, so a result in another country than SERVICE_COUNTRY
    (its `countrycode` property) counts as "not found": it is not a place we deliver to.
    """

    name = "photon"
    label = "Photon"

    def __init__(self, base_url: str | None = None, timeout: float | None = None) -> None:
        super().__init__(
            base_url or settings.PHOTON_URL,
            timeout if timeout is not None else settings.PHOTON_TIMEOUT_SECONDS,
        )

    def search_url(self, query: str) -> str:
        return f"{self.base_url}/api?{urllib.parse.urlencode({'q': query, 'limit': 1})}"

    def pin_of(self, answer: object) -> Pin | None:
        features = answer.get("features") if isinstance(answer, dict) else None
        if not isinstance(features, list):
            raise TransientGeocodeError("unexpected answer: not a FeatureCollection")
        if not features:
            return None
        try:
            feature = features[0]
            lon, lat = feature["geometry"]["coordinates"][:2]  # GeoJSON: longitude first
            country = (feature.get("properties") or {}).get("countrycode")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise TransientGeocodeError(f"unexpected answer: {exc!r}") from exc
        if isinstance(country, str) and country.upper() != settings.SERVICE_COUNTRY.upper():
            return None
        return checked_pin(lat, lon)


PROVIDERS: dict[str, Callable[[], Geocoder]] = {
    GazetteerGeocoder.name: GazetteerGeocoder,
    NominatimGeocoder.name: NominatimGeocoder,
    PhotonGeocoder.name: PhotonGeocoder,
}


def get_geocoders() -> list[Geocoder]:
    """The chain of GEOCODERS, in the order they are tried."""
    return [PROVIDERS[name]() for name in settings.GEOCODERS]


class Pins(dict[str, Pin | None]):
    """geocode_addresses' answer: address key → pin, or None when no provider found it.

    `unanswered` names, for a key that was not found, the providers that did not answer it
    (a timeout, an error): that is not a "no match", and the next batch asks them again.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.unanswered: dict[str, list[str]] = {}


def unanswered_for(pins: dict[str, Pin | None], key: str) -> tuple[str, ...]:
    """The providers that did not answer about this address (none for a plain dict)."""
    return tuple(getattr(pins, "unanswered", {}).get(key, ()))


def geocode_failed_message(side: str, unanswered: tuple[str, ...] = ()) -> str:
    """GEOCODE_FAILED's message for a pickup or drop: which providers were tried, and which
    of them did not answer."""
    chain = [geocoder.described for geocoder in get_geocoders()]
    answered = [described for described in chain if described not in unanswered]
    silent = ", ".join(described for described in chain if described in unanswered)
    if not silent:
        return f"No match for the {side} address in: {', '.join(chain)}."
    if not answered:
        return (
            f"The {side} address could not be looked up: {silent} did not answer; "
            "a new batch asks again."
        )
    return (
        f"No match for the {side} address in: {', '.join(answered)}; {silent} did not "
        "answer, and a new batch asks again."
    )


def geocode_addresses(addresses: Iterable[dict[str, str]]) -> Pins:
    """Resolve distinct addresses through the chain: one cache query for every provider,
    each provider asked about what the ones before it did not find, one cache upsert.

    Returns {address_key: (lat, long) or None} (Pins: with the providers that did not
    answer, for GEOCODE_FAILED's message). Callers look results up by address_key().
    Call it outside any transaction: the upsert then commits on its own at once, so no
    other request ever waits on a cache row this one wrote.
    """
    distinct = {address_key(a): a for a in addresses}
    if not distinct:
        return Pins()
    chain = get_geocoders()
    now = timezone.now()
    cached = _cached_answers(chain, list(distinct), now)
    pins = Pins(dict.fromkeys(distinct))
    rows: list[GeocodeResult] = []
    unresolved = distinct
    for geocoder in chain:
        mine = cached.get(geocoder.name, {})
        answers = {k: mine[k] for k in unresolved if k in mine}
        misses = {k: a for k, a in unresolved.items() if k not in mine}
        if misses:
            asked = geocoder.geocode_many(misses)
            rows += _cache_rows(geocoder.name, asked, now)
            answers |= {k: None if p is TransientGeocodeError else p for k, p in asked.items()}
            for key in (k for k, p in asked.items() if p is TransientGeocodeError):
                pins.unanswered.setdefault(key, []).append(geocoder.described)
        pins |= {k: pin for k, pin in answers.items() if pin is not None}
        unresolved = {k: a for k, a in unresolved.items() if answers.get(k) is None}
        if not unresolved:
            break
    # Sorted: two batches writing the same new addresses lock their index entries in the
    # same order, whichever order their bodies named them in, so they never deadlock.
    rows.sort(key=lambda row: (row.provider, row.key))
    # An expired answer is replaced by the new one, which starts a new lifetime.
    GeocodeResult.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["provider", "key"],
        update_fields=["found", "lat", "long", "created_at"],
    )
    return pins


def _cached_answers(
    chain: list[Geocoder], keys: list[str], now: datetime
) -> dict[str, dict[str, Pin | None]]:
    """{provider: {key: pin or None}}: the fresh cached answers of every provider at once."""
    fresh_rows = GeocodeResult.objects.filter(
        fresh_answers(now), provider__in=[g.name for g in chain], key__in=keys
    ).values_list("provider", "key", "found", "lat", "long")
    cached: dict[str, dict[str, Pin | None]] = {}
    for provider, key, found, lat, long in fresh_rows:
        cached.setdefault(provider, {})[key] = (lat, long) if found else None
    return cached


def _cache_rows(provider: str, asked: dict[str, object], now: datetime) -> list[GeocodeResult]:
    """Cache rows for a provider's answers; a transient failure is not an answer."""
    return [
        GeocodeResult(
            provider=provider,
            key=key,
            found=pin is not None,
            lat=pin[0] if pin else None,
            long=pin[1] if pin else None,
            created_at=now,
        )
        for key, pin in asked.items()
        if pin is not TransientGeocodeError
    ]


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
