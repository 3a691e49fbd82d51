"""The business dashboard: thin views that call the onboarding, billing and order services."""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import partial, wraps
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import orjson
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F, Q
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts import services
from accounts.models import ApiKey, BillingModel, Business, Environment, Stage
from billing import onboarding as billing_onboarding
from billing.models import Invoice, LedgerEntry
from billing.services import BillingError, account_summary, sandbox_top_up
from core.cursors import InvalidCursor
from dashboard import charts
from dashboard.exports import export_lines
from dashboard.exports import header as export_header
from dashboard.forms import (
    AdvanceForm,
    ApiKeyForm,
    EnvironmentFilterForm,
    LoginForm,
    OrderFilterForm,
    RequestAccessForm,
    SandboxTopUpForm,
    ScenarioForm,
    SignupForm,
)
from dashboard.maps import batch_map, order_map
from geo.services import load_coverage
from orders import onboarding as orders_onboarding
from orders.api import base_url_of
from orders.errors import BatchRefused
from orders.inputs import parse_batch
from orders.links import drop_tracking_url
from orders.models import Batch, Drop, DropStatus
from orders.services import BatchResult, create_batch
from tracking.lifecycle import CANCELLABLE
from tracking.listing import DropFilters, list_drops
from tracking.proof import photo_url
from tracking.services import advance_sandbox_orders, cancel_orders

PAGE_SIZE = 25
BATCH_PAGE_SIZE = 100
SAMPLE_BATCH = Path(settings.BASE_DIR) / "docs" / "sample-batch.json"


