"""The language switch's choices: each language named in its own words (settings.LANGUAGES),
never translated into the page's language (docs/contract.md §26)."""

from __future__ import annotations

from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag
def language_choices() -> list[tuple[str, str]]:
    return list(settings.LANGUAGES)
