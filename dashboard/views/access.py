"""Signing up and in: the only dashboard pages open without a login."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _

from billing import onboarding as billing_onboarding
from dashboard.forms import LoginForm, SignupForm


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
        messages.success(request, _("Welcome! %(name)s is registered.") % {"name": business.name})
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
