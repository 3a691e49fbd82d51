from django.apps import AppConfig


class CouriersConfig(AppConfig):
    name = "couriers"
    default_auto_field = "django.db.models.BigAutoField"
