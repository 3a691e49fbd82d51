"""The operator console: Django admin over every app's models, and the operators' commands."""

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Operator console"

    def ready(self) -> None:
        from django.contrib import admin

        from console.forms import RateLimitedAdminLoginForm

        # The operator console's login gets the same failed-login throttle as the dashboard's.
        admin.site.login_form = RateLimitedAdminLoginForm
