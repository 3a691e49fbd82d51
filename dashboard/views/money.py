"""The wallet page (ledger, invoices) and the sandbox top-up."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.models import BillingModel, Environment
from billing.models import EntryKind, Invoice, LedgerEntry
from billing.services import BillingError, account_summary, sandbox_top_up
from dashboard.forms import SandboxTopUpForm
from dashboard.views.common import business_view, page_of


def _environment_param(request, default: str) -> str:
    value = request.GET.get("environment", "")
    return value if value in Environment.values else default


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
            "entries": page_of(request, entries),
            "invoices": page_of(request, invoices.order_by("-period"), param="invoices")
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
            wallet = entry.wallet  # as the top-up left it: what was owed is paid first
            paid = wallet.entries.filter(kind=EntryKind.OWED_PAYMENT, pk__gt=entry.pk).first()
            owed = f", after paying {-paid.amount} owed" if paid else ""
            messages.success(
                request, f"Added {entry.amount} to the sandbox wallet ({wallet.balance}{owed})."
            )
            return redirect(reverse("dashboard:wallet") + "?environment=sandbox")
    return _wallet_page(request, environment=Environment.SANDBOX, top_up_form=form, status=400)
