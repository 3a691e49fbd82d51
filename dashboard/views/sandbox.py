"""The sandbox console: a sample batch, a scenario walked by the test driver, a move by hand."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
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
        return "no sandbox order with this id."
    where = f"to {DropStatus(to).label.lower()}" if to else "further"
    if to in RETURN_STEPS and (
        entry.get("undeliverable_action") == UndeliverableAction.DISPOSE
    ):  # docs/contract.md §19
        return f"it is to be disposed of if undeliverable, so it never moves {where}."
    return f"it is {DropStatus(entry['status']).label.lower()}, so it cannot move {where}."


def _refuse_without_sandbox(request):
    if request.business.can_use_sandbox:
        return None
    messages.error(request, "The sandbox opens once your access request is approved.")
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
        messages.error(request, f"The sample batch was not sent: {exc}")
        return _sandbox_page(request, advance_form=AdvanceForm(), status=400)
    messages.success(
        request,
        f"Sample batch sent: {result.accepted} accepted, {result.rejected} rejected.",
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
        messages.error(request, f"The scenario did not start: {exc}")
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    [entry] = result.entries()
    if not entry.accepted:
        messages.error(request, f"The scenario did not start: {entry.message}")
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    messages.success(
        request,
        f"Scenario {form.cleaned_data['scenario']} started: the test driver takes a step "
        f"every {settings.SANDBOX_STEP_SECONDS:g} s{_from_opening(body)}."
        + (f" The recipient's PIN is {entry.dropoff_pin}." if entry.dropoff_pin else "")
        + (f" The courier collects {money(cod)} in cash." if cod else ""),
    )
    return redirect(reverse("dashboard:sandbox") + f"?started={entry.drop_id}")


def _from_opening(body: dict) -> str:
    """When the area is closed, the sample's pickup is at its next opening, and a scheduled
    drop's scenario starts then: " from 07:00 on Tue 24 Nov, when the area opens"."""
    scheduled = body["orders"][0]["pickup"].get("pickup_scheduled_at")
    if scheduled is None:
        return ""
    local = timezone.localtime(datetime.fromisoformat(scheduled))
    return f" from {local:%H:%M} on {local:%a %-d %b}, when the area opens"


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
    messages.success(request, f"{entry['client_order_id']} is now {entry['status']}.")
    return redirect("dashboard:order", pk=entry["drop_id"])


def _uuid_or_none(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None
