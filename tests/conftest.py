"""Test-suite wiring: a throwaway PostgreSQL for the whole session, and shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pgcluster import PostgresCluster

pytest_plugins = ["tests.fixtures", "tests.redis_server", "tests.workers"]


def pytest_configure(config):
    """A distributed run's screenshots (tests/browser/) start from an empty folder, cleared
    here by the process that starts the workers, before any of them takes one."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    import shutil

    shutil.rmtree(_screenshots(), ignore_errors=True)


# The suite's longest files, longest first (each over ~20 s of one worker in a full run, by
# the time each file took there). `make test` keeps the collection's order when it hands
# out files (`--no-loadscope-reorder`: pytest-xdist would otherwise start with the files
# that hold the most tests, and leave the long one-test files to the end, one worker alone
# on them), so the short files fill in around these.
LONGEST_FIRST = (
    "tests/reliability/test_ha_short.py",
    "tests/api_docs/test_schemathesis.py",
    "tests/browser/test_dashboard_pages.py",
    "tests/events/test_worker_deliveries.py",
    "tests/reliability/test_cluster_short.py",
    "tests/devserver/test_make_run.py",
    "tests/tracking/test_listing_plans.py",
    "tests/browser/test_courier_app.py",
    "tests/reliability/test_replica_reads.py",
    "tests/browser/test_admin_console.py",
    "tests/browser/test_tracking_page.py",
    "tests/tracking/test_tracking_tokens.py",
    "tests/browser/test_dashboard_words.py",
    "tests/events/test_delivery.py",
    "tests/orders/test_bounded_sizes.py",
    "tests/browser/test_journey.py",
    "tests/events/test_webhook_fairness.py",
    "tests/browser/test_accessibility.py",
    "tests/config/test_production_settings.py",
    "tests/tracking/test_listing_concurrency.py",
    "tests/console/test_onboarding_permissions.py",
    "tests/reliability/test_worker_database_outage.py",
    "tests/orders/test_bulk_validation.py",
    "tests/reliability/test_database_outage.py",
)


