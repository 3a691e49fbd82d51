"""Recipients who asked the business to stop (docs/notifications.md, "Stopping messages"):
the list, and lifting one with the recipient's consent noted."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from dashboard.views.common import business_view, page_of
from notifications.models import Suppression
from notifications.optout import lift


class ConsentForm(forms.Form):
    """How the recipient agreed to hear from the business again: kept with the lifting."""

    note = forms.CharField(
        label=gettext_lazy("How did the recipient agree to hear from you again?"),
        min_length=10,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=gettext_lazy(
            "E.g. “Asked by phone on 28 Nov to get delivery texts again.” Kept on record."
        ),
    )


def _suppressions_of(business):
    return Suppression.objects.filter(business=business).order_by("lifted_at", "-created_at")


def _page(request, form: ConsentForm | None = None, failed_pk: int | None = None):
    """Active suppressions first (newest first), then the lifted ones; a refused form is
    shown under the suppression it was for."""
    return render(
        request,
        "dashboard/suppressions.html",
        {
            "page": page_of(request, _suppressions_of(request.business)),
            "form": form or ConsentForm(),
            "failed_pk": failed_pk,
        },
        status=400 if form is not None else 200,
    )


@business_view
def suppressions(request):
    return _page(request)


@business_view
def suppression_lift(request, pk: int):
    if request.method != "POST":
        return redirect("dashboard:suppressions")
    suppression = Suppression.objects.filter(pk=pk, business=request.business).first()
    if suppression is None:
        raise Http404
    form = ConsentForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, failed_pk=pk)
    by = request.user.get_username()
    if lift(suppression=suppression, note=form.cleaned_data["note"], by=by, at=timezone.now()):
        messages.success(
            request,
            _("%(address)s can be sent messages again.") % {"address": suppression.address},
        )
    return redirect("dashboard:suppressions")