def business_view(view):
    """Login required, and the page acts for the user's own business (request.business)."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        # Read fresh on every request: an operator may have moved the stage meanwhile.
        business = Business.objects.filter(memberships__user=request.user).first()
        if business is None:
            return render(request, "dashboard/no_business.html", status=403)
        request.business = business
        return view(request, *args, **kwargs)

    return wrapper


def _page(request, rows, *, size: int = PAGE_SIZE, param: str = "page"):
    return Paginator(rows, size).get_page(request.GET.get(param))


def _day(moment: datetime | date) -> str:
    """A day as people write it: 23 Nov 2026 (a date has no zone to name)."""
    return f"{moment.day} {moment:%b %Y}"


def _environment_param(request, default: str) -> str:
    value = request.GET.get("environment", "")
    return value if value in Environment.values else default


# --- Signing up and in ---------------------------------------------------------------


def signup(request):
    if request.user.is_authenticated:
        return redirect("dashboard:home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        business = billing_onboarding.sign_up(
            business_name=form.cleaned_data["business_name"],
            email=form.cleaned_data["email"],
            password=form.cleaned_data["password"],
        )
        owner = business.memberships.get(is_owner=True).user
        login(request, owner, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome! {business.name} is registered.")
        return redirect("dashboard:home")
    return render(request, "registration/signup.html", {"form": form})


class LoginView(auth_views.LoginView):
    form_class = LoginForm
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    next_page = reverse_lazy("dashboard:login")


class PasswordResetView(auth_views.PasswordResetView):
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"
    success_url = reverse_lazy("dashboard:password_reset_done")


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    success_url = reverse_lazy("dashboard:password_reset_complete")


# --- Onboarding ---------------------------------------------------------------------------


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
        Step("Registered", True, f"Signed up {_day(timezone.localtime(business.created_at))}."),
        Step("Access requested", business.access_requested_at is not None),
        Step(
            "Approved",
            approved,
            "Your last request was declined; you may request access again." if rejected else "",
        ),
        Step(
            "First sandbox order",
            approved and orders_onboarding.has_accepted_sandbox_order(business),
        ),
        Step("Live requested", business.live_requested_at is not None or is_live),
        Step("Live", is_live),
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
            messages.success(request, "Access requested. An operator will review it shortly.")
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
            messages.success(request, "Live access requested. An operator will switch it on.")
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


# --- API keys -----------------------------------------------------------------------------


def _key_environments(business: Business) -> list[str]:
    allowed = []
    if business.can_use_sandbox:
        allowed.append(Environment.SANDBOX)
    if business.is_live:
        allowed.append(Environment.LIVE)
    return allowed


_KEY_FORM_TOKENS = "key_form_tokens"


def _new_key_form_token(request) -> str:
    """A one-use token for the key form, so a browser refresh of the answer makes no second key."""
    token = secrets.token_urlsafe(16)
    # A few outstanding tokens: one per open tab is enough.
    request.session[_KEY_FORM_TOKENS] = [*request.session.get(_KEY_FORM_TOKENS, [])[-4:], token]
    return token


def _spend_key_form_token(request) -> bool:
    tokens = request.session.get(_KEY_FORM_TOKENS, [])
    token = request.POST.get("form_token", "")
    if token not in tokens:
        return False
    tokens.remove(token)
    request.session[_KEY_FORM_TOKENS] = tokens
    return True


@never_cache  # the POST answer carries the only copy of a new key: no cache may keep it
@business_view
def keys(request):
    business = request.business
    environments = _key_environments(business)
    form = ApiKeyForm(request.POST or None, environments=environments)
    issued = None
    status = 200
    if request.method == "POST":
        if not _spend_key_form_token(request):
            messages.warning(
                request,
                "This form was already sent, so no new key was made. A key is shown only once: "
                "if you did not copy it, revoke it and generate another.",
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
            "form_token": _new_key_form_token(request),
            "keys": _page(
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
        messages.info(request, f"The key {key.hint} was already revoked.")
        return redirect("dashboard:keys")
    if request.method == "POST":
        services.revoke_api_key(key=key)
        messages.success(request, f"The key {key.hint} is revoked; it no longer works.")
        return redirect("dashboard:keys")
    return render(request, "dashboard/revoke_key.html", {"key": key})


# --- Money --------------------------------------------------------------------------------


def _wallet_page(request, *, environment: str, top_up_form: SandboxTopUpForm, status: int = 200):
    business = request.business
    entries = LedgerEntry.objects.filter(
        wallet__business=business, wallet__environment=environment
    ).select_related("drop", "batch")
    invoices = Invoice.objects.filter(business=business, environment=environment)
    is_invoiced = business.billing_model == BillingModel.INVOICED
    return render(
        request,
        "dashboard/wallet.html",
        {
            "business": business,
            "environment": environment,
            "environments": Environment.choices,
            "summary": account_summary(
                business=business, environment=environment, at=timezone.now()
            ),
            "entries": _page(request, entries),
            "invoices": _page(request, invoices.order_by("-period"), param="invoices")
            if is_invoiced or invoices.exists()
            else None,
            "support_email": settings.SUPPORT_EMAIL,
            "is_invoiced": is_invoiced,
            "top_up_form": top_up_form,
        },
        status=status,
    )


@business_view
def wallet(request):
    environment = _environment_param(request, Environment.SANDBOX)
    return _wallet_page(request, environment=environment, top_up_form=SandboxTopUpForm())


@require_POST
@business_view
def sandbox_wallet_top_up(request):
    form = SandboxTopUpForm(request.POST)
    if form.is_valid():
        try:
            entry = sandbox_top_up(
                business=request.business, amount=form.cleaned_data["amount"], actor=request.user
            )
        except BillingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Added {entry.amount} to the sandbox wallet ({entry.balance_after})."
            )
            return redirect(reverse("dashboard:wallet") + "?environment=sandbox")
    return _wallet_page(request, environment=Environment.SANDBOX, top_up_form=form, status=400)


# --- Orders and batches ------------------------------------------------------------------


@dataclass(frozen=True)
class OrderQuery:
    """What the orders page and its export list: the account's environments and filters."""

    environments: list[str]
    filters: DropFilters
    # The batch filter names no batch of the account: nothing to list, nothing to query.
    matches_nothing: bool = False


def batches_named(*, business: Business, environments: list[str], text: str) -> list[uuid.UUID]:
    """The account's batches with this client_batch_id or batch_id: one per environment at
    most (one query)."""
    named = Q(client_batch_id=text)
    if (as_id := _uuid_or_none(text)) is not None:
        named |= Q(pk=as_id)
    rows = Batch.objects.filter(named, business=business, environment__in=environments)
    return list(rows.values_list("pk", flat=True)[:4])


def _midnight(day: date) -> datetime:
    """The day's start in the service time zone: the filters' days are the business's days."""
    return datetime.combine(day, time(), tzinfo=ZoneInfo(settings.TIME_ZONE))


def order_query(*, business: Business, data: dict) -> OrderQuery:
    """The listing's filters from OrderFilterForm's cleaned data; days are inclusive."""
    environments = [data["environment"]] if data.get("environment") else list(Environment.values)
    batch_ids: tuple[uuid.UUID, ...] = ()
    if data.get("batch"):
        batch_ids = tuple(
            batches_named(business=business, environments=environments, text=data["batch"])
        )
        if not batch_ids:
            return OrderQuery(environments, DropFilters(), matches_nothing=True)
    start, end = data.get("created_from"), data.get("created_to")
    filters = DropFilters(
        statuses=tuple(data.get("status") or ()),
        created_since=_midnight(start) if start else None,
        created_before=_midnight(end + timedelta(days=1)) if end else None,
        batch_ids=batch_ids,
        search=data.get("q", ""),
    )
    return OrderQuery(environments, filters)


