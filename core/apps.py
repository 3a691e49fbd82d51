"""What every app builds on: the API envelope and errors, db helpers, admin bases."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"

    def ready(self) -> None:
        from core import lookups  # noqa: F401 -- registers field__any
