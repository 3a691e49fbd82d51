"""Operator console for businesses: the approval queue, onboarding moves, wallet credits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from accounts import services
from accounts.models import ApiKey, BillingModel, Business, Environment, Membership, Stage
from billing import onboarding
from billing.models import EntryKind, LedgerEntry, PricingPlan, Wallet, largest_value
from billing.services import BillingError, post_wallet_entry
from console import queue
from console.columns import EMPTY, ServiceTimesAdmin, ServiceTimesInline, cut, day, when
from console.forms import UnitInput
from console.history import record
from core.admin import GatedActionsAdmin

# What only a monthly invoice has: credit terms. A prepaid wallet pays each drop at once.
INVOICE_ONLY_FIELDS = ["net_days"]


def show_billing_terms_by_model(form: forms.BaseForm) -> None:
    """Ask for a monthly invoice's terms only when the form bills by invoice.

    The invoice-only fields are marked for the page's script (console/billing_terms.js), which
    hides them while "Prepaid wallet" is chosen. Whatever a wallet's form sends for them,
    script or not, is ignored: a disabled field keeps its initial value (the business's own).
    """
    billed_by_wallet = form.data.get("billing_model") == BillingModel.WALLET
    for name in INVOICE_ONLY_FIELDS:
        if name in form.fields:
            form.fields[name].widget.attrs["data-invoice-only"] = ""
            form.fields[name].disabled = billed_by_wallet


class ApproveForm(forms.Form):
    billing_model = forms.ChoiceField(
        choices=BillingModel.choices,
        help_text="Prepaid wallet: each live drop is paid from the live wallet at once. "
        "Monthly invoice: live drops accrue on an invoice issued after the month ends.",
    )
    base_fee = forms.DecimalField(
        min_value=0,
        max_digits=12,
        decimal_places=2,
        initial=Decimal("2.00"),
        widget=UnitInput("{currency} per drop"),
    )
    per_km_fee = forms.DecimalField(
        label="Per km fee",
        min_value=0,
        max_digits=12,
        decimal_places=2,
        initial=Decimal("0.50"),
        widget=UnitInput("{currency} per km beyond the included km"),
    )
    included_km = forms.DecimalField(
        min_value=0,
        max_digits=8,
        decimal_places=2,
        initial=Decimal("0"),
        widget=UnitInput("km in the base fee"),
    )
    net_days = forms.IntegerField(
        min_value=0,
        max_value=365,
        initial=30,
        widget=UnitInput("days"),
        help_text="Invoice credit terms: an invoice is due this many days after it is issued. "
        "Only for a monthly invoice.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        show_billing_terms_by_model(self)


class BusinessForm(forms.ModelForm):
    """The business page's form: its billing terms as the approve form asks for them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        show_billing_terms_by_model(self)


_AMOUNT = LedgerEntry._meta.get_field("amount")


class WalletEntryForm(forms.Form):
    environment = forms.ChoiceField(choices=Environment.choices)
    kind = forms.ChoiceField(
        choices=[(EntryKind.TOP_UP, "Top-up (credit)"), (EntryKind.ADJUSTMENT, "Adjustment (±)")]
    )
    # The bounds of the ledger's column (billing.models): a larger amount is a form error.
    amount = forms.DecimalField(
        max_digits=_AMOUNT.max_digits,
        decimal_places=_AMOUNT.decimal_places,
        max_value=largest_value(LedgerEntry, "amount"),
        min_value=-largest_value(LedgerEntry, "amount"),
        widget=UnitInput("{currency}"),
    )
    note = forms.CharField(max_length=200)


# Part of approving: without accounts.approve_business they are read-only on the business page.
PRICING_FIELDS = ["billing_model", "pricing_plan", "net_days"]


def money(amount: Decimal) -> str:
    return f"{amount} {settings.CURRENCY}"


def price_terms(plan: PricingPlan | None) -> str:
    """A plan in words: "2.00 USD a drop plus 0.50 USD a km beyond the first 1 km"."""
    if plan is None:
        return "with no pricing plan set"
    terms = f"{money(plan.base_fee)} a drop plus {money(plan.per_km_fee)} a km"
    if plan.included_km:
        terms += f" beyond the first {plan.included_km.normalize():f} km"
    return terms


def billing_terms(business: Business) -> str:
    """How a business's live drops are paid for, in words (pricing_plan selected with it)."""
    if business.billing_model == BillingModel.INVOICED:
        how = f"on a monthly invoice due {business.net_days} days after it is issued"
    else:
        how = "from their prepaid live wallet"
    return f"{how}, at {price_terms(business.pricing_plan)}"


def approval_logged(terms: dict) -> str:
    """The log's sentence for an approval: the terms the operator set (ApproveForm's)."""
    plan = PricingPlan(
        base_fee=terms["base_fee"],
        per_km_fee=terms["per_km_fee"],
        included_km=terms["included_km"],
    )
    billing_model = BillingModel(terms["billing_model"])
    said = f"Approved: {billing_model.label.lower()}, {price_terms(plan)}"
    if billing_model == BillingModel.INVOICED:
        said += f", invoices due {terms['net_days']} days after issue"
    return f"{said}."


def waiting_since(business: Business) -> tuple[str, datetime | None] | None:
    """What a business waits for from an operator, and since when; None if nothing."""
    if business.stage == Stage.ACCESS_REQUESTED:
        return "approval", business.access_requested_at
    if business.stage == Stage.APPROVED and business.live_requested_at:
        return "live", business.live_requested_at
    return None


# --- onboarding moves: a button opens a confirmation page (GET), whose Confirm acts (POST)


@dataclass(frozen=True, slots=True)
class Move:
    service: Callable[..., None]
    permission: str  # BusinessAdmin.has_<permission>_permission
    # Why the move is not offered to this business now (a sentence), or None: it is.
    why_not: Callable[[Business], str | None]
    question: Callable[[Business], str]
    consequence: Callable[[Business], str]
    done: Callable[[Business], str]  # the success message


def _live_consequence(business: Business) -> str:
    said = (
        "They will be able to make live keys and send live orders, billed "
        f"{billing_terms(business)}."
    )
    if business.billing_model == BillingModel.WALLET:
        balance = (
            Wallet.objects.filter(business=business, environment=Environment.LIVE)
            .values_list("balance", flat=True)
            .first()
        )
        said += (
            f" Their live wallet holds {money(balance or Decimal('0.00'))}: live drops are "
            "refused with INSUFFICIENT_BALANCE until it is topped up."
        )
    return said


def _why_not_live(business: Business) -> str | None:
    if business.stage != Stage.APPROVED:
        return (
            f"{business} is {business.get_stage_display().lower()}: only an approved business "
            "that asked for live access can be switched live. Nothing changed."
        )
    if business.live_requested_at is None:
        return f"{business} has not asked for live access yet. Nothing changed."
    return None


def _stage_after_reactivation(business: Business) -> str:
    return Stage(business.stage_before_suspension or Stage.REGISTERED).label.lower()


MOVES: dict[str, Move] = {
    "reject": Move(
        service=services.reject,
        permission="approve",
        why_not=lambda b: (
            None
            if b.stage == Stage.ACCESS_REQUESTED
            else f"{b} has no access request waiting. Nothing changed."
        ),
        question=lambda b: f"Reject the access request of {b}?",
        consequence=lambda b: "They get no API keys; they may ask again from their dashboard.",
        done=lambda b: f"The access request of {b} was rejected; they may ask again.",
    ),
    "enable_live": Move(
        service=services.enable_live,
        permission="enable_live",
        why_not=_why_not_live,
        question=lambda b: f"Enable live access for {b}?",
        consequence=_live_consequence,
        done=lambda b: f"Live access enabled for {b}.",
    ),
    "suspend": Move(
        service=services.suspend,
        permission="suspend",
        why_not=lambda b: f"{b} is already suspended." if b.is_suspended else None,
        question=lambda b: f"Suspend {b}?",
        consequence=lambda b: (
            "Every API key of theirs, sandbox and live, will answer "
            "403 ACCOUNT_SUSPENDED until the business is reactivated. Nothing is deleted."
        ),
        done=lambda b: f"{b} is suspended; its API keys answer 403 until it is reactivated.",
    ),
    "reactivate": Move(
        service=services.reactivate,
        permission="suspend",
        why_not=lambda b: None if b.is_suspended else f"{b} is not suspended. Nothing changed.",
        question=lambda b: f"Reactivate {b}?",
        consequence=lambda b: (
            f"Their API keys work again and the business returns to {_stage_after_reactivation(b)}."
        ),
        done=lambda b: f"{b} is reactivated, back to {b.get_stage_display().lower()}.",
    ),
}


class WaitingFilter(admin.SimpleListFilter):
    """The two queues of the admin index, as a filter of the list."""

    title = "waiting for"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("approval", "Approval"), ("live", "Live access")]

    def queryset(self, request, queryset: QuerySet[Business]) -> QuerySet[Business]:
        if self.value() == "approval":
            return queryset & queue.waiting_for_access()
        if self.value() == "live":
            return queryset & queue.waiting_for_live()
        return queryset