@business_view
def orders(request):
    # The same listing as GET /api/v1/orders (tracking/listing.py), newest first, with
    # the page's position in an opaque cursor: no second way of reading drops.
    form = OrderFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        # Never the unfiltered list under filters that were asked for: the errors instead.
        return render(
            request, "dashboard/orders.html", {"form": form, "orders": [], "invalid": True}
        )
    query = order_query(business=request.business, data=form.cleaned_data if form.is_bound else {})
    cursor = request.GET.get("cursor", "")[:1000]
    listing = partial(
        list_drops,
        business=request.business,
        environments=query.environments,
        filters=query.filters,
        limit=PAGE_SIZE,
    )
    page = None
    if not query.matches_nothing:
        try:
            page = listing(cursor=cursor or None)
        except InvalidCursor:
            # A link from other filters (or edited by hand): start from the newest instead.
            cursor, page = "", listing(cursor=None)
    rows = [
        {
            **entry,
            "environment_label": Environment(entry["environment"]).label,
            "status_label": DropStatus(entry["status"]).label,
        }
        for entry in (page.orders if page else [])
    ]
    return render(
        request,
        "dashboard/orders.html",
        {"form": form, "orders": rows, "page": page, "cursor": cursor},
    )


@business_view
def orders_export(request):
    """The filtered orders, every page of them, as CSV (docs/dashboard.md has the columns)."""
    form = OrderFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return HttpResponse(
            f"Not exported: {problems}", status=400, content_type="text/plain; charset=utf-8"
        )
    query = order_query(business=request.business, data=form.cleaned_data if form.is_bound else {})
    if query.matches_nothing:
        lines = iter([export_header()])
    else:
        lines = export_lines(
            business=request.business, environments=query.environments, filters=query.filters
        )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="orders-{stamp}Z.csv"'
    response["Cache-Control"] = "no-store"  # recipients' names and phone numbers
    return response


@business_view
def order_detail(request, pk: uuid.UUID):
    drop = get_object_or_404(
        Drop.objects.select_related("order__driver", "batch"), pk=pk, business=request.business
    )
    return render(
        request,
        "dashboard/order.html",
        {
            "drop": drop,
            "order": drop.order,
            "events": drop.timeline(),
            "drop_tracking_url": drop_tracking_url(drop.pk),
            "map": order_map(drop),
            "can_cancel": drop.status in CANCELLABLE,
            # Same-origin, as the recipient's page shows it: the signed /pod/ link's path.
            "photo_path": urlsplit(photo_url(drop.pk)).path if drop.pod_photo else None,
        },
    )


@business_view
def order_cancel(request, pk: uuid.UUID):
    """Cancel a drop before pickup, after a confirmation page: the API's cancel (refunded)."""
    drop = get_object_or_404(Drop, pk=pk, business=request.business)
    # The service names drops by client_order_id, which picks the id's active drop: a
    # finished drop's page must never cancel a newer drop that reuses its id.
    if drop.status not in CANCELLABLE:
        messages.info(
            request,
            f"{drop.client_order_id} is {drop.get_status_display().lower()}: "
            "only an order not yet picked up can be cancelled.",
        )
        return redirect("dashboard:order", pk=drop.pk)
    if request.method != "POST":
        return render(request, "dashboard/order_cancel.html", {"drop": drop})
    [entry] = cancel_orders(
        business=request.business,
        environment=drop.environment,
        identifiers=[drop.client_order_id],
        actor=f"dashboard {request.user.get_username()}"[:100],
    )
    if "error" in entry:
        messages.error(
            request, f"{drop.client_order_id} was not cancelled: {entry['error']['message']}"
        )
    else:
        messages.success(request, f"{drop.client_order_id} is cancelled; its price is refunded.")
    return redirect("dashboard:order", pk=drop.pk)


@business_view
def batches(request):
    form = EnvironmentFilterForm(request.GET or None)
    # Not the stored answer: a list page has no use for a few megabytes of JSON per row.
    rows = (
        Batch.objects.filter(business=request.business)
        .defer("response")
        .order_by("-created_at", "-pk")
    )
    if form.is_valid() and form.cleaned_data["environment"]:
        rows = rows.filter(environment=form.cleaned_data["environment"])
    return render(
        request, "dashboard/batches.html", {"form": form, "batches": _page(request, rows)}
    )


