"""The shared database cache (core/cache.py): add() and incr() that hold across processes."""

from __future__ import annotations

import importlib

import pytest
import time_machine
from django.conf import settings
from django.core.cache import cache, caches
from django.db import connection

from core.cache import DatabaseCache
from tests.fixtures import OPEN_HOURS
from tests.helpers import run_concurrently


@pytest.fixture
def frozen():
    with time_machine.travel(OPEN_HOURS, tick=False) as traveller:
        yield traveller


def test_the_default_cache_is_a_table_in_the_database(db):
    assert isinstance(caches["default"], DatabaseCache)
    assert settings.CACHES["default"]["LOCATION"] == "django_cache"
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


def test_add_only_takes_a_free_or_expired_key(db, frozen):
    assert cache.add("k", 1, timeout=10) is True
    assert cache.add("k", 2, timeout=10) is False
    assert cache.get("k") == 1
    frozen.shift(10)
    assert cache.add("k", 3, timeout=10) is True
    assert cache.get("k") == 3


def test_incr_keeps_the_expiry(db, frozen):
    cache.add("k", 0, timeout=60)
    frozen.shift(30)
    assert cache.incr("k") == 1  # the stock incr() would restart the timeout here
    frozen.shift(30)
    with pytest.raises(ValueError):
        cache.incr("k")


def test_incr_of_a_missing_key_is_a_value_error(db):
    with pytest.raises(ValueError):
        cache.incr("nothing-here")


def test_add_sweeps_expired_entries(db, frozen):
    cache.add("old", 1, timeout=5)
    frozen.shift(5)
    cache.add("new", 1, timeout=5)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM django_cache")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_increments_all_land():
    cache.add("hits", 0, timeout=300)
    threads, each = 20, 25

    def work(_api, _i: int) -> None:
        for _ in range(each):
            cache.incr("hits")

    run_concurrently(threads, work)

    assert cache.get("hits") == threads * each
    cache.delete("hits")  # the cache table outlives transactional tests
