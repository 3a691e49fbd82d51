"""Recipient notifications: the settings page (each channel and event on or off, its text,
a preview) and the delivery log, for the business's own environment (docs/notifications.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from accounts.models import Environment
from dashboard.forms import NotificationTemplateForm
from dashboard.views.common import business_view, key_environments, page_of
from notifications.models import Channel, Kind
from notifications.selectors import TemplateView, log_of, templates_of
from notifications.services import TemplateIn, save_templates
from notifications.texts import VARIABLES, TemplateError, preview


@dataclass(frozen=True, slots=True)
class _Entry:
    """One (channel, event) on the page: its form and, when its text renders, a preview."""

    template: TemplateView
    form: NotificationTemplateForm
    subject_preview: str | None
    body_preview: str | None

    @property
    def label(self) -> str:
        return f"{Channel(self.template.channel).label}: {Kind(self.template.kind).label}"


def _environment(request) -> str:
    source = request.POST if request.method == "POST" else request.GET
    environment = source.get("environment", "")
    return environment if environment in Environment.values else Environment.SANDBOX


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
    business, environment = request.business, _environment(request)
    can_manage = environment in key_environments(business)
    templates = templates_of(business=business, environment=environment)
    posted = request.method == "POST"
    forms = [_form(template, request.POST if posted else None) for template in templates]
    status = 200
    if posted and not can_manage:
        messages.error(request, f"Your account cannot manage {environment} notifications yet.")
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
        )
        messages.success(request, f"Your {environment} notification settings are saved.")
        return redirect(reverse("dashboard:notifications") + f"?environment={environment}")
    return render(
        request,
        "dashboard/notifications.html",
        {
            "environment": environment,
            "environments": Environment.choices,
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
