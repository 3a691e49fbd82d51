"""The courier app's earnings page, /courier/earnings?date= (docs/couriers.md, "Earnings"):
the day's delivered drops, returns and km, each part of the pay and the total; the same
figures as GET /api/v1/courier/earnings (couriers/pay.py)."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from couriers.auth import courier_of_session
from couriers.pages import _page
from couriers.pay import earnings_of, earnings_wire, parse_day


@require_safe
def earnings_view(request: HttpRequest) -> HttpResponse:
    """The signed-in courier's pay for a day (default today); a bad date is a 400 page that
    says so and shows today."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect(reverse("couriers:home"))
    today, error, status = timezone.localdate(), "", 200
    try:
        day = parse_day(request.GET.get("date") or None, today=today)
    except ValueError as bad:
        day, error, status = today, str(bad), 400
    shown = earnings_wire(earnings_of(courier=courier, day=day), day)
    context = {
        "courier": courier,
        "first_name": courier.name.split(" ")[0],
        "day": day,
        "earnings": shown,
        "error": error,
        "before": (day - timedelta(days=1)).isoformat(),
        "after": (day + timedelta(days=1)).isoformat() if day < today else None,
        "is_today": day == today,
    }
    return _page(render(request, "couriers/earnings.html", context, status=status))