# The main paths of the API and the pages, which `make test` runs on the embedded default
# (SQLite, as `make run` serves) as well as on PostgreSQL: bulk with every drop field,
# quotes, tracking, listing, edits, cancel, returns, COD, the courier API and app, the
# recipient's page, the dashboard's order pages and MCP. A test in them that holds on
# PostgreSQL only (a statement count, COPY, row locks between threads) is marked
# `postgresql` and skipped there.
EMBEDDED = (
    "tests/orders/test_batches_and_tracking.py",
    "tests/orders/test_windows.py",
    "tests/orders/test_parcels.py",
    "tests/orders/test_cod_rules.py",
    "tests/orders/test_quotes.py",
    "tests/tracking/test_sample_batch.py",
    "tests/tracking/test_every_field_everywhere.py",
    "tests/tracking/test_windows.py",
    "tests/tracking/test_parcels_and_cod.py",
    "tests/tracking/test_eta.py",
    "tests/tracking/test_cancel.py",
    "tests/tracking/test_edits.py",
    "tests/tracking/test_returns.py",
    "tests/tracking/test_listing.py",
    "tests/tracking/test_page.py",
    "tests/tracking/test_recipient_api.py",
    "tests/tracking/test_scenarios.py",
    "tests/billing/test_cod_collection.py",
    "tests/couriers/test_courier_api.py",
    "tests/couriers/test_pages.py",
    "tests/couriers/test_offer_pages.py",
    "tests/couriers/test_locations.py",
    "tests/couriers/test_runs.py",
    "tests/couriers/test_route_windows.py",
    "tests/dispatch/test_planner.py",
    "tests/dispatch/test_run_eta.py",
    "tests/dashboard/test_new_delivery.py",
    "tests/dashboard/test_order_page.py",
    "tests/dashboard/test_orders_page.py",
    "tests/dashboard/test_order_edit.py",
    "tests/dashboard/test_order_cancel_and_proof.py",
    "tests/agents/test_mcp_server.py",
    "tests/config/test_sqlite_default.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first, in the order above; the rest as collected (a stable sort:
    every xdist worker collects the same order, as it must). The embedded default's files
    are marked `embedded`; on SQLite, the tests marked `postgresql` are skipped."""
    _name_each_case_by_its_operation(items)
    embedded = set(EMBEDDED)
    root = Path(__file__).resolve().parent.parent
    if missing := [path for path in EMBEDDED if not (root / path).exists()]:
        raise pytest.UsageError(f"EMBEDDED names files that are gone (moved?): {missing}")
    on_postgresql_only = pytest.mark.skip(reason="holds on PostgreSQL only")
    for item in items:
        if item.nodeid.split("::")[0] in embedded:
            item.add_marker(pytest.mark.embedded)
        if ON_SQLITE and item.get_closest_marker("postgresql"):
            item.add_marker(on_postgresql_only)
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def _name_each_case_by_its_operation(items) -> None:
    """Schemathesis's `schema.parametrize()` makes one test per operation, each named after
    it (`test_api_conforms_to_its_schema[GET /api/v1/account]`) but all with the function's
    id. pytest-xdist tells tests apart by id, and ran one of the 20: each gets its name as
    its id, as a parametrized test has."""
    for item in items:
        function = item.nodeid.rpartition("::")[2]
        if item.name != function and item.name.startswith(f"{function}["):
            item._id = item.parent.id.child(item.name)  # as pytest names a test by default
    ids = [item.nodeid for item in items]
    if len(set(ids)) != len(ids):  # were pytest to keep its id elsewhere one day
        raise pytest.UsageError("tests share an id: a distributed run would run one of them")


def pytest_terminal_summary(terminalreporter, config):
    if not config.getoption("numprocesses", None) or hasattr(config, "workerinput"):
        return
    taken = list(_screenshots().glob("*.png"))
    if taken:
        terminalreporter.write_sep("-", "browser screenshots")
        terminalreporter.write_line(f"{len(taken)} screenshots in {_screenshots()}")


def _screenshots():
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"


# Kept by a transactional test's flush: Django's post_migrate (contenttypes and auth are
# its only receivers) put every row of them back after each flush, and no test writes them.
KEPT_BY_FLUSH = ("django_content_type", "auth_permission")


@pytest.fixture(scope="session", autouse=True)
def _flush_only_what_a_test_wrote():
    """A transactional test (live_server, worker processes) ends with Django's flush, which
    truncated every table (~90) and then made the content types and permissions again:
    ~0.6 s a test, however little it wrote. It now truncates only the tables that hold rows
    (CASCADE takes any that refer to them) and keeps KEPT_BY_FLUSH, whose rows post_migrate
    would only make again: ~0.15 s. Each test still starts on empty tables (a test of this
    file's own holds it: tests/core/test_flush.py)."""
    from django.core.management.commands import flush

    original = flush.sql_flush

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        if connection.vendor != "postgresql":
            return original(style, connection, reset_sequences, allow_cascade)
        tables = [
            table
            for table in connection.introspection.django_table_names(
                only_existing=True, include_views=False
            )
            if table not in KEPT_BY_FLUSH
        ]
        written = _tables_with_rows(connection, tables)
        return connection.ops.sql_flush(
            style, written, reset_sequences=reset_sequences, allow_cascade=True
        )

    def emit_post_migrate_signal(verbosity, interactive, db, **kwargs):
        """Only the content types' and permissions' receivers listen, and their rows stay.
        The vehicle types the fleet migration seeded come back here, at once, for whatever
        runs next: a test, or a module's fixture, built before any test's own fixtures; so
        do the operators' groups, as the migrations made them (tests/operators.py)."""
        from django.db import connections

        from tests.operators import ensure_operator_groups

        seed_vehicle_types(connections[db])
        ensure_operator_groups()

    emit = flush.emit_post_migrate_signal
    flush.sql_flush, flush.emit_post_migrate_signal = sql_flush, emit_post_migrate_signal
    yield
    flush.sql_flush, flush.emit_post_migrate_signal = original, emit


def _tables_with_rows(connection, tables: list[str]) -> list[str]:
    if not tables:
        return []
    quote = connection.ops.quote_name
    probes = " UNION ALL ".join(
        f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables
    )
    with connection.cursor() as cursor:
        cursor.execute(probes, tables)
        return [table for (table,) in cursor.fetchall()]


# `TEST_DATABASE=sqlite pytest -m embedded` runs the embedded default's tests on SQLite, as
# `make run` serves (`make test` runs them on both): a feature that works on PostgreSQL only
# fails there.
ON_SQLITE = os.environ.get("TEST_DATABASE", "postgresql") == "sqlite"


# What pytest-django reads to decide that a test needs the database.
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}
)


