"""Reading the events of the businesses that opted in, and making the messages they call for.

The same events as the webhooks' (docs/contract.md §11), read after they committed, by a
periodic job (notifications.tasks.notify_recipients): nothing is added to the requests and
moves that write them. Each active feed (a business's environment with a template on) keeps
a cursor; a pass locks the feeds with their newest event's seq in one statement, reads their
new events in one more, makes the messages in memory, inserts them in one statement (a
message already made for its drop, kind and channel is skipped by the unique constraint)
and moves the cursors in one more: a constant number of statements whatever the numbers.

What calls for a message (docs/notifications.md, "Events"):
- `order.status_changed` to PICKED_UP (dispatched), DELIVERED or FAILED;
- `order.courier_position` with the courier within NOTIFY_NEARBY_METERS of a drop it carries
  (nearby): once per drop, the first time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import OuterRef, Q, Subquery
from django_tasks_db.utils import exclusive_transaction

from accounts.models import Business
from events.models import Event, EventType
from geo.geometry import haversine_km
from notifications import texts
from notifications.models import (
    Channel,
    Kind,
    Message,
    NotificationFeed,
    NotificationTemplate,
)
from orders.links import tracking_tokens, tracking_url
from orders.models import Drop, DropStatus

READ_AT_MOST = 1000  # events per pass; the next pass reads on from the cursors
KIND_OF_STATUS = {
    DropStatus.PICKED_UP: Kind.DISPATCHED,
    DropStatus.DELIVERED: Kind.DELIVERED,
    DropStatus.FAILED: Kind.FAILED,
}
_TYPES = (EventType.ORDER_STATUS_CHANGED, EventType.ORDER_COURIER_POSITION)


@dataclass(frozen=True, slots=True)
class _Read:
    seq: int
    business_id: object  # a UUID
    environment: str
    type: str
    data: dict
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Call:
    """A message one event calls for, before its channels: whom, about what."""

    event_seq: int
    business_id: object
    environment: str
    drop_id: str
    kind: str
    recipient_name: str
    phone: str
    tracking_url: str
    eta: str | None  # the ETA's drop-off time, as wire text
    reference: str
    language: str | None  # the drop's recipient_language; None: the business's (§26)


def collect(*, now: datetime) -> int:
    """Read the active feeds' new events and make their messages; how many were made.

    Feeds are taken with SKIP LOCKED, so two passes at once read different feeds, and the
    unique constraints make a message once whatever runs twice.
    """
    with exclusive_transaction():  # on SQLite, which ignores FOR UPDATE: one pass at a time
        feeds = _active_feeds()
        if not feeds:
            return 0
        events, cut = _new_events(feeds)
        oldest = now - timedelta(minutes=settings.NOTIFY_MAX_EVENT_AGE_MINUTES)
        fresh = [event for event in events if event.created_at >= oldest]
        messages = _messages(_calls(fresh), now)
        Message.objects.bulk_create(messages, ignore_conflicts=True)
        _advance(feeds, events, cut=cut)
    return len(messages)


def _active_feeds() -> list[NotificationFeed]:
    """The active feeds not taken by another pass, each with `newest`: its newest event's
    seq (None: none yet), read in the same statement that locks it."""
    newest = (
        Event.objects.filter(
            business_id=OuterRef("business_id"), environment=OuterRef("environment")
        )
        .order_by("-seq")
        .values("seq")[:1]
    )
    return list(
        NotificationFeed.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(active=True)
        .annotate(newest=Subquery(newest))
    )


def _new_events(feeds: list[NotificationFeed]) -> tuple[list[_Read], bool]:
    """The feeds' events after their cursors up to their `newest`, of the types that notify,
    in seq order, READ_AT_MOST of them; and whether that limit cut the list.

    Bounded above by `newest`, read before: within a feed, events commit in seq order
    (events.services.lock_feeds), so every event up to a committed one is committed, and
    this read sees exactly the events the cursor may move past. Each feed's range is an
    index range of `event_feed` (business, environment, seq).
    """
    ranges = Q()
    for feed in feeds:
        if feed.newest is not None and feed.newest > feed.last_seq:
            ranges |= Q(
                business_id=feed.business_id,
                environment=feed.environment,
                seq__gt=feed.last_seq,
                seq__lte=feed.newest,
            )
    if not ranges:
        return [], False
    rows = (
        Event.objects.filter(ranges, type__in=_TYPES)
        .order_by("seq")
        .values_list("seq", "business_id", "environment", "type", "data", "created_at")
    )
    events = [_Read(*row) for row in rows[: READ_AT_MOST + 1]]
    return events[:READ_AT_MOST], len(events) > READ_AT_MOST


def _advance(feeds: list[NotificationFeed], events: list[_Read], *, cut: bool) -> None:
    """Each feed's cursor past what was read: to its `newest` when the whole range was read
    (the events of other types in it included, so an idle feed's range stays empty); when
    the limit cut the list, to the feed's last event read (in seq order, every event of the
    feed up to it was read)."""
    last = {}
    for event in events:
        last[event.business_id, event.environment] = event.seq
    moved = []
    for feed in feeds:
        seq = last.get((feed.business_id, feed.environment)) if cut else feed.newest
        if seq is not None and seq > feed.last_seq:
            feed.last_seq = seq
            moved.append(feed)
    NotificationFeed.objects.bulk_update(moved, ["last_seq"])


def _calls(events: list[_Read]) -> list[Call]:
    calls = [
        _status_call(event)
        for event in events
        if event.type == EventType.ORDER_STATUS_CHANGED
        and event.data.get("status") in KIND_OF_STATUS
    ]
    positions = [e for e in events if e.type == EventType.ORDER_COURIER_POSITION]
    return calls + _nearby_calls(positions)


def _status_call(event: _Read) -> Call:
    data = event.data
    dropoff = data.get("dropoff") or {}
    return Call(
        event_seq=event.seq,
        business_id=event.business_id,
        environment=event.environment,
        drop_id=data["drop_id"],
        kind=KIND_OF_STATUS[data["status"]],
        recipient_name=dropoff.get("name") or "",
        phone=dropoff.get("phone") or "",
        tracking_url=data.get("tracking_url") or "",
        eta=(data.get("eta") or {}).get("dropoff_at"),
        reference=data.get("client_order_id") or "",
        language=data.get("recipient_language"),
    )


def _nearby_calls(events: list[_Read]) -> list[Call]:
    """A call per drop on board (PICKED_UP) whose recipient the courier is near; the drops'
    places are read in one query for all the events."""
    carried = [
        (event, drop)
        for event in events
        if (event.data.get("courier") or {}).get("position")
        for drop in event.data.get("drops", ())
        if drop.get("status") == DropStatus.PICKED_UP
    ]
    if not carried:
        return []
    ids = sorted({drop["drop_id"] for _, drop in carried})
    places = {
        str(pk): row
        for pk, *row in Drop.objects.filter(pk__in=ids).values_list(
            "pk", "lat", "long", "recipient_name", "recipient_phone", "recipient_language"
        )
    }
    links = dict(zip(ids, tracking_tokens(ids), strict=True))
    near_km = settings.NOTIFY_NEARBY_METERS / 1000
    calls = []
    for event, drop in carried:
        position, place = event.data["courier"]["position"], places.get(drop["drop_id"])
        if place is None:
            continue
        lat, long, name, phone, language = place
        if haversine_km(position["lat"], position["long"], lat, long) > near_km:
            continue
        calls.append(
            Call(
                event_seq=event.seq,
                business_id=event.business_id,
                environment=event.environment,
                drop_id=drop["drop_id"],
                kind=Kind.NEARBY,
                recipient_name=name,
                phone=phone,
                tracking_url=tracking_url(links[drop["drop_id"]]),
                eta=(drop.get("eta") or {}).get("dropoff_at"),
                reference=drop.get("client_order_id") or "",
                language=language,
            )
        )
    return calls


def _messages(calls: list[Call], now: datetime) -> list[Message]:
    """A message per call and channel the business opted into for its kind, with an address,
    in the recipient's language; three queries at most whatever the numbers (the templates
    on, the businesses' names and languages, the recipients' emails when an email is called
    for)."""
    if not calls:
        return []
    business_ids = {call.business_id for call in calls}
    templates = _templates_on(business_ids)
    businesses = {
        pk: (name, language)
        for pk, name, language in Business.objects.filter(pk__in=business_ids).values_list(
            "pk", "name", "recipient_language"
        )
    }
    emails = _emails(calls, templates)
    messages = []
    for call in calls:
        name, business_language = businesses.get(call.business_id, ("", "en"))
        language = call.language or business_language
        values = texts.variables(
            business_name=name,
            recipient_name=call.recipient_name,
            tracking_url=call.tracking_url,
            eta=call.eta,
            reference=call.reference,
        )
        channels = templates.get((call.business_id, call.environment, call.kind), {})
        for channel, rows in channels.items():
            to = call.phone if channel == Channel.SMS else emails.get(call.drop_id)
            if not to:
                continue  # no address on this channel: nothing to send, nothing to log
            text = rows.get(language) or texts.default_text(channel, call.kind, language)
            messages.append(_message(call, channel, text, to, values, now))
    return messages


def _templates_on(business_ids: set) -> dict[tuple, dict[str, dict[str, texts.Text]]]:
    """By (business, environment, kind): the channels switched on, each with its texts by
    language (a language without its own row is sent our default text in it)."""
    on: dict[tuple, dict[str, dict[str, texts.Text]]] = {}
    rows = NotificationTemplate.objects.filter(business_id__in=business_ids, enabled=True)
    for template in rows:
        key = (template.business_id, template.environment, template.kind)
        by_language = on.setdefault(key, {}).setdefault(template.channel, {})
        by_language[template.language] = texts.Text(template.subject, template.body)
    return on


def _emails(calls: list[Call], templates: dict[tuple, dict]) -> dict[str, str]:
    """The recipients' emails (orders.Drop.recipient_email) of the calls an email template
    answers, by drop id; none is asked for when no email is on."""
    wanted = {
        call.drop_id
        for call in calls
        if Channel.EMAIL in templates.get((call.business_id, call.environment, call.kind), {})
    }
    if not wanted:
        return {}
    rows = Drop.objects.filter(pk__in=sorted(wanted), recipient_email__isnull=False)
    return {str(pk): email for pk, email in rows.values_list("pk", "recipient_email")}


def _message(
    call: Call, channel: str, text: texts.Text, to: str, values: dict, now: datetime
) -> Message:
    return Message(
        business_id=call.business_id,
        environment=call.environment,
        event_seq=call.event_seq,
        drop_id=call.drop_id,
        client_order_id=call.reference[:100],
        kind=call.kind,
        channel=channel,
        to=to[:254],
        subject=texts.render(text.subject, values)[:200],
        body=texts.render(text.body, values),
        created_at=now,
        next_attempt_at=now,
    )
