"""Saved pickup places: where the business's parcels are collected from, for New delivery.
Each page shows the business's own places only: another business's is a 404."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_safe

from dashboard.booking import PickupPlaceForm
from dashboard.maps import service_areas
from dashboard.models import PickupPlace
from dashboard.views.common import business_view
from tracking.page_data import map_tiles


@require_safe
@business_view
def pickup_places(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "dashboard/pickup_places.html",
        {"places": request.business.pickup_places.all()},
    )


@require_http_methods(["GET", "HEAD", "POST"])
@business_view
def pickup_place_form(request: HttpRequest, pk: uuid.UUID | None = None) -> HttpResponse:
    """Add a place (no pk) or edit one of the business's own."""
    place = _own(request, pk) if pk else PickupPlace(business=request.business)
    form = PickupPlaceForm(
        request.POST if request.method == "POST" else None,
        instance=place,
        business=request.business,
    )
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, _("%(name)s is saved.") % {"name": saved.name})
        after = "new_delivery" if request.GET.get("next") == "new" else "pickup_places"
        return redirect(f"dashboard:{after}")
    return render(
        request,
        "dashboard/pickup_place_form.html",
        {
            "form": form,
            "place": place if pk else None,
            "map": {"tiles": map_tiles(), "areas": service_areas()},
        },
        status=400 if form.is_bound else 200,
    )


@require_http_methods(["GET", "HEAD", "POST"])
@business_view
def pickup_place_delete(request: HttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Asks first; orders already booked from it keep their copy of the place."""
    place = _own(request, pk)
    if request.method == "POST":
        place.delete()
        messages.success(request, _("%(name)s is deleted.") % {"name": place.name})
        return redirect("dashboard:pickup_places")
    return render(request, "dashboard/pickup_place_delete.html", {"place": place})


def _own(request: HttpRequest, pk: uuid.UUID) -> PickupPlace:
    return get_object_or_404(PickupPlace, pk=pk, business=request.business)
