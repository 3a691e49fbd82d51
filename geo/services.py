"""Service coverage and opening hours, loaded once per batch and asked for many points."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import orjson
import shapely
from django.conf import settings
from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection
from django.db.models import OuterRef

from core.reads import typed_rows_compiled_once
from geo.geometry import geometry_from_geojson, points_within
from geo.models import OpeningHours, ServiceArea


@dataclass(slots=True)
class Area:
    id: int
    name: str
    geometry: object
    hours: dict[int, list[tuple[time, time]]] = field(default_factory=dict)

    def is_open_at(self, moment: datetime) -> bool:
        local = moment.astimezone(ZoneInfo(settings.TIME_ZONE))
        clock = local.time().replace(tzinfo=None)
        return any(opens <= clock < closes for opens, closes in self.hours.get(local.weekday(), ()))

    def open_throughout(self, start: datetime, end: datetime) -> bool:
        """Whether the area is open at every moment from `start` until `end` (a window ending
        as the area closes is kept). Hours that touch or overlap are one stretch, over
        midnight too: an area open all day keeps a window across it."""
        zone = ZoneInfo(settings.TIME_ZONE)
        first, last = start.astimezone(zone), end.astimezone(zone)
        reach = None  # open without a break from `first` until here
        # A week with a break in it has no stretch longer than a week: 8 days decide it.
        for offset in range(8):
            day = first.date() + timedelta(days=offset)
            for opens, closes in self.stretches(day.weekday()):
                opened = datetime.combine(day, opens, tzinfo=zone)
                closed = datetime.combine(day, closes, tzinfo=zone)
                if reach is None and opened <= first <= closed:
                    reach = closed
                elif reach is not None and opened <= reach + _TOUCHING:
                    reach = max(reach, closed)
                elif reach is not None:
                    return False
                if reach is not None and last <= reach:
                    return True
            if reach is None:  # `start` falls outside the hours
                return False
        return reach is not None and reach - first >= timedelta(days=7)  # open all week

    def stretches(self, weekday: int) -> list[tuple[time, time]]:
        """The area's hours on a weekday, in order, hours that touch or overlap merged."""
        merged: list[tuple[time, time]] = []
        for opens, closes in sorted(self.hours.get(weekday, ())):
            if merged and opens <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], closes))
            else:
                merged.append((opens, closes))
        return merged


# Hours closing at 23:59:59.999999 go on into hours opening at 00:00 the next day.
_TOUCHING = timedelta(microseconds=1)


class Coverage:
    """The active service areas, with a vectorised point-in-area test."""

    def __init__(self, areas: list[Area]) -> None:
        self.areas = areas
        for area in areas:
            shapely.prepare(area.geometry)

    def locate(self, lats: list[float], longs: list[float]) -> list[tuple[int, ...]]:
        """For each point, the indexes of the areas that contain it (empty: not served)."""
        lat_arr = np.asarray(lats, dtype=float)
        long_arr = np.asarray(longs, dtype=float)
        if not self.areas:
            return [()] * len(lats)
        masks = np.vstack([points_within(a.geometry, lat_arr, long_arr) for a in self.areas])
        if len(self.areas) == 1:
            return [(0,) if inside else () for inside in masks[0].tolist()]
        # One conversion to Python lists; a numpy call per point would cost more than the test.
        indexes = range(len(self.areas))
        return [tuple(i for i in indexes if column[i]) for column in masks.T.tolist()]

    def is_open(self, area_indexes: tuple[int, ...], moment: datetime) -> bool:
        return any(self.areas[i].is_open_at(moment) for i in area_indexes)

    def open_throughout(
        self, area_indexes: tuple[int, ...], start: datetime, end: datetime
    ) -> bool:
        """Whether one of these areas is open from `start` until `end`, on one local day."""
        return any(self.areas[i].open_throughout(start, end) for i in area_indexes)

    def hours_text(self, area_indexes: tuple[int, ...], day: datetime) -> str:
        """The first of these areas' hours on `day`, for a message: "07:00–21:00", "closed"."""
        weekday = day.astimezone(ZoneInfo(settings.TIME_ZONE)).weekday()
        stretches = self.areas[area_indexes[0]].stretches(weekday) if area_indexes else []
        return ", ".join(f"{o:%H:%M}–{c:%H:%M}" for o, c in stretches) or "closed"


def load_coverage() -> Coverage:
    """The active areas with their opening hours. On PostgreSQL one statement, its SQL
    compiled once per process (core.reads): each area's hours as arrays beside it. Read as
    two ORM queries, compiled on every call, they were ~0.57 ms of a bulk call or a quote,
    against ~0.09 ms (docs/decisions.md, "The small calls' SQL and reference data are
    compiled once per process").
    The embedded default reads them apart; a test holds both ways equal."""
    if connection.vendor != "postgresql":
        return _coverage_of(_read_apart())
    rows = typed_rows_compiled_once(("coverage",), [], _areas_with_hours)
    return _coverage_of(
        (pk, name, orjson.loads(geojson), zip(weekdays, opens, closes, strict=True))
        for pk, name, geojson, weekdays, opens, closes in rows
    )


def _areas_with_hours():
    hours = OpeningHours.objects.filter(area=OuterRef("pk")).order_by("weekday", "opens")
    return ServiceArea.objects.filter(active=True).values_list(
        "id",
        "name",
        "geojson",
        ArraySubquery(hours.values("weekday")),
        ArraySubquery(hours.values("opens")),
        ArraySubquery(hours.values("closes")),
    )


def _read_apart() -> list[tuple]:
    """(id, name, geojson, [(weekday, opens, closes), …]) of each active area: the ORM's two
    reads, as values (no model instances: prefetch_related's machinery cost ~2.5 ms a batch)."""
    rows = ServiceArea.objects.filter(active=True).values_list("id", "name", "geojson")
    hours: dict[int, list[tuple[int, time, time]]] = defaultdict(list)
    opening = OpeningHours.objects.filter(area__active=True).order_by("weekday", "opens")
    for area_id, *hour in opening.values_list("area_id", "weekday", "opens", "closes"):
        hours[area_id].append(tuple(hour))
    return [(pk, name, geojson, hours.get(pk, ())) for pk, name, geojson in rows]


def _coverage_of(areas: Iterable[tuple]) -> Coverage:
    made = []
    for pk, name, geojson, opening in areas:
        hours: dict[int, list[tuple[time, time]]] = defaultdict(list)
        for weekday, opens, closes in opening:
            hours[weekday].append((opens, closes))
        made.append(Area(pk, name, geometry_from_geojson(geojson), dict(hours)))
    return Coverage(made)


def next_opening(lat: float, long: float, now: datetime) -> datetime | None:
    """The first quarter hour from now (within 8 days) at which the area of this point is
    open; None if no active area covers it or none opens within the 8 days."""
    coverage = load_coverage()
    [areas] = coverage.locate([lat], [long])
    if not areas:
        return None
    moment = now
    for _ in range(8 * 24 * 4):
        if coverage.is_open(areas, moment):
            return moment
        moment = (moment + timedelta(minutes=15)).replace(second=0, microsecond=0)
        moment -= timedelta(minutes=moment.minute % 15)
    return None
