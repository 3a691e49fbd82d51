"""The project's own app: registers shared ORM lookups."""

from django.apps import AppConfig


class ConfigConfig(AppConfig):
    name = "config"

    def ready(self) -> None:
        from config import lookups  # noqa: F401 -- registers field__any
