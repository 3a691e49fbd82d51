"""What the recipient's tracking page shows (docs/contract.md §14): one drop, and only what its
recipient may see.

Status, ETA, proof and failure come from the drop's tracking entry (tracking.selectors), so
the page tells exactly what the API tells the business; from that entry only named fields
are copied out. Whoever holds the link sees the page, so nothing else leaves: no phone
numbers, no price, no PIN, no last name, nothing of another drop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import shapely
from django.conf import settings
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext

from core.formats import zone_label
from geo.geometry import geometry_from_geojson, leaflet_polygons
from geo.models import ServiceArea
from orders.links import drop_ids_of
from orders.models import Drop, DropStatus, FailureReason, LegacyTrackingToken, ProofMethod
from orders.statuses import ACTIVE_STATUSES, ON_THE_WAY
from tracking.selectors import entries_by_drop_id

# A token is 22 URL-safe characters (orders/links.py); links stored before tokens were
# derived may be any token_urlsafe of 12 to 32 bytes. Anything else is refused before a query.
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,43}\Z")

# Where the courier is drawn: only while one is ON_THE_WAY, with the parcel or to it.

STATUS_WORDS = {
    DropStatus.SCHEDULED: _("Scheduled"),
    DropStatus.PENDING: _("Waiting for a courier"),
    DropStatus.ASSIGNED: _("A courier is picking it up"),
    DropStatus.PICKED_UP: _("On its way"),
    DropStatus.DELIVERED: _("Delivered"),
    DropStatus.FAILED: _("Delivery failed"),
    DropStatus.RETURNING: _("Delivery failed: returning to the sender"),
    DropStatus.RETURNED: _("Returned to the sender"),
    DropStatus.CANCELLED: _("Cancelled"),
}
EVENT_WORDS = {
    DropStatus.SCHEDULED: _("Order placed, scheduled for later"),
    DropStatus.PENDING: _("Order placed"),
    DropStatus.ASSIGNED: _("Courier assigned"),
    DropStatus.PICKED_UP: _("Picked up by the courier"),
    DropStatus.DELIVERED: _("Delivered"),
    DropStatus.FAILED: _("Delivery failed"),
    DropStatus.RETURNING: _("On its way back to the sender"),
    DropStatus.RETURNED: _("Returned to the sender"),
    DropStatus.CANCELLED: _("Cancelled"),
}
FAILURE_WORDS = {
    FailureReason.RECIPIENT_UNAVAILABLE: _("The courier could not reach the recipient."),
    FailureReason.ADDRESS_NOT_FOUND: _("The courier could not find the address."),
    FailureReason.REFUSED: _("The parcel was refused at the door."),
    FailureReason.WRONG_PIN: _("The delivery PIN was given wrong too many times."),
    FailureReason.OTHER: _("The delivery could not be completed."),
}
PROOF_WORDS = {
    ProofMethod.PIN: _("Confirmed with the delivery PIN"),
    ProofMethod.PHOTO: _("Photo taken at the door"),
    ProofMethod.SIGNATURE: _("Signed for at the door"),
    ProofMethod.NONE: _("Handed over"),
}


@dataclass(frozen=True, slots=True)
class Moment:
    iso: str  # UTC wire format, for <time datetime>
    local: datetime  # in the service time zone
    zone: str  # that zone's label at that moment, e.g. "UTC+7" or "CET"

    @property
    def text(self) -> str:
        """In the page's language, e.g. "Mon 23 Nov, 14:05" or "ច័ន្ទ 23 វិច្ឆិកា, 14:05"."""
        return date_format(self.local, pgettext("a time on the tracking page", "D j M, H:i"))


@dataclass(frozen=True, slots=True)
class Step:
    status: str
    words: str
    at: Moment


@dataclass(frozen=True, slots=True)
class Proof:
    method: str
    words: str
    at: Moment | None
    received_by: str | None
    photo_path: str | None  # /pod/<signed>: same host as the page, whatever BASE_URL says
    signature_path: str | None = None  # the recipient's signature, the same way


@dataclass(frozen=True, slots=True)
class Failure:
    reason: str
    words: str
    at: Moment | None


@dataclass(frozen=True, slots=True)
class TrackingPage:
    status: str
    status_words: str
    language: str | None  # the drop's recipient_language, as sent (docs/contract.md §26)
    business_language: str  # the business's setting for its recipients
    is_active: bool
    is_sandbox: bool
    business_name: str
    first_name: str
    courier_first_name: str  # the courier on the way to this drop; "" when none is
    time_zone: str
    timeline: list[Step]
    eta_pickup: Moment | None
    eta_dropoff: Moment | None
    picked_up: bool  # the ETA's pickup time is then when it happened, not a forecast
    proof: Proof | None
    failure: Failure | None
    # For tracking.js, through json_script: coordinates only.
    map: dict = field(default_factory=dict)


def _page_row(drops) -> tuple | None:
    return (
        drops.order_by()
        .values_list(
            "pk",
            "business__name",
            "courier_progress",
            "recipient_language",
            "business__recipient_language",
        )
        .first()
    )


