"""Operator console for businesses: the approval queue, onboarding moves, wallet credits."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from accounts import services
from accounts.models import ApiKey, BillingModel, Business, Environment, Membership, Stage
from billing import onboarding
from billing.models import EntryKind
from billing.services import BillingError, post_wallet_entry
from core.admin import GatedActionsAdmin


class ApproveForm(forms.Form):
    billing_model = forms.ChoiceField(choices=BillingModel.choices)
    base_fee = forms.DecimalField(
        min_value=0, max_digits=12, decimal_places=2, initial=Decimal("2.00")
    )
    per_km_fee = forms.DecimalField(
        min_value=0, max_digits=12, decimal_places=2, initial=Decimal("0.50")
    )
    included_km = forms.DecimalField(
        min_value=0, max_digits=8, decimal_places=2, initial=Decimal("0")
    )
    net_days = forms.IntegerField(
        min_value=0, max_value=365, initial=30, help_text="Invoice credit terms."
    )


class WalletEntryForm(forms.Form):
    environment = forms.ChoiceField(choices=Environment.choices)
    kind = forms.ChoiceField(
        choices=[(EntryKind.TOP_UP, "Top-up (credit)"), (EntryKind.ADJUSTMENT, "Adjustment (±)")]
    )
    amount = forms.DecimalField(max_digits=12, decimal_places=2)
    note = forms.CharField(max_length=200)


# Part of approving: without accounts.approve_business they are read-only on the business page.
PRICING_FIELDS = ["billing_model", "pricing_plan", "net_days"]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ["hint", "environment", "label", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False  # keys are made by the business in its dashboard, shown only to it


@admin.register(Business)
class BusinessAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "email",
        "stage",
        "billing_model",
        "pricing_plan",
        "live_requested_at",
        "created_at",
    ]
    list_filter = ["stage", "billing_model"]
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
        "use_case",
        "expected_monthly_volume",
        *readonly_fields[1:],
    ]
    inlines = [MembershipInline, ApiKeyInline]
    change_form_template = "admin/accounts/business/change_form.html"

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

    # Each operator move is its own permission (DESIGN.md §16), not is_staff or
    # change_business: the buttons show only with it, and its URL answers 403 without it.
    def has_approve_permission(self, request) -> bool:
        return request.user.has_perm("accounts.approve_business")

    def has_enable_live_permission(self, request) -> bool:
        return request.user.has_perm("accounts.enable_live_business")

    def has_suspend_permission(self, request) -> bool:
        return request.user.has_perm("accounts.suspend_business")

    def has_adjust_wallet_permission(self, request) -> bool:
        return request.user.has_perm("billing.adjust_wallet")

    def _business(self, request, pk, permission: str) -> Business:
        if not getattr(self, f"has_{permission}_permission")(request):
            raise PermissionDenied
        return get_object_or_404(Business, pk=pk)

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if not self.has_approve_permission(request):
            readonly += PRICING_FIELDS  # pricing is set by whoever may approve
        return readonly

    def _form_page(self, request, business, form, title: str, submit: str):
        """The page of one operator move that needs a form (approve, wallet entry)."""
        return TemplateResponse(
            request,
            "admin/accounts/business/action_form.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "original": business,
                "form": form,
                "title": title,
                "submit": submit,
            },
        )

    def _back(self, business):
        return redirect(reverse("admin:accounts_business_change", args=[business.pk]))

    def approve_view(self, request, pk):
        business = self._business(request, pk, "approve")
        form = ApproveForm(request.POST or None, initial={"billing_model": business.billing_model})
        if request.method == "POST" and form.is_valid():
            try:
                onboarding.approve(business=business, actor=request.user, **form.cleaned_data)
            except services.OnboardingError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, f"{business} approved; the sandbox wallet was credited.")
                return self._back(business)
        return self._form_page(request, business, form, f"Approve {business}", "Approve")

    def wallet_view(self, request, pk):
        business = self._business(request, pk, "adjust_wallet")
        form = WalletEntryForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                post_wallet_entry(business=business, actor=request.user, **form.cleaned_data)
            except BillingError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, "The ledger entry was recorded.")
                return self._back(business)
        return self._form_page(
            request, business, form, f"Wallet entry for {business}", "Record entry"
        )

    # move -> (service, the permission it needs)
    MOVES = {
        "reject": (services.reject, "approve"),
        "enable_live": (services.enable_live, "enable_live"),
        "suspend": (services.suspend, "suspend"),
        "reactivate": (services.reactivate, "suspend"),
    }

    def move_view(self, request, pk, move):
        if move not in self.MOVES:
            raise Http404(f"No onboarding move {move!r}.")
        service, permission = self.MOVES[move]
        business = self._business(request, pk, permission)
        if request.method != "POST":
            return self._back(business)
        try:
            service(business=business)
        except services.OnboardingError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{business}: {move.replace('_', ' ')} done.")
        return self._back(business)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "Stage": Stage,
            "can_approve": self.has_approve_permission(request),
            "can_enable_live": self.has_enable_live_permission(request),
            "can_suspend": self.has_suspend_permission(request),
            "can_adjust_wallet": self.has_adjust_wallet_permission(request),
        }
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(ApiKey)
class ApiKeyAdmin(GatedActionsAdmin):
    list_display = [
        "hint",
        "business",
        "environment",
        "label",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["environment"]
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

    def has_add_permission(self, request):
        return False

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("accounts.revoke_apikey")

    @admin.action(description="Revoke selected keys", permissions=["revoke"])
    def revoke(self, request, queryset):
        for key in queryset:
            services.revoke_api_key(key=key)
