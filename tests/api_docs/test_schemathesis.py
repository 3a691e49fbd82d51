"""Schemathesis against the served schema: no 5xx, answers match the schema, bad input is refused.

The schema is loaded from the app itself (GET /api/v1/schema/, which needs no key and no
database) and every generated case is sent through Django's WSGI handler in this process,
so it runs on the suite's throwaway PostgreSQL inside the test's transaction, with the
sandbox key of a fresh tenant and the demo region open for business.

Per operation: the schema's own examples, the coverage phase (boundary values and, in
negative mode, each constraint broken in turn) and bounded fuzzing, positive and negative.
"""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks as core_checks
from schemathesis.specs.openapi import checks as openapi_checks

# Hypothesis cases of every operation: left out of the fast loop (tests/README.md).
pytestmark = pytest.mark.slow

# A drop's phone and coordinates are typed in the schema so that generated clients type
# them, but a wrong one is not a request-level 400: it rejects that drop (INVALID_PHONE,
# INVALID_COORDINATES) inside a 200 (docs/contract.md §4).
PER_DROP_FIELDS = {"phone", "lat", "long"}
# The operations that take the bulk body (a quote decides it as bulk would).
BULK_BODIES = {"/api/v1/orders/bulk", "/api/v1/orders/quote"}


# The test sends the key with every case (test_api_conforms_to_its_schema), which undoes a
# mutation that removed or broke it: such a mutation made nothing wrong.
SENT_WITH_EVERY_CASE = {"authorization"}


def negative_data_rejection(ctx, response, case):
    """Schemathesis' check, except where only per-drop fields were made wrong."""
    if response.status_code == 200 and only_the_key_was_broken(case):
        return None  # the key sent with the case undid every mutation
    touched = fields_made_wrong(case)
    if (
        response.status_code == 200
        and case.operation.path in BULK_BODIES
        and touched
        and touched <= PER_DROP_FIELDS
    ):
        assert response.json()["data"]["counts"]["rejected"] >= 1, "a wrong value was accepted"
        return None
    return openapi_checks.negative_data_rejection(ctx, response, case)


def _mutations(case) -> tuple:
    data = case.meta.phase.data if case.meta else None
    return getattr(data, "mutations", ()) or ()


def _of_the_key(mutation) -> bool:
    return (
        mutation.parameter_location.value == "header"
        and (mutation.parameter or "").lower() in SENT_WITH_EVERY_CASE
    )


def only_the_key_was_broken(case) -> bool:
    mutations = _mutations(case)
    return bool(mutations) and all(_of_the_key(m) for m in mutations)


def fields_made_wrong(case) -> set[str]:
    """The names of the fields a negative case broke: by its mutations, or (coverage phase)
    by the location of the one it broke. A mutation of the key is left out: it was undone."""
    data = case.meta.phase.data if case.meta else None
    mutations = _mutations(case)
    if mutations:
        return {m.path[-1] if m.path else "" for m in mutations if not _of_the_key(m)}
    # A schema path: the last property named is the field, e.g. ".../properties/long/anyOf/0".
    location = getattr(data, "location", None) or ""
    named = re.findall(r"/properties/([^/]+)", location)
    return {named[-1]} if named else set()


CHECKS = [
    core_checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.response_headers_conformance,
    negative_data_rejection,
    openapi_checks.missing_required_header,
    openapi_checks.ignored_auth,
    openapi_checks.unsupported_method,
]

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20261123,
        "generation": {"max-examples": 25, "deterministic": True, "database": "none"},
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
        },
    }
)

# Loaded at collection, not through schemathesis.pytest.from_fixture: that loader sets
# pytest's private Node._nodeid, which pytest 9.2 no longer has.
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", WSGIHandler(), config=CONFIG)


@pytest.fixture
def in_test_transaction():
    """Keep the test's connection across requests, as Django's test client does.

    A real WSGI handler closes the connection when a request finishes, which would end
    the test's transaction (and with it the tenant it just made).
    """
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def sandbox_key(in_test_transaction, open_for_business, make_tenant, settings) -> str:
    # Generated webhook URLs name no real host: with private URLs allowed some are taken,
    # so creations answer 201 (and, past ten, 409) and not only 400.
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    return make_tenant().sandbox_key


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_api_conforms_to_its_schema(case, sandbox_key):
    case.call_and_validate(headers={"Authorization": f"Bearer {sandbox_key}"}, checks=CHECKS)
