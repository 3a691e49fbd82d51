"""geo.load_places: loading places from a CSV file (console/places.py), given to Operators.

The groups' first lists are frozen in accounts/migrations/0005_operator_groups.py; who may
do something new is granted here, by a migration of its own.
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {"Operators": ["load_places"]}


def grant(apps, schema_editor):
    using = schema_editor.connection.alias
    # Permissions are made in post_migrate, after every migration of this run: make this
    # one now, so the group can be given it.
    create_permissions(global_apps.get_app_config("geo"), apps=apps, verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        group = Group.objects.using(using).filter(name=name).first()
        if group is None:  # renamed or deleted by the operators: theirs to grant
            continue
        found = list(
            Permission.objects.using(using).filter(
                content_type__app_label="geo", codename__in=codenames
            )
        )
        if len(found) != len(codenames):  # a typo here must fail, not quietly grant less
            raise LookupError(f"geo has not every permission of {codenames}")
        group.permissions.add(*found)


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    using = schema_editor.connection.alias
    for name, codenames in GRANTS.items():
        for group in Group.objects.using(using).filter(name=name):
            group.permissions.remove(
                *Permission.objects.using(using).filter(
                    content_type__app_label="geo", codename__in=codenames
                )
            )


class Migration(migrations.Migration):
    dependencies = [
        ("geo", "0002_geocode_answers_expire"),
        ("accounts", "0005_operator_groups"),  # the Operators group exists
    ]

    operations = [
        migrations.AlterModelOptions(
            name="place",
            options={
                "ordering": ["name"],
                "permissions": [("load_places", "Can load places from a CSV file")],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
