"""A business's notification settings: its templates, opted in or not, and its feed.

Saving is the one way settings change (the dashboard calls it); the texts are checked here
too, so nothing unrenderable is ever stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Max

from accounts.models import Business
from events.models import Event
from notifications import texts
from notifications.models import NotificationFeed, NotificationTemplate


@dataclass(frozen=True, slots=True)
class TemplateIn:
    channel: str
    kind: str
    enabled: bool
    subject: str
    body: str


def save_templates(
    *,
    business: Business,
    environment: str,
    templates: Sequence[TemplateIn],
    now: datetime,
    language: str = "en",
) -> None:
    """Store the templates' texts in `language` (raises texts.TemplateError on a bad one,
    storing nothing), each one's switch for every language alike, and switch the feed on
    while any is on.

    A feed switched on starts reading at the events already written: turning notifications
    on never sends for what happened before.
    """
    for template in templates:
        texts.check(template.subject)
        texts.check(template.body)
    with transaction.atomic():
        NotificationTemplate.objects.bulk_create(
            [
                NotificationTemplate(
                    business=business,
                    environment=environment,
                    channel=t.channel,
                    kind=t.kind,
                    language=language,
                    enabled=t.enabled,
                    subject=t.subject,
                    body=t.body,
                    updated_at=now,
                )
                for t in templates
            ],
            update_conflicts=True,
            unique_fields=["business", "environment", "channel", "kind", "language"],
            update_fields=["enabled", "subject", "body", "updated_at"],
        )
        for t in templates:  # on or off is one switch for the recipients of every language
            NotificationTemplate.objects.filter(
                business=business, environment=environment, channel=t.channel, kind=t.kind
            ).exclude(enabled=t.enabled).update(enabled=t.enabled, updated_at=now)
        active = NotificationTemplate.objects.filter(
            business=business, environment=environment, enabled=True
        ).exists()
        _switch_feed(business=business, environment=environment, active=active)


def _switch_feed(*, business: Business, environment: str, active: bool) -> None:
    feed, _ = NotificationFeed.objects.select_for_update().get_or_create(
        business=business, environment=environment
    )
    if active and not feed.active:
        last = Event.objects.filter(business=business, environment=environment).aggregate(
            last=Max("seq")
        )["last"]
        feed.last_seq = last or 0
    feed.active = active
    feed.save(update_fields=["last_seq", "active"])
