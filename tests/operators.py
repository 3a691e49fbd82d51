"""Staff logins for the operator-permission tests: in a group, or with named permissions only."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client

groups_migration = importlib.import_module("accounts.migrations.0005_operator_groups")
# Later grants to the groups, each a migration of its own.
later_grants = [
    importlib.import_module("geo.migrations.0003_load_places_permission"),
    importlib.import_module("fleet.migrations.0002_seed_and_operators"),
    importlib.import_module("billing.migrations.0005_cod_ledger"),
    importlib.import_module("couriers.migrations.0002_operators_manage_couriers"),
]


def ensure_operator_groups() -> None:
    """The groups as the migration made them.

    A transactional test's flush empties auth_group (post_migrate puts back only the
    permissions), so a later test in the same run puts the groups back the migration's way.
    """
    if Group.objects.filter(name__in=groups_migration.GROUPS).count() < len(
        groups_migration.GROUPS
    ):
        editor = SimpleNamespace(connection=connection)
        groups_migration.create_groups(apps, editor)
        for migration in later_grants:
            migration.grant(apps, editor)


def permission(dotted: str) -> Permission:
    app_label, codename = dotted.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def staff_client(username: str, *, groups=(), perms=()) -> Client:
    """A logged-in staff user (never a superuser) with exactly these groups and permissions."""
    ensure_operator_groups()
    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    user.groups.add(*(Group.objects.get(name=name) for name in groups))
    user.user_permissions.add(*(permission(p) for p in perms))
    client = Client()
    client.force_login(user)
    return client
