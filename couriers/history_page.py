"""The courier app's history page, /courier/history?date= (docs/couriers.md, "History"): the
day's done stops with their times, outcomes and cash; the same as GET
/api/v1/courier/history (couriers/history.py)."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_safe

from couriers.auth import courier_of_session
from couriers.history import history_of
from couriers.pages import _page
from couriers.pay import parse_day
from orders.models import FailureReason

OUTCOME_WORDS = {
    "delivered": _("Delivered"),
    "failed": _("Not delivered"),
    "returned": _("Returned"),
}


@require_safe
def history_view(request: HttpRequest) -> HttpResponse:
    """The signed-in courier's done stops of a day (default today); a bad date is a 400 page
    that says so and shows today."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect(reverse("couriers:home"))
    today, error, status = timezone.localdate(), "", 200
    try:
        day = parse_day(request.GET.get("date") or None, today=today)
    except ValueError as bad:
        day, error, status = today, str(bad), 400
    history = history_of(courier, day)
    stops = [
        {
            **stop,
            "outcome_words": OUTCOME_WORDS[stop["outcome"]],
            "reason": FailureReason(stop["failure_reason"]).label if stop["failure_reason"] else "",
        }
        for stop in history["stops"]
    ]
    context = {
        "courier": courier,
        "first_name": courier.name.split(" ")[0],
        "day": day,
        "history": history,
        "stops": stops,
        "error": error,
        "before": (day - timedelta(days=1)).isoformat(),
        "after": (day + timedelta(days=1)).isoformat() if day < today else None,
        "is_today": day == today,
    }
    return _page(render(request, "couriers/history.html", context, status=status))
