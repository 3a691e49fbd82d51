"""The home page (the onboarding checklist and the charts) and the onboarding requests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, pgettext

from accounts import services
from accounts.models import ApiKey, Business, Environment, Stage
from dashboard import charts
from dashboard.forms import RequestAccessForm
from dashboard.views.common import business_view
from orders import onboarding as orders_onboarding


def _day(moment: datetime | date) -> str:
    """A day as people write it: 23 Nov 2026, 23 វិច្ឆិកា 2026 (a date has no zone to name)."""
    return date_format(moment, pgettext("a day in the dashboard", "j M Y"))


@dataclass(frozen=True)
class Step:
    title: str
    done: bool
    detail: str = ""


def _checklist(business: Business) -> tuple[list[Step], str | None]:
    """The onboarding steps with where the business stands, and the current step's title."""
    rejected = business.stage == Stage.REJECTED
    approved = business.approved_at is not None and not rejected
    is_live = business.stage == Stage.LIVE or business.live_enabled_at is not None
    steps = [
        Step(
            gettext_noop("Registered"),
            True,
            _("Signed up %(day)s.") % {"day": _day(timezone.localtime(business.created_at))},
        ),
        Step(gettext_noop("Access requested"), business.access_requested_at is not None),
        Step(
            gettext_noop("Approved"),
            approved,
            _("Your last request was declined; you may request access again.") if rejected else "",
        ),
        Step(
            gettext_noop("First sandbox order"),
            approved and orders_onboarding.has_accepted_sandbox_order(business),
        ),
        Step(gettext_noop("Live requested"), business.live_requested_at is not None or is_live),
        Step(gettext_noop("Live"), is_live),
    ]
    current = next((step.title for step in steps if not step.done), None)
    return steps, current


_HOME_ENVIRONMENT = "home_environment"


def _home_environment(request, business: Business, window: charts.Window) -> str:
    """The charts' environment: the one asked for (remembered for next time), else the last
    one chosen, else the one with orders in the window (live first once the account is live):
    never an empty tab while the other one holds the account's activity."""
    asked = request.GET.get("environment", "")
    if asked in Environment.values:
        request.session[_HOME_ENVIRONMENT] = asked
        return asked
    remembered = request.session.get(_HOME_ENVIRONMENT, "")
    if remembered in Environment.values:
        return remembered
    preferred = [Environment.LIVE, Environment.SANDBOX]
    if not business.is_live:
        preferred.reverse()
    for environment in preferred:
        if charts.has_orders(business=business, environment=environment, window=window):
            return environment
    return preferred[0]


@business_view
def home(request):
    business = request.business
    steps, current = _checklist(business)
    keys = ApiKey.objects.filter(business=business, revoked_at__isnull=True)
    window = charts.last_days(timezone.now())
    environment = _home_environment(request, business, window)
    counts = charts.orders_per_day(business=business, environment=environment, window=window)
    spend = charts.spend_per_day(business=business, environment=environment, window=window)
    return render(
        request,
        "dashboard/home.html",
        {
            "business": business,
            "steps": steps,
            "current": current,
            "Stage": Stage,
            "active_sandbox_keys": keys.filter(environment=Environment.SANDBOX).count(),
            "active_live_keys": keys.filter(environment=Environment.LIVE).count(),
            "environment": environment,
            "environments": Environment.choices,
            "orders_chart": charts.orders_chart(window.days, counts),
            "spend_chart": charts.spend_chart(window.days, spend, settings.CURRENCY),
        },
    )


@business_view
def request_access(request):
    business = request.business
    form = RequestAccessForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.request_access(business=business, **form.cleaned_data)
        except services.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, _("Access requested. An operator will review it shortly."))
            return redirect("dashboard:home")
    can_request = business.stage in (Stage.REGISTERED, Stage.REJECTED)
    return render(
        request,
        "dashboard/request_access.html",
        {"business": business, "form": form, "can_request": can_request},
    )


@business_view
def request_live(request):
    business = request.business
    if request.method == "POST":
        try:
            orders_onboarding.request_live(business=business)
        except services.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, _("Live access requested. An operator will switch it on."))
            return redirect("dashboard:home")
    return render(
        request,
        "dashboard/request_live.html",
        {
            "business": business,
            "Stage": Stage,
            "has_sandbox_order": orders_onboarding.has_accepted_sandbox_order(business),
        },
    )
