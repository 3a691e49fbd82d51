"""Helpers of the delivery tests: endpoints made directly, events recorded as the apps do."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from events.endpoints import new_secret
from events.models import Delivery, Event, EventType, WebhookEndpoint
from events.services import record_events


def make_endpoint(tenant, url: str, *, environment: str = "sandbox", types=("*",), **fields):
    return WebhookEndpoint.objects.create(
        business=tenant.business,
        environment=environment,
        url=url,
        event_types=list(types),
        secret=new_secret(),
        **fields,
    )


def emit(tenant, count: int = 1, *, environment: str = "sandbox", type=EventType.BATCH_CREATED):
    """Record `count` events in one transaction, as a change would; the events."""
    with transaction.atomic():
        return record_events(
            business_id=tenant.business.pk,
            environment=environment,
            event_type=type,
            payloads=[{"n": n} for n in range(count)],
            at=timezone.now(),
        )


def deliveries_of(endpoint: WebhookEndpoint) -> list[Delivery]:
    return list(Delivery.objects.filter(endpoint=endpoint).order_by("id"))


def public_ids(events: list[Event]) -> list[str]:
    return [event.public_id for event in events]