class MembershipInline(ServiceTimesInline, admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class ApiKeyInline(ServiceTimesInline, admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ["hint", "environment", "label", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False  # keys are made by the business in its dashboard, shown only to it


@admin.register(Business)
class BusinessAdmin(ServiceTimesAdmin, admin.ModelAdmin):
    # Short columns, so the list fits 1280 px beside its filters (docs/contract.md §9).
    list_display = [
        "name_column",
        "email_column",
        "stage_column",
        "waiting_column",
        "pricing",
        "joined",
    ]
    list_display_links = ["name_column"]
    list_filter = [WaitingFilter, "stage", "billing_model"]
    list_select_related = ["pricing_plan"]
    search_fields = ["name", "email"]
    readonly_fields = [
        "stage",
        "stage_before_suspension",
        "access_requested_at",
        "approved_at",
        "live_requested_at",
        "live_enabled_at",
        "created_at",
    ]
    fields = [
        "name",
        "email",
        "stage",
        "billing_model",
        "pricing_plan",
        "net_days",
        "recipient_language",
        "dashboard_language",
        "use_case",
        "expected_monthly_volume",
        *readonly_fields[1:],
    ]
    inlines = [MembershipInline, ApiKeyInline]
    form = BusinessForm
    change_form_template = "admin/accounts/business/change_form.html"

    class Media:
        js = ["console/billing_terms.js"]

    @admin.display(description="Name", ordering="name")
    def name_column(self, business: Business) -> SafeString | str:
        return cut(business.name, 40)

    @admin.display(description="Email", ordering="email")
    def email_column(self, business: Business) -> SafeString | str:
        return cut(business.email, 30)

    @admin.display(description="Stage", ordering="stage")
    def stage_column(self, business: Business) -> str:
        return business.get_stage_display()

    @admin.display(description="Waiting for")
    def waiting_column(self, business: Business) -> SafeString | str:
        waiting = waiting_since(business)
        if waiting is None:
            return EMPTY
        what, since = waiting
        return format_html("{}, {}", what, when(since))

    @admin.display(description="Pricing", ordering="billing_model")
    def pricing(self, business: Business) -> str:
        plan = business.pricing_plan
        model = "Invoice" if business.billing_model == BillingModel.INVOICED else "Wallet"
        if plan is None:
            return model
        included = f" over {plan.included_km.normalize():f} km" if plan.included_km else ""
        return f"{model}: {plan.base_fee} + {plan.per_km_fee}/km{included}"

    @admin.display(description="Joined", ordering="created_at")
    def joined(self, business: Business) -> SafeString | str:
        return day(business.created_at)

    def get_urls(self):
        own = [
            path(
                "<uuid:pk>/approve/",
                self.admin_site.admin_view(self.approve_view),
                name="accounts_business_approve",
            ),
            path(
                "<uuid:pk>/wallet/",
                self.admin_site.admin_view(self.wallet_view),
                name="accounts_business_wallet",
            ),
            path(
                "<uuid:pk>/move/<str:move>/",
                self.admin_site.admin_view(self.move_view),
                name="accounts_business_move",
            ),
        ]
        return own + super().get_urls()

    # Each operator move is its own permission (docs/contract.md §16), not is_staff or
    # change_business: the buttons show only with it, and its URL answers 403 without it.
    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm(queue.APPROVE)

    def has_enable_live_permission(self, request) -> bool:
        return request.user.has_perm(queue.ENABLE_LIVE)

    def has_suspend_permission(self, request) -> bool:
        return request.user.has_perm(queue.SUSPEND)

    def has_adjust_wallet_permission(self, request) -> bool:
        return request.user.has_perm("billing.adjust_wallet")

    def _business(self, request, pk, permission: str) -> Business:
        if not getattr(self, f"has_{permission}_permission")(request):
            raise PermissionDenied
        return get_object_or_404(Business.objects.select_related("pricing_plan"), pk=pk)

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if not self.has_approve_permission(request):
            readonly += PRICING_FIELDS  # pricing is set by whoever may approve
        return readonly

    def _page(self, request, business, template: str, **context) -> TemplateResponse:
        """A page of one operator move: a form (approve, wallet entry) or a confirmation."""
        return TemplateResponse(
            request,
            f"admin/accounts/business/{template}",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": business,
                **context,
            },
        )

    def _back(self, business):
        return redirect(reverse("admin:accounts_business_change", args=[business.pk]))

    def approve_view(self, request, pk):
        business = self._business(request, pk, "approve")
        form = ApproveForm(
            request.POST or None,
            initial={"billing_model": business.billing_model, "net_days": business.net_days},
        )
        if request.method == "POST" and form.is_valid():
            try:
                onboarding.approve(business=business, actor=request.user, **form.cleaned_data)
            except services.OnboardingError as exc:
                messages.error(request, str(exc))
            else:
                billing_model = form.cleaned_data["billing_model"]
                messages.success(request, self._approved(business, billing_model))
                record(request, [business], approval_logged(form.cleaned_data))
                return self._back(business)
        return self._page(
            request,
            business,
            "approve.html",
            form=form,
            title=f"Approve {business}",
            submit="Approve",
            sandbox_credit=money(settings.SANDBOX_STARTING_BALANCE),
            credits_sandbox=settings.SANDBOX_STARTING_BALANCE > 0,
            currency=settings.CURRENCY,
        )

    @staticmethod
    def _approved(business: Business, billing_model: str) -> str:
        if billing_model == BillingModel.INVOICED:
            return (
                f"{business} approved; billed by invoice, their sandbox orders go on a sandbox "
                "invoice that is never billed, so their sandbox wallet was not credited. They "
                "can make sandbox keys now."
            )
        if settings.SANDBOX_STARTING_BALANCE > 0:
            return (
                f"{business} approved; the sandbox wallet was credited. With "
                f"{money(settings.SANDBOX_STARTING_BALANCE)} of sandbox credit they can try "
                "the API now."
            )
        return f"{business} approved; they can make sandbox keys now."

    def wallet_view(self, request, pk):
        business = self._business(request, pk, "adjust_wallet")
        form = WalletEntryForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                post_wallet_entry(business=business, actor=request.user, **form.cleaned_data)
            except BillingError as exc:
                messages.error(request, str(exc))
            else:
                entry = form.cleaned_data
                messages.success(
                    request,
                    f"{EntryKind(entry['kind']).label} of {money(entry['amount'])} recorded on "
                    f"the {Environment(entry['environment']).label.lower()} wallet of {business}.",
                )
                record(
                    request,
                    [business],
                    f"{EntryKind(entry['kind']).label} of {money(entry['amount'])} on the "
                    f"{Environment(entry['environment']).label.lower()} wallet: {entry['note']}",
                )
                return self._back(business)
        return self._page(
            request,
            business,
            "action_form.html",
            form=form,
            title=f"Wallet entry for {business}",
            submit="Record entry",
        )

    def move_view(self, request: HttpRequest, pk, move: str) -> HttpResponse:
        """GET asks for confirmation, POST (its Confirm) acts; neither when not offered."""
        if move not in MOVES:
            raise Http404(f"No onboarding move {move!r}.")
        chosen = MOVES[move]
        business = self._business(request, pk, chosen.permission)
        if refusal := chosen.why_not(business):
            messages.error(request, refusal)
            return self._back(business)
        if request.method != "POST":
            return self._page(
                request,
                business,
                "confirm_move.html",
                title=chosen.question(business),
                consequence=chosen.consequence(business),
                move=move,
            )
        try:
            chosen.service(business=business)
        except services.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            done = chosen.done(business)
            messages.success(request, done)
            record(request, [business], done)
        return self._back(business)

    def offered_moves(self, request, business: Business) -> list[str]:
        """The moves this user may make on this business now: its buttons."""
        return [
            name
            for name, move in MOVES.items()
            if getattr(self, f"has_{move.permission}_permission")(request)
            and move.why_not(business) is None
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        business = self.get_object(request, object_id)
        extra_context = {
            **(extra_context or {}),
            "Stage": Stage,
            "can_approve": self.has_approve_permission(request),
            "can_enable_live": self.has_enable_live_permission(request),
            "can_suspend": self.has_suspend_permission(request),
            "can_adjust_wallet": self.has_adjust_wallet_permission(request),
            "moves": self.offered_moves(request, business) if business else [],
        }
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(ApiKey)
class ApiKeyAdmin(ServiceTimesAdmin, GatedActionsAdmin):
    list_display = [
        "hint",
        "business_column",
        "environment",
        "label_column",
        "created",
        "last_used",
        "revoked",
    ]
    list_filter = ["environment"]
    list_select_related = ["business"]
    search_fields = ["business__name", "label", "hint"]
    readonly_fields = [
        "business",
        "environment",
        "hint",
        "label",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    exclude = ["digest"]
    actions = ["revoke"]

    @admin.display(description="Business", ordering="business__name")
    def business_column(self, key: ApiKey) -> SafeString | str:
        return cut(key.business.name, 30)

    @admin.display(description="Label", ordering="label")
    def label_column(self, key: ApiKey) -> SafeString | str:
        return cut(key.label, 24)

    @admin.display(description="Created", ordering="created_at")
    def created(self, key: ApiKey) -> SafeString | str:
        return when(key.created_at)

    @admin.display(description="Last used", ordering="last_used_at")
    def last_used(self, key: ApiKey) -> SafeString | str:
        return when(key.last_used_at)

    @admin.display(description="Revoked", ordering="revoked_at")
    def revoked(self, key: ApiKey) -> SafeString | str:
        return when(key.revoked_at)

    def has_add_permission(self, request):
        return False

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("accounts.revoke_apikey")

    @admin.action(description="Revoke selected keys", permissions=["revoke"])
    def revoke(self, request, queryset):
        active = [key for key in queryset if key.is_active]
        for key in active:
            services.revoke_api_key(key=key)
        record(request, active, "Revoked: calls with this key now answer 401.")
        if active:
            messages.success(
                request, f"{len(active)} key(s) revoked; calls with them now answer 401."
            )
        else:
            messages.info(request, "The selected keys were revoked already; nothing changed.")
