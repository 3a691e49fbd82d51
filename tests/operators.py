"""Staff logins for the operator-permission tests: in a group, or with named permissions only."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Q
from django.test import Client

# The operators' groups as the migrations left them (app label, codename of each permission),
# read once the test database is made (tests/conftest.py): a transactional test's flush
# empties auth_group, and later tests put the groups back from this, not by running the
# migrations' functions again against today's models (a model that moved between apps since
# would not be found where an old migration looks for it).
MIGRATED_GROUPS: dict[str, list[tuple[str, str]]] = {}


def remember_operator_groups() -> None:
    MIGRATED_GROUPS.clear()
    for group in Group.objects.prefetch_related("permissions__content_type"):
        MIGRATED_GROUPS[group.name] = [
            (p.content_type.app_label, p.codename) for p in group.permissions.all()
        ]
    if not MIGRATED_GROUPS:
        raise AssertionError("the migrations made no operator group")


def ensure_operator_groups() -> None:
    """The groups as the migrations made them, back after a flush emptied them."""
    if Group.objects.filter(name__in=MIGRATED_GROUPS).count() == len(MIGRATED_GROUPS):
        return
    for name, granted in MIGRATED_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        which = Q()
        for app_label, codename in granted:
            which |= Q(content_type__app_label=app_label, codename=codename)
        group.permissions.set(Permission.objects.filter(which) if granted else [])


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
