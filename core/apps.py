"""What every app builds on: the API envelope and errors, db helpers, admin bases."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core import lookups  # noqa: F401 -- registers field__any
        from core.timestamps import use_c_timestamps

        connection_created.connect(use_c_timestamps, dispatch_uid="core.timestamps")
