"""Dashboard pages for webhook endpoints: thin views over events/endpoints.py, as the API.

List and create (the secret shown once, like an API key), edit, switch on and off,
rotate the secret, send a test event, delete, and an endpoint's delivery log with a
resend button per delivery.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.db.models import F, Prefetch, Window
from django.db.models.functions import RowNumber
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.models import Environment
from dashboard.forms import WebhookEndpointForm
from dashboard.views.common import (
    business_view,
    key_environments,
    new_key_form_token,
    page_of,
    spend_key_form_token,
)
from events.endpoints import (
    MAX_ENDPOINTS,
    EndpointRefused,
    IssuedSecret,
    create_endpoint,
    delete_endpoint,
    resend_delivery,
    rotate_secret,
    send_test_event,
    update_endpoint,
)
from events.models import DeliveryAttempt, WebhookEndpoint
from events.selectors import deliveries_of, endpoints_of, find_delivery, find_endpoint
from events.ssrf import private_urls_allowed

# A delivery's newest attempts on the endpoint's page; the rest on the delivery's own pages.
ATTEMPTS_SHOWN = 3
_ALREADY_SENT = gettext_lazy(
    "This form was already sent, so nothing new was made. A secret is shown only once: if "
    "you did not copy it, rotate it again."
)


def _list_url(environment: str) -> str:
    return reverse("dashboard:webhooks") + f"?environment={environment}"


def _endpoint_of(request, pk: uuid.UUID) -> WebhookEndpoint:
    endpoint = find_endpoint(business=request.business, environment=None, endpoint_id=pk)
    if endpoint is None:
        raise Http404("No such webhook endpoint.")
    return endpoint


def _may_manage(request, environment: str) -> bool:
    """Endpoints are managed where keys may be made: sandbox once approved, live once live."""
    if environment in key_environments(request.business):
        return True
    messages.error(
        request,
        _("Your account cannot manage %(environment)s webhooks yet.")
        % {"environment": Environment(environment).label.lower()},
    )
    return False


@never_cache  # the POST answer carries the only copy of a new secret
@business_view
def webhooks(request):
    business = request.business
    allowed = key_environments(business)
    source = request.POST if request.method == "POST" else request.GET
    environment = source.get("environment", "")
    if environment not in Environment.values:
        environment = Environment.SANDBOX
    form = WebhookEndpointForm(request.POST or None)
    issued: IssuedSecret | None = None
    status = 200
    if request.method == "POST":
        if not _may_manage(request, environment):
            status = 403
        elif not spend_key_form_token(request):
            messages.warning(request, _ALREADY_SENT)
            form = WebhookEndpointForm()
            status = 409
        elif form.is_valid():
            try:
                issued = create_endpoint(
                    business=business, environment=environment, **form.cleaned_data
                )
            except EndpointRefused as exc:
                messages.error(request, exc.message)
                status = 409
            else:
                # Rendered into this response only: never in the session, a URL or a log.
                form = WebhookEndpointForm()
                status = 201
        else:
            status = 400
    return render(
        request,
        "dashboard/webhooks.html",
        {
            "environment": environment,
            "environments": Environment.choices,
            "can_manage": environment in allowed,
            "endpoints": endpoints_of(business=business, environment=environment),
            "max_endpoints": MAX_ENDPOINTS,
            "private_urls_allowed": private_urls_allowed(),
            "form": form,
            "issued": issued,
            "form_token": new_key_form_token(request),
        },
        status=status,
    )


def _with_recent_attempts(deliveries):
    """Each delivery with only its newest ATTEMPTS_SHOWN attempts (`recent_attempts`): a
    delivery resent again and again must not grow the page (one query for the page's)."""
    newest_first = Window(
        RowNumber(), partition_by=F("delivery_id"), order_by=[F("at").desc(), F("pk").desc()]
    )
    recent = (
        DeliveryAttempt.objects.annotate(rank=newest_first)
        .filter(rank__lte=ATTEMPTS_SHOWN)
        .order_by("-at", "-pk")
    )
    return deliveries.prefetch_related(None).prefetch_related(
        Prefetch("log", queryset=recent, to_attr="recent_attempts")
    )


def _endpoint_page(request, endpoint, *, form=None, secret: str = "", status: int = 200):
    if form is None:
        form = WebhookEndpointForm(
            initial={
                "url": endpoint.url,
                "description": endpoint.description,
                "event_types": endpoint.event_types,
            }
        )
    return render(
        request,
        "dashboard/webhook.html",
        {
            "endpoint": endpoint,
            "form": form,
            "secret": secret,
            "can_manage": endpoint.environment in key_environments(request.business),
            "deliveries": page_of(request, _with_recent_attempts(deliveries_of(endpoint=endpoint))),
            "attempts_shown": ATTEMPTS_SHOWN,
            "form_token": new_key_form_token(request),
            "now": timezone.now(),
        },
        status=status,
    )


@never_cache
@business_view
def webhook_endpoint(request, pk: uuid.UUID):
    """The endpoint, its settings form (POST saves them) and its delivery log."""
    endpoint = _endpoint_of(request, pk)
    if request.method != "POST":
        return _endpoint_page(request, endpoint)
    if not _may_manage(request, endpoint.environment):
        return _endpoint_page(request, endpoint, status=403)
    form = WebhookEndpointForm(request.POST)
    if not form.is_valid():
        return _endpoint_page(request, endpoint, form=form, status=400)
    try:
        update_endpoint(endpoint=endpoint, **form.cleaned_data)
    except WebhookEndpoint.DoesNotExist as exc:
        raise Http404("No such webhook endpoint.") from exc
    messages.success(request, _("Saved."))
    return redirect("dashboard:webhook", pk=endpoint.pk)


@require_POST
@business_view
def webhook_enabled(request, pk: uuid.UUID):
    """Switch the endpoint on (forgetting why we switched it off) or off."""
    endpoint = _endpoint_of(request, pk)
    if _may_manage(request, endpoint.environment):
        enabled = request.POST.get("enabled") == "true"
        update_endpoint(endpoint=endpoint, enabled=enabled)
        messages.success(
            request,
            _("The endpoint is on: events are sent to it again.")
            if enabled
            else _("The endpoint is off: nothing is sent to it until you switch it on."),
        )
    return redirect("dashboard:webhook", pk=endpoint.pk)


@never_cache  # the answer carries the only copy of the new secret
@require_POST
@business_view
def webhook_rotate(request, pk: uuid.UUID):
    endpoint = _endpoint_of(request, pk)
    if not _may_manage(request, endpoint.environment):
        return _endpoint_page(request, endpoint, status=403)
    if not spend_key_form_token(request):
        messages.warning(request, _ALREADY_SENT)
        return _endpoint_page(request, endpoint, status=409)
    issued = rotate_secret(endpoint=endpoint, at=timezone.now())
    return _endpoint_page(request, issued.endpoint, secret=issued.secret)


@require_POST
@business_view
def webhook_test(request, pk: uuid.UUID):
    endpoint = _endpoint_of(request, pk)
    if _may_manage(request, endpoint.environment):
        try:
            event = send_test_event(endpoint=endpoint, at=timezone.now())
        except EndpointRefused as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request,
                _("Test event %(event)s queued: its delivery shows below.")
                % {"event": event.public_id},
            )
    return redirect("dashboard:webhook", pk=endpoint.pk)


