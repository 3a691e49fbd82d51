"""Reads of notification settings and the delivery log, always for one business's environment."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from accounts.models import Business
from notifications import texts
from notifications.models import Channel, Kind, Message, NotificationTemplate


@dataclass(frozen=True, slots=True)
class TemplateView:
    """One (channel, kind) as the business has it: stored, or the default (off)."""

    channel: str
    kind: str
    enabled: bool
    subject: str
    body: str

    @property
    def prefix(self) -> str:
        return f"{self.channel}-{self.kind}"


def templates_of(
    *, business: Business, environment: str, language: str = "en"
) -> list[TemplateView]:
    """Every (channel, kind) with its text in `language`, SMS first, in the order of a
    delivery; on when any language's row of it is (they are kept alike)."""
    stored: dict[tuple, NotificationTemplate] = {}
    enabled: set[tuple] = set()
    for t in NotificationTemplate.objects.filter(business=business, environment=environment):
        if t.enabled:
            enabled.add((t.channel, t.kind))
        if t.language == language:
            stored[t.channel, t.kind] = t
    views = []
    for channel in (Channel.SMS, Channel.EMAIL):
        for kind in Kind:
            on = (channel, kind) in enabled
            template = stored.get((channel, kind))
            text = (
                texts.default_text(channel, kind, language)
                if template is None
                else texts.Text(template.subject, template.body)
            )
            views.append(TemplateView(channel, kind, on, text.subject, text.body))
    return views


def log_of(*, business: Business, environment: str) -> QuerySet[Message]:
    """The business's messages in this environment, newest first (never another's)."""
    return Message.objects.filter(business=business, environment=environment).order_by("-id")
