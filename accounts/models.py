"""Businesses, their dashboard users, onboarding stage and API keys."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Environment(models.TextChoices):
    LIVE = "live", _("Live")
    SANDBOX = "sandbox", _("Sandbox")


class Stage(models.TextChoices):
    REGISTERED = "REGISTERED", _("Registered")
    ACCESS_REQUESTED = "ACCESS_REQUESTED", _("Access requested")
    APPROVED = "APPROVED", _("Approved")
    LIVE = "LIVE", _("Live")
    REJECTED = "REJECTED", _("Rejected")
    SUSPENDED = "SUSPENDED", _("Suspended")


class BillingModel(models.TextChoices):
    WALLET = "wallet", _("Prepaid wallet")
    INVOICED = "invoiced", _("Monthly invoice")


class Business(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    email = models.EmailField()
    stage = models.CharField(max_length=20, choices=Stage.choices, default=Stage.REGISTERED)
    # The stage to return to when a suspension is lifted.
    stage_before_suspension = models.CharField(max_length=20, choices=Stage.choices, blank=True)
    billing_model = models.CharField(
        max_length=10, choices=BillingModel.choices, default=BillingModel.WALLET
    )
    pricing_plan = models.ForeignKey(
        "billing.PricingPlan", null=True, blank=True, on_delete=models.PROTECT
    )
    net_days = models.PositiveIntegerField(default=30, help_text="Credit terms of invoices.")
    # wallet.balance_low fires when a debit takes a wallet below this (none by default).
    low_balance_threshold = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True
    )
    use_case = models.TextField(blank=True)
    expected_monthly_volume = models.PositiveIntegerField(null=True, blank=True)
    access_requested_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    live_requested_at = models.DateTimeField(null=True, blank=True)
    live_enabled_at = models.DateTimeField(null=True, blank=True)
    # The language of pages and messages with no better clue (docs/contract.md §26): a
    # recipient's when neither the drop nor their browser says; the dashboard's likewise.
    recipient_language = models.CharField(
        max_length=5, choices=settings.LANGUAGES, default="km", db_default="km"
    )
    dashboard_language = models.CharField(
        max_length=5, choices=settings.LANGUAGES, default="en", db_default="en"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "businesses"
        ordering = ["name"]
        # Operator moves in admin, each its own permission (docs/operator.md, "Permissions").
        permissions = [
            ("approve_business", "Can approve, reject and price a business"),
            ("enable_live_business", "Can switch a business live"),
            ("suspend_business", "Can suspend and reactivate a business"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_suspended(self) -> bool:
        return self.stage == Stage.SUSPENDED

    @property
    def can_use_sandbox(self) -> bool:
        return self.stage in (Stage.APPROVED, Stage.LIVE)

    @property
    def is_live(self) -> bool:
        return self.stage == Stage.LIVE


class Membership(models.Model):
    """A dashboard login of a business (one business per user)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership"
    )
    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="memberships")
    is_owner = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.user} @ {self.business}"


class ApiKey(models.Model):
    """An API key. Only its SHA-256 digest is stored; the key itself is shown once."""

    business = models.ForeignKey(Business, on_delete=models.CASCADE, related_name="api_keys")
    environment = models.CharField(max_length=10, choices=Environment.choices)
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=40)
    label = models.CharField(max_length=100, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["business", "environment"])]
        permissions = [("revoke_apikey", "Can revoke API keys")]

    def __str__(self) -> str:
        return f"{self.hint} ({self.label or self.environment})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
