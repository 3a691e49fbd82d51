"""Recipient notifications: email and SMS to the people a business delivers to."""

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"
