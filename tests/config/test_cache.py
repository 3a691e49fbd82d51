"""Django's cache: a table in the main database by default, as CACHE_URL's default says.

Nothing counts in it any more (rate limits and the login throttle use core/counters.py), but
it stays shared by every process, so anything cached later is too.
"""

from __future__ import annotations

import importlib

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.db import DatabaseCache
from django.db import connection


def test_the_default_cache_is_djangos_own_table_in_the_database(db):
    assert type(caches["default"]) is DatabaseCache
    assert settings.CACHES["default"]["LOCATION"] == "django_cache"
    assert "OPTIONS" not in settings.CACHES["default"]  # no MAX_ENTRIES tweak: nothing to keep
    assert "django_cache" in connection.introspection.table_names()


def test_migrate_creates_the_cache_table(db):
    migration = importlib.import_module("accounts.migrations.0003_cache_table")
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE django_cache")  # rolled back with the test's transaction
    assert "django_cache" not in connection.introspection.table_names()

    with connection.schema_editor() as schema_editor:
        migration.create_cache_table(apps=None, schema_editor=schema_editor)

    assert "django_cache" in connection.introspection.table_names()
    assert cache.add("k", 1) is True
