"""Probes for load balancers and orchestrators (DESIGN.md §16)."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

from core.middleware import RETRY_AFTER_SECONDS


@never_cache
def liveness(request) -> HttpResponse:
    """The process answers; the database is not asked, so a database outage restarts nothing."""
    return HttpResponse("ok", content_type="text/plain")


@never_cache
def readiness(request) -> JsonResponse:
    """Ready when the database answers; 503 (take this instance out of rotation) when not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        response = JsonResponse({"database": "unavailable"}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return JsonResponse({"database": "ok"})
