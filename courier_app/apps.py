from django.apps import AppConfig


class CourierAppConfig(AppConfig):
    name = "courier_app"
    label = "courier_app"
