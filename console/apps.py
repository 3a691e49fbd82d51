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
        admin.site.site_header = "Delivery Orders: operators' console"
        admin.site.site_title = "Operators' console"
        # Django's model sidebar takes 300 px of every page and repeats the index, which is
        # one click away (Home): without it a list and its filters fit a 1280 px window.
        admin.site.enable_nav_sidebar = False
