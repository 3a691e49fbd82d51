"""The dashboard maps' data: pins and service areas for static/dashboard/maps.js.

The same setup as the recipient's page (tracking/page_data.py, static/tracking/tracking.js):
Leaflet served by us, the tiles TRACKING_TILE_URL names (OpenStreetMap's unless set; `off`:
none, and the pins and the service areas still draw, offline), coordinates as [lat, long].
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from django.urls import reverse

from geo.geometry import geometry_from_geojson, leaflet_polygons
from geo.models import ServiceArea
from orders.models import Drop, DropStatus
from orders.selectors import batch_drops
from tracking.page_data import courier_at, map_tiles

Polygon = list[list[list[float]]]  # rings of [lat, long]
_ANY_ID = uuid.UUID(int=0)


def service_areas() -> list[Polygon]:
    """Every active service area as Leaflet polygons (GeoJSON has [long, lat]): one query."""
    polygons: list[Polygon] = []
    for geojson in ServiceArea.objects.filter(active=True).values_list("geojson", flat=True):
        try:
            geometry_from_geojson(geojson)
        except ValueError:
            continue  # refused by the admin form; a row written around it is not drawn
        polygons += leaflet_polygons(geojson)
    return polygons


def order_map(drop: Drop) -> dict:
    """The order page's map: pickup, drop-off, and the courier while one is on the way.

    `drop` comes with its order (select_related): no query but the areas'.
    """
    order = drop.order
    pickup = [order.pickup_lat, order.pickup_long]
    dropoff = [drop.lat, drop.long]
    return {
        "kind": "order",
        "status": drop.status.lower(),
        "pickup": pickup,
        "drop": dropoff,
        "courier": courier_at(pickup, dropoff, drop.courier_progress),
        "areas": service_areas(),
        "tiles": map_tiles(),
    }


@dataclass(frozen=True)
class BatchMap:
    data: dict  # for maps.js, through json_script
    by_status: dict[str, str]  # drop id text → status, for the results table
    legend: list[tuple[str, str, int]] = field(default_factory=list)  # (value, label, count)


def batch_map(*, business, batch_id) -> BatchMap:
    """Every accepted drop of the batch as a pin with its status, and its pickups (one query).

    Pins go as compact rows, [lat, long, status index, client_order_id, drop id]: a batch
    may hold thousands of drops.
    """
    statuses = list(DropStatus.values)
    pins, pickups, by_status = [], {}, {}
    counts: Counter[str] = Counter()
    rows = (
        batch_drops(batch_id)
        .filter(business=business)
        .values_list(
            "id",
            "client_order_id",
            "lat",
            "long",
            "status",
            "order__pickup_lat",
            "order__pickup_long",
        )
    )
    for pk, client_order_id, lat, long, status, pickup_lat, pickup_long in rows.order_by():
        pins.append([lat, long, statuses.index(status), client_order_id, str(pk)])
        pickups[pickup_lat, pickup_long] = None
        by_status[str(pk)] = status
        counts[status] += 1
    return BatchMap(
        data={
            "kind": "batch",
            "statuses": [s.lower() for s in statuses],
            "status_labels": [DropStatus(s).label for s in statuses],
            "pins": pins,
            "pickups": [list(at) for at in pickups],
            "order_url": reverse("dashboard:order", args=[_ANY_ID]).replace(str(_ANY_ID), "{id}"),
            "areas": service_areas(),
            "tiles": map_tiles(),
        },
        by_status=by_status,
        legend=[(s.lower(), DropStatus(s).label, counts[s]) for s in statuses if counts[s]],
    )
