"""The sandbox console: a sample batch, a scenario walked by the test driver, a move by hand."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import pgettext
from django.views.decorators.http import require_POST

from accounts.models import Environment
from billing.services import BillingError
from core.formats import money
from dashboard.forms import AdvanceForm, ScenarioForm
from dashboard.views.common import business_view
from orders.api import base_url_of
from orders.errors import BatchRefused
from orders.inputs import parse_batch
from orders.links import drop_tracking_url
from orders.models import Drop, DropStatus, UndeliverableAction
from orders.services import BatchResult, create_batch
from orders.statuses import RETURN_STEPS
from tracking.scenarios import sample_batch_body, scenario_body
from tracking.services import advance_sandbox_orders


def _sandbox_page(
    request,
    *,
    advance_form: AdvanceForm,
    advanced=None,
    advanced_words: str = "",
    status: int = 200,
    scenario_form: ScenarioForm | None = None,
):
    # The scenario just started (?started=<drop id>), for its tracking link.
    started_id = _uuid_or_none(request.GET.get("started", ""))
    started = (
        Drop.objects.filter(
            business=request.business, environment=Environment.SANDBOX, pk=started_id
        ).first()
        if started_id
        else None
    )
    return render(
        request,
        "dashboard/sandbox.html",
        {
            "business": request.business,
            "advance_form": advance_form,
            "advanced": advanced,
            "advanced_words": advanced_words,
            "scenario_form": scenario_form or ScenarioForm(),
            "step_seconds": f"{settings.SANDBOX_STEP_SECONDS:g}",
            "started": started,
            "started_url": drop_tracking_url(started.pk) if started else None,
            "recent": Drop.objects.filter(
                business=request.business, environment=Environment.SANDBOX
            ).order_by("-created_at", "-id")[:10],
        },
        status=status,
    )


def _refusal_words(entry: dict, *, to: str) -> str:
    """Why the test driver did not move the order, in words (the API's codes are for code)."""
    if entry["error"]["code"] == "NOT_FOUND":
        return _("no sandbox order with this id.")
    status = DropStatus(entry["status"]).label.lower()
    if not to:
        return _("it is %(status)s, so it cannot move further.") % {"status": status}
    target = DropStatus(to).label.lower()
    if to in RETURN_STEPS and (
        entry.get("undeliverable_action") == UndeliverableAction.DISPOSE
    ):  # docs/contract.md §19
        return _("it is to be disposed of if undeliverable, so it never moves to %(to)s.") % {
            "to": target
        }
    return _("it is %(status)s, so it cannot move to %(to)s.") % {"status": status, "to": target}


def _refuse_without_sandbox(request):
    if request.business.can_use_sandbox:
        return None
    messages.error(request, _("The sandbox opens once your access request is approved."))
    return _sandbox_page(request, advance_form=AdvanceForm(), status=403)


@business_view
def sandbox(request):
    # An order page links here with its client_order_id filled in.
    initial = {"client_order_id": request.GET.get("client_order_id", "")[:100]}
    return _sandbox_page(request, advance_form=AdvanceForm(initial=initial))


@require_POST
@business_view
def sandbox_send_sample(request):
    if refused := _refuse_without_sandbox(request):
        return refused
    try:
        result = _send_sandbox_batch(request, sample_batch_body(uuid.uuid4().hex[:8]))
    except (BatchRefused, BillingError) as exc:
        messages.error(request, _("The sample batch was not sent: %(why)s") % {"why": exc})
        return _sandbox_page(request, advance_form=AdvanceForm(), status=400)
    messages.success(
        request,
        _("Sample batch sent: %(accepted)s accepted, %(rejected)s rejected.")
        % {"accepted": result.accepted, "rejected": result.rejected},
    )
    return redirect("dashboard:batch", pk=result.batch_id)


def _send_sandbox_batch(request, body: dict) -> BatchResult:
    """A sandbox batch through the same pipeline as POST /orders/bulk, under a fresh key."""
    return create_batch(
        business=request.business,
        environment=Environment.SANDBOX,
        idempotency_key=uuid.uuid4(),
        batch=parse_batch(body),
        base_url=base_url_of(request),
    )


@require_POST
@business_view
def sandbox_start_scenario(request):
    """Send one sample drop with a scenario; the page then links to its tracking page."""
    if refused := _refuse_without_sandbox(request):
        return refused
    form = ScenarioForm(request.POST)
    if not form.is_valid():
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    cod = form.cleaned_data["cod"]
    body = scenario_body(
        form.cleaned_data["scenario"],
        pin=form.cleaned_data["pin"],
        now=timezone.now(),
        cod=money(cod) if cod else None,
    )
    try:
        result = _send_sandbox_batch(request, body)
    except (BatchRefused, BillingError) as exc:
        messages.error(request, _("The scenario did not start: %(why)s") % {"why": exc})
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    [entry] = result.entries()
    if not entry.accepted:
        messages.error(request, _("The scenario did not start: %(why)s") % {"why": entry.message})
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    said = [_started(form.cleaned_data["scenario"], body)]
    if entry.dropoff_pin:
        said.append(_("The recipient's PIN is %(pin)s.") % {"pin": entry.dropoff_pin})
    if cod:
        said.append(_("The courier collects %(amount)s in cash.") % {"amount": money(cod)})
    messages.success(request, " ".join(said))
    return redirect(reverse("dashboard:sandbox") + f"?started={entry.drop_id}")


def _started(scenario: str, body: dict) -> str:
    """The scenario has started, or starts at the area's next opening when it is closed (the
    sample's pickup is scheduled then): "… every 5 s from 07:00 on 24 Nov, when the area opens"."""
    step = f"{settings.SANDBOX_STEP_SECONDS:g}"
    scheduled = body["orders"][0]["pickup"].get("pickup_scheduled_at")
    if scheduled is None:
        return _(
            "Scenario %(scenario)s started: the test driver takes a step every %(step)s s."
        ) % {
            "scenario": scenario,
            "step": step,
        }
    local = timezone.localtime(datetime.fromisoformat(scheduled))
    return _(
        "Scenario %(scenario)s started: the test driver takes a step every %(step)s s from "
        "%(time)s on %(day)s, when the area opens."
    ) % {
        "scenario": scenario,
        "step": step,
        "time": f"{local:%H:%M}",
        "day": date_format(local, pgettext("a day in a sentence", "D j M")),
    }


@require_POST
@business_view
def sandbox_advance(request):
    if refused := _refuse_without_sandbox(request):
        return refused
    form = AdvanceForm(request.POST)
    if not form.is_valid():
        return _sandbox_page(request, advance_form=form, status=400)
    [entry] = advance_sandbox_orders(
        business=request.business,
        identifiers=[form.cleaned_data["client_order_id"].strip()],
        to=form.cleaned_data["to"] or None,
    )
    if "error" in entry:
        messages.error(request, entry["error"]["message"])
        return _sandbox_page(
            request,
            advance_form=form,
            advanced=entry,
            advanced_words=_refusal_words(entry, to=form.cleaned_data["to"]),
            status=400,
        )
    messages.success(
        request,
        _("%(order)s is now %(status)s.")
        % {"order": entry["client_order_id"], "status": DropStatus(entry["status"]).label.lower()},
    )
    return redirect("dashboard:order", pk=entry["drop_id"])


def _uuid_or_none(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None
