"""The admin index's "Needs doing" panel reads its lists through this tag."""

from __future__ import annotations

from django import template
from django.conf import settings

from console.queue import NeedsDoing, needs_doing

register = template.Library()


@register.simple_tag(takes_context=True, name="needs_doing")
def needs_doing_tag(context: template.Context) -> NeedsDoing:
    return needs_doing(context["request"].user)


@register.simple_tag
def currency() -> str:
    return settings.CURRENCY
