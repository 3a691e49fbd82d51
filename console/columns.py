"""The console's cells: every date and time as the dashboard shows it, long text cut.

Times read "25 Nov 2026, 19:38 UTC+7": the service time zone with its label, through the
dashboard's own filter (dashboard_tags.when), so an operator and a business read one format
and nobody guesses the zone. `ServiceTimes` puts every date and time field of a console page
(lists, read-only fields, inlines) through it instead of Django's locale format ("Nov. 25,
2026, 7:38 p.m.", no zone).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import capfirst

from dashboard.templatetags.dashboard_tags import when as service_time

EMPTY = "–"


def when(value: datetime | None) -> SafeString | str:
    """A moment in the service time zone, with the zone: "25 Nov 2026, 19:38 UTC+7"."""
    return service_time(value) or EMPTY


def day(value: date | datetime | None) -> SafeString | str:
    """A day as the dashboard writes one ("25 Nov 2026"); a moment's day in the service zone."""
    if value is None:
        return EMPTY
    if isinstance(value, datetime):
        value = timezone.localdate(value)
    return format_html(
        '<time datetime="{}">{}</time>', value.isoformat(), value.strftime("%d %b %Y").lstrip("0")
    )


def cut(text: str, limit: int = 32) -> SafeString | str:
    """At most `limit` characters; a cut text keeps the whole in its title (hover)."""
    if not text:
        return EMPTY
    if len(text) <= limit:
        return text
    return format_html('<span title="{}">{}…</span>', text, text[: limit - 1].rstrip())


Shown = Callable[[models.Model], SafeString | str]


def _shown_field(field: models.Field) -> Shown:
    """A display callable standing for a date or time field: same name, label and ordering."""
    show = when if isinstance(field, models.DateTimeField) else day

    def shown(obj: models.Model) -> SafeString | str:
        return show(getattr(obj, field.attname))

    shown.__name__ = field.name  # the cell's CSS class stays field-<name>
    shown.short_description = capfirst(field.verbose_name)
    shown.admin_order_field = field.name
    return shown


class ServiceTimes:
    """For a ModelAdmin or an inline: its date and time fields shown as `when` and `day`.

    Django shows a field it only displays (a list's column, a read-only field) through the
    locale's format; a display callable of the same name, label and ordering stands in for
    it. Fields a user edits stay Django's inputs.
    """

    def _shown(self, name):
        if not isinstance(name, str):
            return name
        try:
            field = self.model._meta.get_field(name)
        except FieldDoesNotExist:
            return name
        if not isinstance(field, models.DateField):  # DateTimeField is a DateField
            return name
        cache = self.__dict__.setdefault("_shown_fields", {})
        if name not in cache:  # one callable per field: Django compares them by identity
            cache[name] = _shown_field(field)
        return cache[name]

    def _view_only(self, request, obj) -> bool:
        return False

    def get_readonly_fields(self, request, obj=None):
        return [self._shown(name) for name in super().get_readonly_fields(request, obj)]

    def get_fieldsets(self, request, obj=None):
        readonly = self.get_readonly_fields(request, obj)  # with their display callables
        every = self._view_only(request, obj)  # every field shown, none edited

        def shown(name):
            standing_in = self._shown(name)
            return standing_in if every or standing_in in readonly else name

        def line(names):
            return tuple(map(shown, names)) if isinstance(names, (list, tuple)) else shown(names)

        return [
            (title, {**options, "fields": [line(names) for names in options["fields"]]})
            for title, options in super().get_fieldsets(request, obj)
        ]

    @staticmethod
    def _form_fields(fields):
        """A form's fields without the display callables, which are no form fields."""
        return None if fields is None else [f for f in fields if isinstance(f, str)]


class ServiceTimesAdmin(ServiceTimes):
    """The ModelAdmin half: list columns too, and a page the user may only view."""

    def _view_only(self, request, obj) -> bool:
        return obj is not None and not self.has_change_permission(request, obj)

    def get_list_display(self, request):
        return [self._shown(name) for name in super().get_list_display(request)]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if "fields" not in kwargs:
            kwargs["fields"] = flatten_fieldsets(self.get_fieldsets(request, obj))
        kwargs["fields"] = self._form_fields(kwargs["fields"])
        return super().get_form(request, obj, change, **kwargs)


class ServiceTimesInline(ServiceTimes):
    """The inline half: its read-only dates and times (console inlines declare them so)."""

    def get_formset(self, request, obj=None, **kwargs):
        if "fields" not in kwargs:
            kwargs["fields"] = flatten_fieldsets(self.get_fieldsets(request, obj))
        kwargs["fields"] = self._form_fields(kwargs["fields"])
        return super().get_formset(request, obj, **kwargs)


class LedgerInline(ServiceTimesInline, admin.TabularInline):
    """An append-only ledger's entries under their account, newest first: every field
    read-only, none added or deleted here (a ledger grows only through its service)."""

    extra = 0
    can_delete = False
    ordering = ["-id"]

    def get_readonly_fields(self, request, obj=None):
        # Every field, its dates and times as the console shows them (ServiceTimes).
        return [self._shown(name) for name in self.fields]

    def has_add_permission(self, request, obj=None) -> bool:
        return False