@require_POST
@business_view
def webhook_resend(request, pk: uuid.UUID, delivery_pk: int):
    endpoint = _endpoint_of(request, pk)
    delivery = find_delivery(endpoint=endpoint, delivery_id=delivery_pk)
    if delivery is None:
        raise Http404("No such delivery.")
    if _may_manage(request, endpoint.environment):
        try:
            resend_delivery(delivery=delivery, at=timezone.now())
        except EndpointRefused as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request,
                _("Delivery of %(event)s queued again.") % {"event": delivery.event.public_id},
            )
    return redirect("dashboard:webhook", pk=endpoint.pk)


@business_view
def webhook_delivery(request, pk: uuid.UUID, delivery_pk: int):
    """One delivery's every attempt, newest first, a page at a time."""
    endpoint = _endpoint_of(request, pk)
    delivery = find_delivery(endpoint=endpoint, delivery_id=delivery_pk)
    if delivery is None:
        raise Http404("No such delivery.")
    attempts = DeliveryAttempt.objects.filter(delivery=delivery).order_by("-at", "-pk")
    return render(
        request,
        "dashboard/webhook_delivery.html",
        {
            "endpoint": endpoint,
            "delivery": delivery,
            "attempts": page_of(request, attempts),
            "can_manage": endpoint.environment in key_environments(request.business),
        },
    )


@business_view
def webhook_delete(request, pk: uuid.UUID):
    endpoint = _endpoint_of(request, pk)
    if request.method == "POST" and _may_manage(request, endpoint.environment):
        delete_endpoint(endpoint=endpoint)
        messages.success(request, _("The endpoint %(url)s is deleted.") % {"url": endpoint.url})
        return redirect(_list_url(endpoint.environment))
    return render(request, "dashboard/webhook_delete.html", {"endpoint": endpoint})
