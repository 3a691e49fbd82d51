"""GeoJSON areas as prepared shapely geometries, checked for many points at once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import shapely
from shapely.geometry import MultiPolygon, Polygon, shape

EARTH_RADIUS_KM = 6371.0


def geometry_from_geojson(value: Any) -> Polygon | MultiPolygon:
    """Parse and check a GeoJSON Polygon or MultiPolygon; ValueError says what is wrong."""
    if not isinstance(value, dict) or value.get("type") not in ("Polygon", "MultiPolygon"):
        raise ValueError('Must be a GeoJSON object with "type": "Polygon" or "MultiPolygon".')
    try:
        geometry = shape(value)
    except Exception as exc:  # shapely raises several types for malformed coordinates
        raise ValueError(f"Malformed GeoJSON coordinates: {exc}") from exc
    if geometry.is_empty:
        raise ValueError("The polygon is empty.")
    if not geometry.is_valid:
        raise ValueError(f"The polygon is not valid: {shapely.is_valid_reason(geometry)}.")
    min_x, min_y, max_x, max_y = geometry.bounds
    if min_x < -180 or max_x > 180 or min_y < -90 or max_y > 90:
        raise ValueError("Coordinates must be [longitude, latitude] within range.")
    return geometry


def leaflet_polygons(geojson: dict) -> list[list[list[list[float]]]]:
    """A (Multi)Polygon as Leaflet draws it: one entry per polygon, each a list of rings of
    [lat, long] (GeoJSON has [long, lat])."""
    parts = (
        geojson["coordinates"] if geojson["type"] == "MultiPolygon" else [geojson["coordinates"]]
    )
    return [[[[y, x] for x, y, *_ in ring] for ring in part] for part in parts]


def points_within(geometry, lats: np.ndarray, longs: np.ndarray) -> np.ndarray:
    """A boolean per point: inside the area or on its edge (edges count as served)."""
    if len(lats) == 0:
        return np.zeros(0, dtype=bool)
    return shapely.intersects_xy(geometry, longs, lats)


def haversine_km(lat1: float, long1: float, lat2: float, long2: float) -> float:
    return DistancesFrom(lat1, long1).km(lat2, long2)


class DistancesFrom:
    """Great-circle (haversine) distances from one point to many: the point's own terms
    are worked out once. haversine_km is the one-off form of the same formula."""

    __slots__ = ("cos_p1", "long1", "p1")

    def __init__(self, lat: float, long: float) -> None:
        self.p1, self.long1 = math.radians(lat), long
        self.cos_p1 = math.cos(self.p1)

    def km(self, lat: float, long: float) -> float:
        p2 = math.radians(lat)
        dp, dl = p2 - self.p1, math.radians(long - self.long1)
        a = math.sin(dp / 2) ** 2 + self.cos_p1 * math.cos(p2) * math.sin(dl / 2) ** 2
        return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))

    def km_to_many(self, lats: np.ndarray, longs: np.ndarray) -> np.ndarray:
        """km() for arrays of points at once (degrees), by numpy: the dispatcher's distances
        from one pickup to every candidate courier (dispatch/dispatcher.py)."""
        p2 = np.radians(lats)
        dl = np.radians(longs - self.long1)
        a = np.sin((p2 - self.p1) / 2) ** 2 + self.cos_p1 * np.cos(p2) * np.sin(dl / 2) ** 2
        return 2 * EARTH_RADIUS_KM * np.arcsin(np.minimum(1.0, np.sqrt(a)))