def tracking_page(token: str) -> TrackingPage | None:
    """The page of the drop with this tracking token; None if malformed or unknown.

    Four queries whatever the drop's history: the drop, its entry (two), the areas; one more
    for a link stored before tokens were derived, or one that names no drop.
    """
    if not TOKEN_SHAPE.match(token):
        return None
    # The drop the token names under the current key or a fallback one, by primary key; else
    # the drop a link stored before names (orders.models.LegacyTrackingToken). Two reads,
    # not one with an OR: PostgreSQL cannot use an index for `id IN (…) OR id IN (subquery)`
    # and would scan every drop.
    found = _page_row(Drop.objects.filter(pk__in=drop_ids_of(token)))
    if found is None:
        stored = LegacyTrackingToken.objects.filter(token=token).values("drop_id")
        found = _page_row(Drop.objects.filter(pk__in=stored))
    if found is None:
        return None
    drop_id, business_name, progress, language, business_language = found
    entry = entries_by_drop_id([drop_id])[str(drop_id)]
    zone = ZoneInfo(settings.TIME_ZONE)
    status = entry["status"]
    eta = entry["eta"] or {}
    return TrackingPage(
        status=status,
        status_words=STATUS_WORDS.get(status, status),
        language=language,
        business_language=business_language,
        is_active=status in ACTIVE_STATUSES,
        is_sandbox=entry["environment"] == "sandbox",
        business_name=business_name,
        first_name=first_name(entry["dropoff"]["name"]),
        courier_first_name=_courier_first_name(entry),
        time_zone=settings.TIME_ZONE,
        timeline=[
            Step(e["status"], EVENT_WORDS.get(e["status"], e["status"]), moment(e["at"], zone))
            for e in entry["events"]
        ],
        eta_pickup=moment(eta.get("pickup_at"), zone),
        eta_dropoff=moment(eta.get("dropoff_at"), zone),
        picked_up=status == DropStatus.PICKED_UP,
        proof=_proof(entry["proof_of_delivery"], zone),
        failure=_failure(entry["failure"], zone),
        map=_map_data(entry, progress),
    )


def _courier_first_name(entry: dict) -> str:
    """The courier's first name while one is on the way (docs/contract.md §20)."""
    driver = entry["driver"]
    if driver is None or entry["status"] not in ON_THE_WAY:
        return ""
    return first_name(driver["name"])


def first_name(name: str) -> str:
    """The first whitespace-separated word: the page greets, it does not identify."""
    words = name.split()
    return words[0] if words else ""


def moment(iso: str | None, zone: ZoneInfo) -> Moment | None:
    if iso is None:
        return None
    local = datetime.fromisoformat(iso).astimezone(zone)
    return Moment(iso=iso, local=local, zone=zone_label(local))


def _proof(proof: dict | None, zone: ZoneInfo) -> Proof | None:
    if proof is None:
        return None
    url, signed = proof["photo_url"], proof.get("signature_url")
    return Proof(
        method=proof["method"],
        words=PROOF_WORDS.get(proof["method"], proof["method"]),
        at=moment(proof["at"], zone),
        received_by=proof["received_by"],
        photo_path=urlsplit(url).path if url else None,
        signature_path=urlsplit(signed).path if signed else None,
    )


def _failure(failure: dict | None, zone: ZoneInfo) -> Failure | None:
    if failure is None:
        return None
    return Failure(
        reason=failure["reason"],
        words=FAILURE_WORDS.get(failure["reason"], FAILURE_WORDS[FailureReason.OTHER]),
        at=moment(failure["at"], zone),
    )


def _map_data(entry: dict, progress: float | None) -> dict:
    """Pins as [lat, long], the areas that serve the drop, the courier, the tiles if any."""
    pickup = [entry["pickup"]["lat"], entry["pickup"]["long"]]
    drop = [entry["dropoff"]["lat"], entry["dropoff"]["long"]]
    on_the_way = entry["status"] in ON_THE_WAY
    # The real courier's position while fresh (docs/contract.md §20); the simulated
    # progress only for the sandbox test driver's scenarios.
    position = (entry["driver"] or {}).get("position")
    courier = [position["lat"], position["long"]] if position else None
    if courier is None and on_the_way:
        courier = courier_at(pickup, drop, progress)
    return {
        "status": entry["status"],
        "pickup": pickup,
        "drop": drop,
        "courier": courier if on_the_way else None,
        "areas": areas_serving(*drop),
        "tiles": map_tiles(),
    }


def map_tiles() -> dict | None:
    """The tile layer behind a map's pins (OpenStreetMap's unless TRACKING_TILE_URL says
    otherwise), or None when tiles are off: the pins and areas draw either way."""
    if not settings.TRACKING_TILE_URL:
        return None
    return {"url": settings.TRACKING_TILE_URL, "attribution": settings.TRACKING_TILE_ATTRIBUTION}


def courier_at(pickup: list[float], drop: list[float], progress: float | None) -> list | None:
    """The simulated courier's [lat, long]: `progress` of the way from pickup to drop."""
    if progress is None:
        return None
    share = min(max(progress, 0.0), 1.0)
    return [p + (d - p) * share for p, d in zip(pickup, drop, strict=True)]


def areas_serving(lat: float, long: float) -> list[list[list[list[float]]]]:
    """The active service areas that contain the point (edges count), as Leaflet polygons:
    one entry per polygon, each a list of rings of [lat, long] (GeoJSON has [long, lat])."""
    polygons = []
    for geojson in ServiceArea.objects.filter(active=True).values_list("geojson", flat=True):
        try:
            geometry = geometry_from_geojson(geojson)
        except ValueError:
            continue  # refused by the admin form; a row written around it is not drawn
        if not shapely.intersects_xy(geometry, long, lat):
            continue
        polygons += leaflet_polygons(geojson)
    return polygons
