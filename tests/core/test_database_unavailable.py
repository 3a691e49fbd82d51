"""Which database errors are "the database is away" (503 SERVICE_UNAVAILABLE with Retry-After,
docs/contract.md §3, §16) and which are a failed statement (500):
core.middleware.database_unavailable.

Django hands the driver's error on wrapped in its own class, with the driver's as __cause__;
the errors here are wrapped by Django's own DatabaseErrorWrapper, as a cursor would.
The real outage, with pg_ctl, is tests/reliability/test_database_outage.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import psycopg
import pytest
from django.db import utils as db_utils
from django.test import Client

from billing.api import AccountViewSet
from core.middleware import ApiBodyLimitMiddleware, database_unavailable
from tests.helpers import assert_error


def wrapped_by_django(driver_error: psycopg.Error) -> db_utils.Error:
    """The error Django raises for `driver_error` (django.db.utils.DatabaseErrorWrapper)."""
    # A stand-in connection: the wrapper only reads its driver and flags errors_occurred.
    stand_in = SimpleNamespace(Database=psycopg, errors_occurred=False)
    try:
        with db_utils.DatabaseErrorWrapper(stand_in):
            raise driver_error
    except db_utils.Error as wrapped:
        assert wrapped.__cause__ is driver_error
        return wrapped
    raise AssertionError("not wrapped")


def refused() -> psycopg.OperationalError:
    # What psycopg raises when nothing listens: no SQLSTATE, the server never spoke.
    return psycopg.OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
        "Connection refused"
    )


UNAVAILABLE = {
    "connection refused": refused(),
    "server shutting down / backend terminated (57P01)": psycopg.errors.AdminShutdown(
        "terminating connection due to administrator command"
    ),
    "server starting up (57P03)": psycopg.errors.CannotConnectNow("the system is starting up"),
    "connection failure (08006)": psycopg.errors.ConnectionFailure("connection failure"),
    "connection already closed": psycopg.InterfaceError("the connection is closed"),
}
A_FAILED_STATEMENT = {
    "deadlock (40P01)": psycopg.errors.DeadlockDetected("deadlock detected"),
    "serialization failure (40001)": psycopg.errors.SerializationFailure("could not serialize"),
    "statement timeout (57014)": psycopg.errors.QueryCanceled("canceling statement"),
    "unique violation (23505)": psycopg.errors.UniqueViolation("duplicate key value"),
}


@pytest.mark.parametrize("error", UNAVAILABLE.values(), ids=UNAVAILABLE.keys())
def test_the_database_away_is_unavailable(error):
    assert database_unavailable(wrapped_by_django(error))
    # Raw too: the batch's COPY goes to psycopg's own cursor, past Django's wrapper.
    assert database_unavailable(error)


@pytest.mark.parametrize("error", A_FAILED_STATEMENT.values(), ids=A_FAILED_STATEMENT.keys())
def test_a_failed_statement_is_not_unavailable(error):
    assert not database_unavailable(wrapped_by_django(error))
    assert not database_unavailable(error)


def test_the_wrapper_gives_django_classes():
    deadlock = psycopg.errors.DeadlockDetected("deadlock detected")
    assert type(wrapped_by_django(refused())) is db_utils.OperationalError
    assert type(wrapped_by_django(deadlock)) is db_utils.OperationalError
    assert type(wrapped_by_django(psycopg.InterfaceError("x"))) is db_utils.InterfaceError


@pytest.mark.parametrize(
    "error",
    [
        ValueError("not a database error"),
        db_utils.OperationalError("no driver error behind it"),
        None,
    ],
)
def test_anything_else_is_not_unavailable(error):
    assert not database_unavailable(error)


def test_django_interface_error_is_unavailable():
    # Django's own "connection already closed", raised without a driver error behind it.
    assert database_unavailable(db_utils.InterfaceError("connection already closed"))


# --- through HTTP ---------------------------------------------------------------------------


def test_database_away_in_a_view_is_a_503_envelope(alice, api):
    with mock.patch.object(AccountViewSet, "list", side_effect=wrapped_by_django(refused())):
        response = api.get("/account", alice.sandbox_key)
    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert int(response["Retry-After"]) > 0


def test_deadlock_in_a_view_is_a_500_envelope(alice, api):
    deadlock = wrapped_by_django(psycopg.errors.DeadlockDetected("deadlock detected"))
    with mock.patch.object(AccountViewSet, "list", side_effect=deadlock):
        response = api.get("/account", alice.sandbox_key)
    assert_error(response, 500, "INTERNAL_ERROR")
    assert "Retry-After" not in response


def test_database_away_before_any_view_is_a_503_envelope(db):
    # Raised in a middleware, outside ApiErrorMiddleware: handler500 answers.
    client = Client(raise_request_exception=False)
    with mock.patch.object(
        ApiBodyLimitMiddleware, "__call__", side_effect=wrapped_by_django(refused())
    ):
        response = client.get("/api/v1/account")
    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert int(response["Retry-After"]) > 0


def test_database_away_on_a_dashboard_page_is_a_short_503_page(db):
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "0123456789abcdefghijklmnopqrstuv"
    with mock.patch(
        "django.contrib.sessions.backends.db.SessionStore.load",
        side_effect=wrapped_by_django(refused()),
    ):
        response = client.get("/")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response["Content-Type"].startswith("text/html")
    assert b"Traceback" not in response.content
    assert b"psycopg" not in response.content
