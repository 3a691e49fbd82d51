from django.apps import AppConfig


class GeoConfig(AppConfig):
    name = "geo"
    default_auto_field = "django.db.models.BigAutoField"
