"""Forms of the operator console itself."""

from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm

from accounts.login import RateLimitedLoginMixin


class RateLimitedAdminLoginForm(RateLimitedLoginMixin, AdminAuthenticationForm):
    """The dashboard's failed-login throttle, for the operator console's login."""
