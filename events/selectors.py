"""Reads of events, endpoints and deliveries, scoped to one business and environment.

Used by the API (events/api.py) and the dashboard; the wire shapes of docs/contract.md §11
(`event_object`, `endpoint_object`, `delivery_object`) are built here, once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from accounts.models import Business
from core.formats import iso_z
from events.models import Delivery, DeliveryStatus, Event, WebhookEndpoint

# Ids that can be looked up at all: a larger number would be a database error, not a miss.
MAX_BIGINT = 2**63 - 1


@dataclass(frozen=True)
class Page:
    rows: list
    has_more: bool


def event_object(event: Event) -> dict:
    """An event as the API lists it and as a webhook delivers it."""
    return {
        "id": event.public_id,
        "type": event.type,
        "created_at": iso_z(event.created_at),
        "environment": event.environment,
        "data": event.data,
    }


def endpoint_object(endpoint: WebhookEndpoint) -> dict:
    """An endpoint, never with its secret (that is shown once, by the caller that made it)."""
    return {
        "id": str(endpoint.pk),
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "description": endpoint.description,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason or None,
        "created_at": iso_z(endpoint.created_at),
        "environment": endpoint.environment,
    }


def delivery_object(delivery: Delivery) -> dict:
    return {
        "id": delivery.pk,
        "event_id": delivery.event.public_id,
        "event_type": delivery.event.type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": (
            iso_z(delivery.next_attempt_at) if delivery.status == DeliveryStatus.PENDING else None
        ),
        "created_at": iso_z(delivery.created_at),
        "log": [
            {
                "at": iso_z(attempt.at),
                "status_code": attempt.status_code,
                "duration_ms": attempt.duration_ms,
                "error": attempt.error or None,
                "response_excerpt": attempt.response_excerpt,
            }
            for attempt in delivery.log.all()
        ],
    }


def event_seq(*, business: Business, environment: str, public_id: str) -> int | None:
    """The position of this business's event in its environment's feed, if it is one."""
    return (
        Event.objects.filter(public_id=public_id, business=business, environment=environment)
        .values_list("seq", flat=True)
        .first()
    )


def events_after(
    *,
    business: Business,
    environment: str,
    after_seq: int | None,
    event_type: str | None,
    limit: int,
) -> Page:
    """The environment's events in creation order after `after_seq` (index `event_feed`)."""
    rows = Event.objects.filter(business=business, environment=environment)
    if after_seq is not None:
        rows = rows.filter(seq__gt=after_seq)
    if event_type:
        rows = rows.filter(type=event_type)
    found = list(rows.order_by("seq")[: limit + 1])
    return Page(rows=found[:limit], has_more=len(found) > limit)


def endpoints_of(*, business: Business, environment: str) -> list[WebhookEndpoint]:
    return list(
        WebhookEndpoint.objects.filter(business=business, environment=environment).order_by(
            "created_at", "pk"
        )
    )


def find_endpoint(
    *, business: Business, environment: str | None, endpoint_id: str | uuid.UUID
) -> WebhookEndpoint | None:
    """This business's endpoint (in `environment`, unless None), or None for anything else."""
    try:
        pk = endpoint_id if isinstance(endpoint_id, uuid.UUID) else uuid.UUID(endpoint_id)
    except ValueError:
        return None
    rows = WebhookEndpoint.objects.filter(pk=pk, business=business)
    if environment is not None:
        rows = rows.filter(environment=environment)
    return rows.first()


def as_id(text: str | int) -> int | None:
    """A positive database id from a path or query value, or None."""
    if isinstance(text, int):
        number = text
    elif text.isascii() and text.isdigit():
        number = int(text)
    else:
        return None
    return number if 0 < number <= MAX_BIGINT else None


def find_delivery(*, endpoint: WebhookEndpoint, delivery_id: str | int) -> Delivery | None:
    pk = as_id(delivery_id)
    if pk is None:
        return None
    return Delivery.objects.select_related("endpoint").filter(pk=pk, endpoint=endpoint).first()


def deliveries_of(*, endpoint: WebhookEndpoint) -> QuerySet[Delivery]:
    """The endpoint's delivery log, newest first (index `delivery_log`), with its attempts."""
    return (
        Delivery.objects.filter(endpoint=endpoint)
        .select_related("event")
        .prefetch_related("log")
        .order_by("-created_at", "-pk")
    )


def delivery_page(*, endpoint: WebhookEndpoint, before: Delivery | None, limit: int) -> Page:
    """`limit` deliveries older than `before` (a keyset cursor: no OFFSET over a long log)."""
    rows = deliveries_of(endpoint=endpoint)
    if before is not None:
        rows = rows.filter(
            Q(created_at__lt=before.created_at) | Q(created_at=before.created_at, pk__lt=before.pk)
        )
    found = list(rows[: limit + 1])
    return Page(rows=found[:limit], has_more=len(found) > limit)
