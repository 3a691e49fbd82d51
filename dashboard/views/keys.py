"""API keys: made (shown once) and revoked."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import F
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache

from accounts import services
from accounts.models import ApiKey
from dashboard.forms import ApiKeyForm
from dashboard.views.common import (
    business_view,
    key_environments,
    new_key_form_token,
    page_of,
    spend_key_form_token,
)


@never_cache  # the POST answer carries the only copy of a new key: no cache may keep it
@business_view
def keys(request):
    business = request.business
    environments = key_environments(business)
    form = ApiKeyForm(request.POST or None, environments=environments)
    issued = None
    status = 200
    if request.method == "POST":
        if not spend_key_form_token(request):
            messages.warning(
                request,
                _(
                    "This form was already sent, so no new key was made. A key is shown only "
                    "once: if you did not copy it, revoke it and generate another."
                ),
            )
            form = ApiKeyForm(environments=environments)
            status = 409
        elif form.is_valid():
            try:
                issued = services.create_api_key(
                    business=business,
                    environment=form.cleaned_data["environment"],
                    label=form.cleaned_data["label"],
                    created_by=request.user,
                )
            except services.OnboardingError as exc:
                messages.error(request, str(exc))
                status = 400
            else:
                # Rendered into this response only: never in the session, a URL or a log.
                form = ApiKeyForm(environments=environments)
                status = 201
        else:
            status = 400
    return render(
        request,
        "dashboard/keys.html",
        {
            "business": business,
            "form": form,
            "environments": environments,
            "issued": issued,
            "form_token": new_key_form_token(request),
            "keys": page_of(
                request,
                ApiKey.objects.filter(business=business).order_by(
                    F("revoked_at").desc(nulls_first=True), "-created_at", "-pk"
                ),
            ),
        },
        status=status,
    )


@business_view
def revoke_key(request, pk: int):
    key = get_object_or_404(ApiKey, pk=pk, business=request.business)
    if not key.is_active:
        messages.info(request, _("The key %(key)s was already revoked.") % {"key": key.hint})
        return redirect("dashboard:keys")
    if request.method == "POST":
        services.revoke_api_key(key=key)
        messages.success(
            request, _("The key %(key)s is revoked; it no longer works.") % {"key": key.hint}
        )
        return redirect("dashboard:keys")
    return render(request, "dashboard/revoke_key.html", {"key": key})
