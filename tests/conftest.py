"""Test-suite wiring: a throwaway PostgreSQL for the whole session, and shared fixtures."""

from __future__ import annotations

import pytest

from tests.pgcluster import PostgresCluster

pytest_plugins = ["tests.fixtures", "tests.redis_server", "tests.workers"]


@pytest.fixture(scope="session")
def postgres_cluster():
    cluster = PostgresCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(postgres_cluster):
    """Point Django at the throwaway cluster before pytest-django creates the test database."""
    from django.conf import settings

    settings.DATABASES["default"].update(
        ENGINE="django.db.backends.postgresql",
        HOST=postgres_cluster.host,
        PORT=str(postgres_cluster.port),
        USER=postgres_cluster.user,
        PASSWORD="",
        NAME="delivery",
    )
    settings.DATABASES["default"].setdefault("OPTIONS", {}).setdefault("server_side_binding", True)
