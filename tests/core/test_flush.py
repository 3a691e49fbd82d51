"""A transactional test's flush (tests/conftest.py: _flush_only_what_a_test_wrote) leaves the
next test empty tables, and the content types and permissions whole."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from tests.conftest import KEPT_BY_FLUSH, _tables_with_rows
from tests.factories import batch, drop, group

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_test_writes_rows_in_many_tables(open_for_business, alice, api):
    assert api.bulk(batch(group(drop("FLUSH-1"))), alice.sandbox_key).status_code == 200
    tables = connection.introspection.django_table_names(only_existing=True)
    assert len(_tables_with_rows(connection, tables)) > 10


def test_the_next_finds_every_table_empty_but_the_kept_ones():
    tables = connection.introspection.django_table_names(only_existing=True)
    back = {"fleet_vehicletype", "auth_group", "auth_group_permissions"}
    assert set(_tables_with_rows(connection, tables)) <= {*KEPT_BY_FLUSH, *back}
    # The vehicle types and the operators' groups come back with the flush (tests/conftest.py).
    assert Group.objects.get(name="Operators").permissions.filter(codename="manage_courier")
    assert ContentType.objects.get_for_model(Permission).model == "permission"
    assert Permission.objects.filter(codename="add_business").exists()


@pytest.fixture(scope="module")
def vehicle_codes_before_any_test_fixture(django_db_blocker) -> set[str]:
    """What a module's fixture finds: it is built before the test's own fixtures (the
    vehicle_types seed among them), so right after the previous test's flush."""
    from fleet.models import VehicleType

    with django_db_blocker.unblock():
        return set(VehicleType.objects.values_list("code", flat=True))


def test_a_module_fixture_after_a_flush_finds_the_vehicle_types(
    vehicle_codes_before_any_test_fixture,
):
    assert "motorbike" in vehicle_codes_before_any_test_fixture