@pytest.fixture(scope="session", autouse=True)
def _operator_groups_as_migrated(request, django_db_setup, django_db_blocker):
    """The operators' groups as the migrations made them, read once the test database is
    made: tests/operators.ensure_operator_groups puts them back after a flush. A run of
    pure tests only (tests/dispatch/test_solver.py alone) makes no database: nothing to read."""
    from tests.operators import remember_operator_groups

    if not any(
        item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames)
        for item in request.session.items
    ):
        return
    with django_db_blocker.unblock():
        remember_operator_groups()


@pytest.fixture(scope="session")
def postgres_cluster():
    if ON_SQLITE:
        pytest.skip("runs on PostgreSQL only (TEST_DATABASE=sqlite)")
    cluster = PostgresCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, tmp_path_factory):
    """Point Django at the throwaway cluster before pytest-django creates the test database
    (or, on the embedded default, at a SQLite file of the run's own: a file, not memory, so
    that worker processes and server threads share it as under `make run`)."""
    from django.conf import settings

    if ON_SQLITE:
        database = tmp_path_factory.mktemp("sqlite") / "delivery.sqlite3"
        settings.DATABASES["default"]["TEST"]["NAME"] = str(database)
        return
    postgres_cluster = request.getfixturevalue("postgres_cluster")
    settings.DATABASES["default"].update(
        ENGINE="django.db.backends.postgresql",
        HOST=postgres_cluster.host,
        PORT=str(postgres_cluster.port),
        USER=postgres_cluster.user,
        PASSWORD="",
        NAME="delivery",
    )
    settings.DATABASES["default"].setdefault("OPTIONS", {}).setdefault("server_side_binding", True)


@pytest.fixture(scope="session")
def collected_static(request, tmp_path_factory):
    """collectstatic once for the whole run, into a STATIC_ROOT of its own: the tests that
    serve pages under gunicorn with DEBUG off (as production does) all read the same output.
    Every file hashed and gzipped (no brotli) costs ~3 s of CPU on this machine; under
    `make test`'s two processes the first that needs it collects and the other waits for
    it (a lock in the run's shared temporary folder), instead of doing it again."""
    import fcntl

    if not hasattr(request.config, "workerinput"):  # one process: nobody to share with
        return _collect_static(tmp_path_factory.mktemp("static"))
    shared = tmp_path_factory.getbasetemp().parent  # the same for every process of the run
    root, done = shared / "static", shared / "static.collected"
    with (shared / "static.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():  # else the other process collected it
            _collect_static(root)
            done.touch()
    return root


def _collect_static(root):
    import os
    import secrets
    import subprocess
    import sys
    from pathlib import Path

    from django.conf import settings

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root.parent),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "STATIC_ROOT": str(root),
        # gzip only: brotli was ~90 % of the collection's CPU (core/static.py); whitenoise
        # serves the .gz copies alike, and tests/config/test_static_storage.py holds both.
        "STATIC_BROTLI": "false",
    }
    subprocess.run(
        [str(Path(sys.executable).parent / "python"), "manage.py", "collectstatic", "--noinput"],
        env=env,
        cwd=settings.BASE_DIR,
        check=True,
        timeout=300,
        stdout=subprocess.DEVNULL,
    )
    return root


def seed_vehicle_types(connection) -> None:
    """The contract's vehicle types (docs/contract.md §18): fleet's migration seeds them, a
    batch needs its groups' vehicle (motorbike by default), and a transactional test's flush
    empties their table; the suite's flush runs the migration's own seed again after it
    (one INSERT … ON CONFLICT DO NOTHING). Every other test rolls back what it changed."""
    import importlib
    from types import SimpleNamespace

    from django.apps import apps

    seeding = importlib.import_module("fleet.migrations.0002_seed_and_operators")
    seeding.seed(apps, SimpleNamespace(connection=connection))
