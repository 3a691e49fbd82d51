"""The wallet page (ledger, invoices, cash on delivery), the sandbox top-up, moving collected
cash into the wallet and the sandbox's simulated payout (docs/contract.md §18)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.models import BillingModel, Environment
from billing.cod import CodRefused, cod_summary, credit_wallet, simulate_payout
from billing.models import CodEntry, EntryKind, Invoice, LedgerEntry
from billing.services import BillingError, account_summary, sandbox_top_up
from core.formats import money
from dashboard.forms import CodCreditForm, SandboxTopUpForm
from dashboard.views.common import business_view, page_of


def _environment_param(request, default: str) -> str:
    value = request.GET.get("environment", "")
    return value if value in Environment.values else default


def _wallet_page(
    request,
    *,
    environment: str,
    top_up_form: SandboxTopUpForm | None = None,
    cod_form: CodCreditForm | None = None,
    status: int = 200,
):
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
            "top_up_form": top_up_form or SandboxTopUpForm(),
            **_cod_context(business, environment, cod_form),
        },
        status=status,
    )


# The COD entries the wallet page shows: the latest; the console has the whole ledger.
COD_ENTRIES_SHOWN = 20


def _cod_context(business, environment: str, form: CodCreditForm | None) -> dict:
    """The wallet page's cash on delivery: what is held, its latest entries, the move form."""
    summary = cod_summary(business=business, environment=environment)
    entries = CodEntry.objects.filter(
        account__business=business, account__environment=environment
    ).select_related("drop")
    return {
        "cod": {name: money(value) for name, value in summary.items()},
        "cod_owed": summary["owed"],
        "cod_entries": list(entries.order_by("-id")[:COD_ENTRIES_SHOWN]),
        "cod_form": form or CodCreditForm(initial={"environment": environment}),
    }


@business_view
def wallet(request):
    environment = _environment_param(request, Environment.SANDBOX)
    return _wallet_page(request, environment=environment)


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
            words = (
                _(
                    "Added %(amount)s to the sandbox wallet (%(balance)s, after paying "
                    "%(owed)s owed)."
                )
                if paid
                else _("Added %(amount)s to the sandbox wallet (%(balance)s).")
            )
            messages.success(
                request,
                words
                % {
                    "amount": entry.amount,
                    "balance": wallet.balance,
                    "owed": paid and -paid.amount,
                },
            )
            return redirect(reverse("dashboard:wallet") + "?environment=sandbox")
    return _wallet_page(request, environment=Environment.SANDBOX, top_up_form=form, status=400)


def _wallet_url(environment: str) -> str:
    return f"{reverse('dashboard:wallet')}?environment={environment}"


def _account_gate(business, environment: str) -> str | None:
    """Why the API would refuse this account a money call now (accounts/permissions.py)."""
    if business.is_suspended or not business.can_use_sandbox:
        return _("This account is suspended: nothing was moved.")
    if environment == Environment.LIVE and not business.is_live:
        return _("Live access is not enabled for this account: nothing was moved.")
    return None


@require_POST
@business_view
def cod_credit_wallet(request):
    """The dashboard's POST /account/cod/credit-wallet: the same service and account gates."""
    form = CodCreditForm(request.POST)
    if not form.is_valid():
        environment = _environment_param(request, Environment.SANDBOX)
        return _wallet_page(request, environment=environment, cod_form=form, status=400)
    environment, amount = form.cleaned_data["environment"], form.cleaned_data["amount"]
    if refusal := _account_gate(request.business, environment):
        messages.error(request, refusal)
        return redirect(_wallet_url(environment))
    try:
        credit_wallet(
            business=request.business, environment=environment, amount=amount, actor=request.user
        )
    except CodRefused as refused:
        form.add_error("amount", str(refused))
        return _wallet_page(request, environment=environment, cod_form=form, status=409)
    messages.success(
        request,
        _("Moved %(amount)s of collected cash into the %(environment)s wallet.")
        % {"amount": money(amount), "environment": Environment(environment).label.lower()},
    )
    return redirect(_wallet_url(environment))


@require_POST
@business_view
def sandbox_cod_payout(request):
    """Sandbox: pay out all the sandbox cash held, as our finance team does on live."""
    try:
        entry = simulate_payout(business=request.business, actor=request.user)
    except CodRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(
            request,
            _(
                "Simulated a payout of %(amount)s (reference %(reference)s): a %(event)s "
                "event was sent."
            )
            % {
                "amount": money(-entry.amount),
                "reference": entry.reference,
                "event": "cod.remitted",
            },
        )
    return redirect(_wallet_url(Environment.SANDBOX))
