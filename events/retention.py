"""Forgetting old events (docs/contract.md §11: kept EVENT_RETENTION_DAYS), with their
deliveries."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction

from events.models import Delivery, DeliveryAttempt, Event

CHUNK = 10_000  # events per transaction: short locks, bounded undo, however far behind


def purge_events_before(cutoff: datetime) -> int:
    """Delete events created before `cutoff`, their deliveries and attempt logs; the count.

    Set-based: three DELETE statements per chunk of events, oldest first (no row is loaded
    into Python, as Django's cascading delete would). A delivery still pending that old
    goes with its event: the retry schedule ended long before.
    """
    qn = connection.ops.quote_name
    event, delivery, attempt = (m._meta for m in (Event, Delivery, DeliveryAttempt))
    event_seq = qn(event.pk.column)
    delivery_event = qn(delivery.get_field("event").column)
    attempt_delivery = qn(attempt.get_field("delivery").column)
    old = f"{qn(event.get_field('created_at').column)} < %s"
    # A chunk: the old events up to a sequence number (the oldest CHUNK of them).
    chunk = f"SELECT {event_seq} FROM {qn(event.db_table)} WHERE {old} AND {event_seq} <= %s"
    deleted = 0
    while True:
        with transaction.atomic():
            seqs = list(
                Event.objects.filter(created_at__lt=cutoff)
                .order_by("seq")
                .values_list("seq", flat=True)[:CHUNK]
            )
            if not seqs:
                return deleted
            params = [connection.ops.adapt_datetimefield_value(cutoff), seqs[-1]]
            with connection.cursor() as cursor:
                cursor.execute(
                    f"DELETE FROM {qn(attempt.db_table)} WHERE {attempt_delivery} IN ("
                    f"SELECT {qn(delivery.pk.column)} FROM {qn(delivery.db_table)} "
                    f"WHERE {delivery_event} IN ({chunk}))",
                    params,
                )
                cursor.execute(
                    f"DELETE FROM {qn(delivery.db_table)} WHERE {delivery_event} IN ({chunk})",
                    params,
                )
                cursor.execute(
                    f"DELETE FROM {qn(event.db_table)} WHERE {event_seq} IN ({chunk})", params
                )
                deleted += cursor.rowcount
