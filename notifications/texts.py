"""The messages' texts: the default template of each (channel, kind), the variables a
template may use, checking a template (unknown variable: an error) and rendering one.

A template is plain text with `{variable}` placeholders (`{{` and `}}` for a brace), read
with Python's own format-string parser; only bare names are allowed (no attributes, indexes
or format specs), so a template can never reach into an object.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from notifications.models import Channel, Kind

VARIABLES: dict[str, str] = {
    "business_name": _("Your business's name"),
    "recipient_name": _("The recipient's name, as on the order"),
    "recipient_first_name": _("The recipient's first name"),
    "tracking_url": _("The order's tracking page (its tracking_url)"),
    "eta": _("The expected drop-off time, local (HH:MM), or empty"),
    "client_reference": _("Your client_order_id of the order"),
}

SMS_MAX_CHARS = 480  # three SMS segments at most (a Khmer SMS is UCS-2: fewer characters each)

# The default texts, in every language of settings.LANGUAGES through the catalogues
# (locale/): a business's own texts are stored per language (NotificationTemplate.language).
_SUBJECTS = {
    Kind.DISPATCHED: _("Your {business_name} order is on its way"),
    Kind.NEARBY: _("Your {business_name} courier is nearby"),
    Kind.DELIVERED: _("Your {business_name} order was delivered"),
    Kind.FAILED: _("We could not deliver your {business_name} order"),
}
_SMS = {
    Kind.DISPATCHED: _(
        "{business_name}: your order is on its way, expected at {eta}. Track it: {tracking_url}"
    ),
    Kind.NEARBY: _("{business_name}: your courier is nearby. Track it: {tracking_url}"),
    Kind.DELIVERED: _("{business_name}: your order {client_reference} was delivered. Thank you!"),
    Kind.FAILED: _(
        "{business_name}: we could not deliver your order {client_reference} today. "
        "Details: {tracking_url}"
    ),
}
_EMAIL = {
    Kind.DISPATCHED: _(
        "Hello {recipient_first_name},\n\nYour order {client_reference} from "
        "{business_name} is on its way and expected at {eta}.\nFollow it here: {tracking_url}\n"
    ),
    Kind.NEARBY: _(
        "Hello {recipient_first_name},\n\nThe courier with your order "
        "{client_reference} from {business_name} is nearby.\nFollow it here: {tracking_url}\n"
    ),
    Kind.DELIVERED: _(
        "Hello {recipient_first_name},\n\nYour order {client_reference} from "
        "{business_name} was delivered.\nThank you!\n"
    ),
    Kind.FAILED: _(
        "Hello {recipient_first_name},\n\nWe could not deliver your order "
        "{client_reference} from {business_name}.\nDetails: {tracking_url}\n"
    ),
}


@dataclass(frozen=True, slots=True)
class Text:
    subject: str  # empty for SMS
    body: str


def default_text(channel: str, kind: str, language: str = "en") -> Text:
    """Our text of (channel, kind) in `language` (English where the catalogue has none)."""
    with translation.override(language):
        if channel == Channel.SMS:
            return Text("", str(_SMS[Kind(kind)]))
        return Text(str(_SUBJECTS[Kind(kind)]), str(_EMAIL[Kind(kind)]))


class TemplateError(ValueError):
    """A template that cannot be rendered: the message names the fault."""


def check(template: str) -> None:
    """Raise TemplateError unless every placeholder is a known variable, bare."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"{exc} (write {{{{ and }}}} for a brace).") from None
    for _text, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in VARIABLES:
            known = ", ".join("{" + known + "}" for known in VARIABLES)
            raise TemplateError(f"Unknown variable {{{name}}}: use one of {known}.")
        if spec or conversion:
            raise TemplateError(f"Write {{{name}}} alone, without a format or conversion.")


def render(template: str, values: dict[str, str]) -> str:
    """The template with its variables filled in (it was checked when saved)."""
    return template.format_map({name: values.get(name, "") for name in VARIABLES})


def variables(
    *, business_name: str, recipient_name: str, tracking_url: str, eta: str | None, reference: str
) -> dict[str, str]:
    """The values of a message's variables; `eta` is the ETA's UTC wire text or None."""
    return {
        "business_name": business_name,
        "recipient_name": recipient_name,
        "recipient_first_name": (recipient_name.split() or [""])[0],
        "tracking_url": tracking_url,
        "eta": local_time(eta),
        "client_reference": reference,
    }


def local_time(wire: str | None) -> str:
    """`2026-05-01T07:30:00Z` as HH:MM in TIME_ZONE (the service's); empty for none."""
    if not wire:
        return ""
    at = datetime.fromisoformat(wire.replace("Z", "+00:00"))
    return at.astimezone(ZoneInfo(settings.TIME_ZONE)).strftime("%H:%M")


SAMPLE = variables(
    business_name="",  # the business's own name, filled in by preview()
    recipient_name="Sokha Chan",
    tracking_url="https://example.com/t/sample-token",
    eta=None,
    reference="ORDER-1001",
) | {"eta": "14:30"}


def preview(template: str, *, business_name: str) -> str:
    """The template rendered with sample values, for the dashboard; raises TemplateError."""
    check(template)
    return render(template, SAMPLE | {"business_name": business_name})
