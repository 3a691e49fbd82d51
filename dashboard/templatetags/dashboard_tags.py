"""The dashboard's template helpers: every time with its zone, the support address, chart
ticks, and the names of the codes a page prints (in the page's language)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from django import template
from django.conf import settings
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.translation import gettext, pgettext, pgettext_lazy

from accounts.models import Environment
from core.formats import zone_label
from orders.models import BatchStatus

register = template.Library()


def service_time(moment: datetime | str | None) -> tuple[datetime, str] | None:
    """The moment in the service time zone, and its UTC wire text (for <time datetime>)."""
    if moment in (None, ""):
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is None:  # never from our models (USE_TZ); read as UTC, not guessed
        moment = moment.replace(tzinfo=UTC)
    wire = moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return moment.astimezone(ZoneInfo(settings.TIME_ZONE)), wire


@register.filter(is_safe=True)
def when(moment: datetime | str | None, precision: str = "minutes") -> str:
    """`{{ drop.created_at|when }}`: "23 Nov 2026, 14:05 UTC+7" in a <time> with its UTC instant.

    The one way the dashboard shows a time: in the service time zone (settings.TIME_ZONE),
    always with that zone's label, so nobody has to guess against the API's UTC. Empty for
    None, so `|default:"never"` still works. `|when:"seconds"` adds the seconds.
    """
    found = service_time(moment)
    if found is None:
        return ""
    local, wire = found
    return format_html(
        '<time datetime="{}">{}</time>\u00a0<abbr class="zone" title="{}">{}</abbr>',
        wire,
        _local_text(local, precision),
        gettext("%(zone)s time") % {"zone": settings.TIME_ZONE},
        zone_label(local),
    )


def when_text(moment: datetime | str, precision: str = "minutes") -> str:
    """`when` as plain text, for a script to show: "23 Nov 2026, 14:05:09 UTC+7"."""
    local, _ = service_time(moment)
    return f"{_local_text(local, precision)}\u00a0{zone_label(local)}"


def _local_text(local: datetime, precision: str) -> str:
    """In the page's language: "3 Nov 2026, 14:05", "3 វិច្ឆិកា 2026, 14:05" (contract §26)."""
    if precision == "seconds":
        return date_format(local, pgettext("a time in the dashboard, with seconds", "j M Y, H:i:s"))
    return date_format(local, pgettext("a time in the dashboard", "j M Y, H:i"))


@register.simple_tag
def service_zone() -> str:
    """The service time zone as people read it: "Asia/Phnom_Penh (UTC+7)"."""
    now = datetime.now(ZoneInfo(settings.TIME_ZONE))
    return f"{settings.TIME_ZONE} ({zone_label(now)})"


@register.simple_tag
def support_email() -> str:
    return settings.SUPPORT_EMAIL


@register.filter
def kg(weight) -> str:
    """A weight in kg without trailing zeros: 80.5, 1, 20 (docs/contract.md §18)."""
    return "" if weight is None else f"{weight.normalize():f}"


# --- Codes a page prints as names, in its language (the API keeps the codes) ------------------

# A bulk answer's entry status: each drop accepted or rejected (docs/contract.md §4).
_RESULTS = {
    "accepted": pgettext_lazy("a drop of a batch", "accepted"),
    "rejected": pgettext_lazy("a drop of a batch", "rejected"),
}


@register.filter
def environment_name(code: str) -> str:
    """`{{ environment|environment_name }}`: "live" is "Live", in the page's language."""
    return Environment(code).label if code in Environment.values else code


@register.filter
def batch_status_name(code: str) -> str:
    """`{{ data.status|batch_status_name }}`: "COMPLETED" is "Completed"."""
    return BatchStatus(code).label if code in BatchStatus.values else code


@register.filter
def result_name(code: str) -> str:
    """`{{ entry.status|result_name }}`: a drop of a batch "accepted" or "rejected"."""
    return _RESULTS.get(code, code)
