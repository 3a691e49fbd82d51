"""The courier app's cash page, /courier/cash (docs/couriers.md, "Cash in hand"): the same
figures as GET /api/v1/courier/cash (couriers/cash.py)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from core.formats import money
from couriers.auth import courier_of_session
from couriers.cash import cash_wire
from couriers.pages import _page


@require_safe
def cash_view(request: HttpRequest) -> HttpResponse:
    """The signed-in courier's cash: in hand, owed, and today's collections drop by drop."""
    courier = courier_of_session(request)
    if courier is None:
        return redirect(reverse("couriers:home"))
    context = {
        "courier": courier,
        "first_name": courier.name.split(" ")[0],
        "cash": cash_wire(courier, timezone.now()),
        "limit": money(settings.COURIER_CASH_LIMIT),
    }
    return _page(render(request, "couriers/cash.html", context))
