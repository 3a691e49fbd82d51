"""Writing events: in the caller's transaction, set-based, with their deliveries.

Callers are the choke points of docs/contract.md §11: a batch's creation (orders), every
lifecycle move (tracking), a wallet crossing its threshold and an invoice issued (billing).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from core.reads import instances_compiled_once
from events.models import Delivery, Event, WebhookEndpoint
from events.tasks import send_due_deliveries

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_event_id(at: datetime | None = None) -> str:
    """`evt_` + a ULID: 48 bits of milliseconds then 80 random bits, 26 base-32 characters.

    Sortable by time across processes to the millisecond; unique by its random part.
    """
    millis = int((at.timestamp() if at else time.time()) * 1000)
    number = (millis << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        number, digit = divmod(number, 32)
        chars.append(_CROCKFORD[digit])
    return "evt_" + "".join(reversed(chars))


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to record: whose it is, its type and its `data`."""

    business_id: object
    environment: str
    type: str
    data: dict


def record_events(
    *,
    business_id,
    environment: str,
    event_type: str,
    payloads: Sequence[dict],
    at: datetime,
) -> list[Event]:
    """Events of one type for one business and environment (see record_many)."""
    return record_many(
        [NewEvent(business_id, environment, event_type, data) for data in payloads], at=at
    )


def record_many(new_events: Sequence[NewEvent], *, at: datetime) -> list[Event]:
    """Write the events, and a delivery to every enabled endpoint subscribed to each.

    Must run inside the transaction of the change the events describe: if it rolls back,
    no event and no delivery remain. A constant number of statements whatever the count
    and however many businesses: one read of the endpoints, one insert of the events, one
    of the deliveries, and one task per endpoint that has new deliveries.
    """
    if not new_events:
        return []
    lock_feeds({(new.business_id, new.environment) for new in new_events})
    events = Event.objects.bulk_create(
        [
            Event(
                public_id=new_event_id(at),
                business_id=new.business_id,
                environment=new.environment,
                type=new.type,
                data=new.data,
                created_at=at,
            )
            for new in new_events
        ]
    )
    owners = {(e.business_id, e.environment) for e in events}
    endpoints_of = defaultdict(list)
    for endpoint in _enabled_endpoints(list({business_id for business_id, _ in owners})):
        endpoints_of[endpoint.business_id, endpoint.environment].append(endpoint)
    deliveries, notified = [], {}
    for event in events:
        for endpoint in endpoints_of.get((event.business_id, event.environment), ()):
            if endpoint.wants(event.type):
                deliveries.append(
                    Delivery(
                        event=event,
                        endpoint=endpoint,
                        next_attempt_at=at,
                        created_at=at,
                        updated_at=at,
                    )
                )
                notified[endpoint.pk] = endpoint
    if deliveries:
        Delivery.objects.bulk_create(deliveries)
        for endpoint in notified.values():
            on_new_deliveries(endpoint)
    return events


def _enabled_endpoints(business_ids: list) -> list[WebhookEndpoint]:
    """The enabled endpoints of these businesses (one, mostly). Every change that records
    events reads them: on PostgreSQL the SQL is compiled once per number of businesses
    (core.reads.instances_compiled_once)."""

    def enabled():
        return WebhookEndpoint.objects.filter(business__in=business_ids, enabled=True)

    key = ("enabled endpoints", len(business_ids))
    return instances_compiled_once(WebhookEndpoint, key, business_ids, enabled)


def lock_feeds(owners: set[tuple[object, str]]) -> None:
    """Take, until commit, the feed lock of each (business, environment) about to get events.

    GET /events pages by `seq`, which is drawn when a row is inserted, not when it commits.
    Without this lock a short transaction could commit seq 51 while a long one still holds
    seq 50, and a client polling in between would move its cursor past 50 for good. With
    it, an account's events are drawn and committed one transaction at a time, so `seq`
    order is commit order within each feed. Taken after any account (wallet) lock and
    before nothing else, in a fixed order: it cannot deadlock. SQLite writes one
    transaction at a time anyway.
    """
    connection = transaction.get_connection()
    assert connection.in_atomic_block, "events commit with their change"
    if connection.vendor != "postgresql":
        return
    keys = sorted(_feed_key(business_id, environment) for business_id, environment in owners)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%s::bigint[]) AS k", [keys]
        )


def _feed_key(business_id, environment: str) -> int:
    """A stable signed 64-bit advisory-lock key for one feed."""
    digest = hashlib.blake2b(f"event-feed:{business_id}:{environment}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def on_new_deliveries(endpoint: WebhookEndpoint) -> None:
    """Ask a worker to send this endpoint's due deliveries (events.tasks).

    The task row is written in this same transaction (django-tasks' database backend), so
    it exists if and only if the deliveries do. One task per endpoint, not per delivery.
    """
    send_due_deliveries.enqueue(str(endpoint.pk))
