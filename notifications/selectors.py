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


def templates_of(*, business: Business, environment: str) -> list[TemplateView]:
    """Every (channel, kind), SMS first, in the order of a delivery."""
    stored = {
        (t.channel, t.kind): t
        for t in NotificationTemplate.objects.filter(business=business, environment=environment)
    }
    views = []
    for channel in (Channel.SMS, Channel.EMAIL):
        for kind in Kind:
            template = stored.get((channel, kind))
            if template is None:
                default = texts.default_text(channel, kind)
                views.append(TemplateView(channel, kind, False, default.subject, default.body))
            else:
                views.append(
                    TemplateView(channel, kind, template.enabled, template.subject, template.body)
                )
    return views


def log_of(*, business: Business, environment: str) -> QuerySet[Message]:
    """The business's messages in this environment, newest first (never another's)."""
    return Message.objects.filter(business=business, environment=environment).order_by("-id")
