"""Recipient notifications: the settings page (each channel and event on or off, its text,
a preview) and the delivery log, for the business's own environment (docs/notifications.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.http import require_POST

from accounts.models import Environment
from accounts.services import set_languages
from core.languages import codes
from dashboard.forms import LanguagesForm, NotificationTemplateForm
from dashboard.views.common import business_view, key_environments, page_of
from notifications.models import Channel, Kind
from notifications.selectors import TemplateView, log_of, templates_of
from notifications.services import TemplateIn, save_templates
from notifications.texts import VARIABLES, TemplateError, preview

CHANNEL_WORDS = {
    Channel.SMS: pgettext_lazy("a channel", "SMS"),
    Channel.EMAIL: gettext_lazy("Email"),
}
KIND_WORDS = {
    Kind.DISPATCHED: gettext_lazy("On its way"),
    Kind.NEARBY: gettext_lazy("Courier nearby"),
    Kind.DELIVERED: gettext_lazy("Delivered"),
    Kind.FAILED: gettext_lazy("Delivery failed"),
}


@dataclass(frozen=True, slots=True)
class _Entry:
    """One (channel, event) on the page: its form and, when its text renders, a preview."""

    template: TemplateView
    form: NotificationTemplateForm
    subject_preview: str | None
    body_preview: str | None

    @property
    def label(self) -> str:
        return f"{CHANNEL_WORDS[self.template.channel]}: {KIND_WORDS[self.template.kind]}"


def _environment(request) -> str:
    source = request.POST if request.method == "POST" else request.GET
    environment = source.get("environment", "")
    return environment if environment in Environment.values else Environment.SANDBOX


def _language(request) -> str:
    """The language whose texts the page edits (docs/notifications.md, "Languages")."""
    source = request.POST if request.method == "POST" else request.GET
    language = source.get("language", "")
    return language if language in codes() else request.business.recipient_language


def _form(template: TemplateView, data=None) -> NotificationTemplateForm:
    initial = {"enabled": template.enabled, "subject": template.subject, "body": template.body}
    return NotificationTemplateForm(
        data, initial=initial, prefix=template.prefix, channel=template.channel
    )


def _entry(template: TemplateView, form: NotificationTemplateForm, business_name: str) -> _Entry:
    if form.is_bound:
        valid = form.is_valid()
        subject = form.cleaned_data.get("subject", "") if valid else None
        body = form.cleaned_data.get("body") if valid else None
    else:
        subject, body = template.subject, template.body

    def shown(text: str | None) -> str | None:
        if text is None:
            return None
        try:
            return preview(text, business_name=business_name)
        except TemplateError:
            return None

    return _Entry(template, form, shown(subject), shown(body))


@business_view
def notifications(request):
    business, environment, language = request.business, _environment(request), _language(request)
    can_manage = environment in key_environments(business)
    templates = templates_of(business=business, environment=environment, language=language)
    posted = request.method == "POST"
    forms = [_form(template, request.POST if posted else None) for template in templates]
    status = 200
    if posted and not can_manage:
        messages.error(
            request,
            _("Your account cannot manage %(environment)s notifications yet.")
            % {"environment": Environment(environment).label.lower()},
        )
        status = 403
    elif posted and not all(form.is_valid() for form in forms):
        status = 400
    elif posted and request.POST.get("action") != "preview":
        save_templates(
            business=business,
            environment=environment,
            templates=[
                _template_in(t, form.cleaned_data) for t, form in zip(templates, forms, strict=True)
            ],
            now=timezone.now(),
            language=language,
        )
        messages.success(
            request,
            _("Your %(environment)s notification settings are saved.")
            % {"environment": Environment(environment).label.lower()},
        )
        return redirect(
            reverse("dashboard:notifications") + f"?environment={environment}&language={language}"
        )
    return render(
        request,
        "dashboard/notifications.html",
        {
            "environment": environment,
            "environments": Environment.choices,
            "language": language,
            "languages": settings.LANGUAGES,
            "languages_form": LanguagesForm(
                initial={
                    "recipient_language": business.recipient_language,
                    "dashboard_language": business.dashboard_language,
                }
            ),
            "can_manage": can_manage,
            "entries": [_entry(t, f, business.name) for t, f in zip(templates, forms, strict=True)],
            "variables": VARIABLES,
        },
        status=status,
    )


def _template_in(template: TemplateView, cleaned: dict) -> TemplateIn:
    return TemplateIn(
        channel=template.channel,
        kind=template.kind,
        enabled=cleaned["enabled"],
        subject=cleaned.get("subject", ""),
        body=cleaned["body"],
    )


@business_view
@require_POST
def languages(request):
    """Your recipients' and your dashboard's languages (docs/dashboard.md, "Language")."""
    form = LanguagesForm(request.POST)
    if form.is_valid():
        set_languages(business=request.business, **form.cleaned_data)
        messages.success(request, _("Your languages are saved."))
    else:
        messages.error(request, _("Choose one of the languages offered."))
    return redirect(reverse("dashboard:notifications"))


@business_view
def notification_log(request):
    environment = _environment(request)
    return render(
        request,
        "dashboard/notification_log.html",
        {
            "environment": environment,
            "environments": Environment.choices,
            "page": page_of(request, log_of(business=request.business, environment=environment)),
        },
    )