def stored_results(batch: Batch) -> list[dict]:
    """The batch's result entries as answered to POST /orders/bulk, in submission order,
    each with its 1-based position in the batch."""
    if not batch.response:
        return []
    entries = orjson.loads(bytes(batch.response))["data"]["orders"]
    return [{**entry, "position": n} for n, entry in enumerate(entries, start=1)]


@business_view
def batch_page(request, pk: uuid.UUID):
    batch = get_object_or_404(Batch, pk=pk, business=request.business)
    results = stored_results(batch)
    rejected_only = request.GET.get("rejected") == "1"
    shown = [e for e in results if e["status"] == "rejected"] if rejected_only else results
    page = _page(request, shown, size=BATCH_PAGE_SIZE)
    pins = batch_map(business=request.business, batch_id=batch.pk)
    for entry in page:
        if entry["status"] == "accepted" and (status := pins.by_status.get(entry["drop_id"])):
            entry["delivery_status"] = status
            entry["delivery_status_label"] = DropStatus(status).label
    return render(
        request,
        "dashboard/batch.html",
        {
            "batch": batch,
            "results": page,
            "rejected_only": rejected_only,
            "map": pins.data,
            "legend": pins.legend,
        },
    )


# --- Sandbox console ---------------------------------------------------------------------


def sample_batch_body(suffix: str) -> dict:
    """docs/sample-batch.json with fresh ids, so every send is a new batch.

    Every client_order_id gets the same suffix, so the sample's in-batch duplicate
    pair stays a duplicate and still shows DUPLICATE_CLIENT_ORDER_ID.
    """
    body = json.loads(SAMPLE_BATCH.read_text())
    body["client_batch_id"] = f"{body['client_batch_id']}-{suffix}"
    for group in body["orders"]:
        for drop in group["dropoff"]:
            drop["client_order_id"] = f"{drop['client_order_id']}-{suffix}"
    return body


def scenario_body(scenario: str, *, pin: bool, now: datetime) -> dict:
    """One sample drop walked by the test driver; picked up now, or at the next opening."""
    sample = json.loads(SAMPLE_BATCH.read_text())
    pickup = dict(sample["orders"][0]["pickup"])
    pickup.pop("pickup_scheduled_at", None)
    opens = next_opening(pickup["lat"], pickup["long"], now)
    if opens is not None and opens > now:
        pickup["pickup_scheduled_at"] = opens.isoformat().replace("+00:00", "Z")
    suffix = uuid.uuid4().hex[:8]
    drop = dict(sample["orders"][0]["dropoff"][0])
    drop |= {
        "client_order_id": f"SCENARIO-{scenario.upper()}-{suffix}",
        "sandbox_scenario": scenario,
    }
    drop.pop("external_waybill", None)
    if pin:
        drop["dropoff_verification"] = {"pin": True}
    return {
        "client_batch_id": f"sandbox-scenario-{suffix}",
        "orders": [{"pickup": pickup, "dropoff": [drop]}],
    }


def next_opening(lat: float, long: float, now: datetime) -> datetime | None:
    """The first quarter hour from now (within 8 days) at which the pickup's area is open."""
    coverage = load_coverage()
    [areas] = coverage.locate([lat], [long])
    if not areas:
        return None
    moment = now
    for _ in range(8 * 24 * 4):
        if coverage.is_open(areas, moment):
            return moment
        moment = (moment + timedelta(minutes=15)).replace(second=0, microsecond=0)
        moment -= timedelta(minutes=moment.minute % 15)
    return None


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


def _uuid_or_none(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


@require_POST
@business_view
def sandbox_start_scenario(request):
    """Send one sample drop with a scenario; the page then links to its tracking page."""
    if refused := _refuse_without_sandbox(request):
        return refused
    form = ScenarioForm(request.POST)
    if not form.is_valid():
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    body = scenario_body(
        form.cleaned_data["scenario"], pin=form.cleaned_data["pin"], now=timezone.now()
    )
    try:
        result = _send_sandbox_batch(request, body)
    except (BatchRefused, BillingError) as exc:
        messages.error(request, f"The scenario did not start: {exc}")
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    [entry] = json.loads(result.body)["data"]["orders"]
    if entry["status"] != "accepted":
        messages.error(request, f"The scenario did not start: {entry['message']}")
        return _sandbox_page(request, advance_form=AdvanceForm(), scenario_form=form, status=400)
    messages.success(
        request,
        f"Scenario {form.cleaned_data['scenario']} started: the test driver takes a step "
        f"every {settings.SANDBOX_STEP_SECONDS:g} s."
        + (f" The recipient's PIN is {entry['dropoff_pin']}." if "dropoff_pin" in entry else ""),
    )
    return redirect(reverse("dashboard:sandbox") + f"?started={entry['drop_id']}")


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
