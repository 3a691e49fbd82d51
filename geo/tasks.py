"""Background work of geo, run by `manage.py db_worker` (scheduled in core/schedule.py)."""

from __future__ import annotations

from django_tasks import task

from geo.geocoders import purge_expired_answers


@task()
def purge_geocode_cache() -> int:
    """Delete cached geocoder answers past their lifetime; how many."""
    return purge_expired_answers()
